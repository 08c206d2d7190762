package weir

import (
	"context"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/weirproxy/weir/internal/fixture"
)

// configurationDoc is the reference of every option.
const configurationDoc = "docs/configuration.md"

// readme is the front page: it links the reference rather than repeating it.
const readme = "README.md"

// operationsDoc holds the table of refusals, under refusalsHeading.
const operationsDoc = "docs/operations.md"

// docRow is one option's row in the reference (or in a table of README's).
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
		if secName == "-" {
			// Unknown: the options Weir does not know, which no row documents.
			continue
		}
		if sec.Type.Kind() != reflect.Struct {
			// A top-level option of its own, such as pacing.
			names = append(names, secName)
			continue
		}
		for j := 0; j < sec.Type.NumField(); j++ {
			if name := jsonName(sec.Type.Field(j)); name != "-" {
				names = append(names, secName+"."+name)
			}
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

// readFile is the text of the file at path, from the repository's root.
func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return string(data)
}

// TestReadmeLinksReference: README, a front page, links the reference of every option.
func TestReadmeLinksReference(t *testing.T) {
	if !strings.Contains(readFile(t, readme), "](docs/configuration.md)") {
		t.Errorf("%s: no link to %s", readme, configurationDoc)
	}
}

// codeSpan is a Markdown code span on one line.
var codeSpan = regexp.MustCompile("`([^`\n]+)`")

// labelOption is the option a Weir label names, after the plugin's name.
var labelOption = regexp.MustCompile(`plugin\.weir\.([A-Za-z]+(?:\.[A-Za-z]+)?)=`)

// statedDefault is an option README gives a default for: `section.field`, default `value`.
var statedDefault = regexp.MustCompile("`([A-Za-z]+\\.[A-Za-z]+)`[,:]? default `([^`]+)`")

// optionOf is the option a code span names, when its first part is one of Weir's sections:
// `cache.maxSize`, `breaker.scope: engine`, `…weir.cache.maxSize=64MiB`; "" for any other
// span (a file name, Traefik's own options).
func optionOf(span string, sections map[string]bool) string {
	if i := strings.Index(span, "plugin.weir."); i >= 0 {
		span = span[i+len("plugin.weir."):]
	}
	span = strings.TrimPrefix(span, "…weir.")
	if i := strings.IndexAny(span, "=: ("); i >= 0 {
		span = span[:i]
	}
	sec, _, ok := strings.Cut(span, ".")
	if !ok || !sections[sec] {
		return ""
	}
	return span
}

// TestReadmeOptionsAgree: every option of Weir's that README names in code (`section.field`,
// with a value or as a label) is a field of Config, and where README states a default
// (`section.field`, default `value`, or a table row beginning with the option), it is
// docs/configuration.md's.
func TestReadmeOptionsAgree(t *testing.T) {
	ref := readDocRows(t)
	known := map[string]bool{}
	sections := map[string]bool{}
	for _, f := range configFields() {
		known[f] = true
		if sec, _, ok := strings.Cut(f, "."); ok {
			sections[sec] = true
		}
	}
	text := readFile(t, readme)
	named := 0
	check := func(option, where string) {
		named++
		if !known[option] {
			t.Errorf("%s: %s names %s, which Config lacks (%s lists every option)", readme, where, option, configurationDoc)
		}
	}
	for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
		if option := optionOf(m[1], sections); option != "" {
			check(option, "`"+m[1]+"`")
		}
	}
	for _, m := range labelOption.FindAllStringSubmatch(text, -1) {
		check(m[1], "a label")
	}
	if named == 0 {
		t.Errorf("%s names no option: the check reads nothing", readme)
	}
	agree := func(option, def string) {
		want := strings.Trim(ref[option].def, "`")
		if known[option] && strings.Trim(def, "`") != want {
			t.Errorf("%s: default of %s %q, %s's %q", readme, option, def, configurationDoc, want)
		}
	}
	for _, m := range statedDefault.FindAllStringSubmatch(text, -1) {
		agree(m[1], m[2])
	}
	for option, r := range readRows(t, readme) {
		if known[option] {
			agree(option, r.def)
		}
	}
}

// TestReadmeConfigurations: every configuration of Weir that README shows, a YAML block of
// dynamic configuration or a block of Docker labels, decodes as Traefik decodes it and New
// builds it.
func TestReadmeConfigurations(t *testing.T) {
	blocks := 0
	for i, block := range fencedBlocks(readFile(t, readme)) {
		var mws map[string]map[string]interface{}
		var err error
		switch {
		case block.lang == "yaml":
			doc, perr := fixture.ParseYAML([]byte(block.text))
			if perr != nil {
				t.Errorf("%s: YAML block %d: %v", readme, i, perr)
				continue
			}
			mws, err = fixture.YAMLMiddlewares(doc, "weir")
		case strings.Contains(block.text, ".plugin.weir."):
			labels, perr := fixture.ParseLabels([]byte(block.text))
			if perr != nil {
				t.Errorf("%s: label block %d: %v", readme, i, perr)
				continue
			}
			mws, err = fixture.LabelMiddlewares(labels, "weir")
		}
		if err != nil {
			t.Errorf("%s: block %d: %v", readme, i, err)
			continue
		}
		for name, section := range mws {
			blocks++
			newFromSection(t, "readme-"+name, section)
		}
	}
	if blocks == 0 {
		t.Errorf("%s shows no configuration of Weir", readme)
	}
}

// fenced is a fenced code block of a Markdown file: its language and its text.
type fenced struct {
	lang, text string
}

// fencedBlocks are the fenced code blocks of a Markdown text, in order.
func fencedBlocks(text string) []fenced {
	var out []fenced
	var cur *fenced
	for _, line := range strings.Split(text, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &fenced{lang: strings.TrimPrefix(line, "```")}
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return out
}
