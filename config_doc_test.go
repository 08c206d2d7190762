package weir

import (
	"context"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
)

// configurationDoc is the reference of every option.
const configurationDoc = "docs/configuration.md"

// docRow is one option's row in the reference (or in README's table of options).
type docRow struct {
	option string
	// def is the default as the row's second cell gives it, up to what explains it ("`0s`"
	// of "`0s`: none" and of "`0s` (none)").
	def string
	// bad and message are the row's bad example value and the part of New's error that
	// names what is wrong; empty when any value is taken.
	bad, message string
}

// configFields names every field of Config as section.field, by the JSON names Traefik
// matches them by.
func configFields() []string {
	var names []string
	ct := reflect.TypeOf(Config{})
	for i := 0; i < ct.NumField(); i++ {
		sec := ct.Field(i)
		secName := jsonName(sec)
		if sec.Type.Kind() != reflect.Struct {
			// A top-level option of its own, such as pacing.
			names = append(names, secName)
			continue
		}
		for j := 0; j < sec.Type.NumField(); j++ {
			names = append(names, secName+"."+jsonName(sec.Type.Field(j)))
		}
	}
	return names
}

// jsonName is the name Traefik decodes f from: its JSON name.
func jsonName(f reflect.StructField) string {
	return strings.Split(f.Tag.Get("json"), ",")[0]
}

// readDocRows reads the rows of the reference's table of options.
func readDocRows(t *testing.T) map[string]docRow {
	t.Helper()
	return readRows(t, configurationDoc)
}

// readRows reads the table rows of the Markdown file at path whose first cell is code.
func readRows(t *testing.T, path string) map[string]docRow {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	rows := map[string]docRow{}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		r := docRow{option: strings.Trim(cells[0], "`")}
		if len(cells) > 1 {
			r.def = cells[1]
			if i := strings.IndexAny(r.def, ":("); i > 0 {
				r.def = strings.TrimSpace(r.def[:i])
			}
		}
		last := cells[len(cells)-1]
		if i := strings.Index(last, "`: `"); strings.HasPrefix(last, "`") && i > 0 {
			r.bad = last[1:i]
			r.message = strings.TrimSuffix(last[i+len("`: `"):], "`")
		}
		rows[r.option] = r
	}
	return rows
}

// setOption sets the field of c that option (section.field) names to value: a string, or a
// list of that one value.
func setOption(c *Config, option, value string) bool {
	parts := strings.SplitN(option, ".", 2)
	sec := reflect.ValueOf(c).Elem()
	for i := 0; i < sec.NumField(); i++ {
		if jsonName(sec.Type().Field(i)) != parts[0] {
			continue
		}
		fields := sec.Field(i)
		if len(parts) == 1 {
			// A top-level option of its own, such as pacing.
			return setValue(fields, value)
		}
		for j := 0; j < fields.NumField(); j++ {
			if jsonName(fields.Type().Field(j)) == parts[1] {
				return setValue(fields.Field(j), value)
			}
		}
	}
	return false
}

// setValue sets f, a string or a list of strings, to value.
func setValue(f reflect.Value, value string) bool {
	if f.Kind() == reflect.String {
		f.SetString(value)
	} else {
		f.Set(reflect.ValueOf([]string{value}))
	}
	return true
}

// TestConfigurationReference: docs/configuration.md has a row for every field of Config and
// none for a field Config lacks, and each row's bad example makes New fail with the field,
// the value and the row's message. A new option fails this test until its row is written.
func TestConfigurationReference(t *testing.T) {
	rows := readDocRows(t)
	fields := configFields()
	known := map[string]bool{}
	for _, f := range fields {
		known[f] = true
		if _, ok := rows[f]; !ok {
			t.Errorf("%s: no row for Config's %s: add one (default, unit, what it sets, YAML, TOML, label, a bad value)", configurationDoc, f)
		}
	}
	for option := range rows {
		if !known[option] {
			t.Errorf("%s: a row for %s, which Config lacks", configurationDoc, option)
		}
	}
	for _, f := range fields {
		r, ok := rows[f]
		if !ok || r.bad == "" {
			continue
		}
		t.Run(f, func(t *testing.T) {
			c := CreateConfig()
			if !setOption(c, f, r.bad) {
				t.Fatalf("no field for %s", f)
			}
			_, err := New(context.Background(), http.NotFoundHandler(), c, "doc-"+f)
			if err == nil {
				t.Fatalf("New accepted %s %q, which %s gives as a bad value", f, r.bad, configurationDoc)
			}
			for _, want := range []string{f, r.bad, r.message} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("New with %s %q: error %q lacks %q", f, r.bad, err, want)
				}
			}
		})
	}
}

// TestReadmeOptionsAgree: README's table of options, which speaks to operators beside the
// reference, has a row for every field of Config, with the reference's default.
func TestReadmeOptionsAgree(t *testing.T) {
	ref := readDocRows(t)
	readme := readRows(t, "README.md")
	for _, f := range configFields() {
		r, ok := readme[f]
		if !ok {
			t.Errorf("README.md: no row for %s", f)
			continue
		}
		if r.def != ref[f].def {
			t.Errorf("%s: README.md's default %q, %s's %q", f, r.def, configurationDoc, ref[f].def)
		}
	}
}
