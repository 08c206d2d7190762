package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// waitPing polls /ping on the traefik entry point until it answers 200.
func (tr *Traefik) waitPing(deadline time.Time) error {
	var last error
	for time.Now().Before(deadline) {
		if tr.Exited() {
			return tr.exitError()
		}
		status, _, err := tr.get(tr.APIURL + "/ping")
		if err == nil && status == http.StatusOK {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("/ping answered %d", status)
		}
		time.Sleep(pollEvery)
	}
	return fmt.Errorf("%w waiting for /ping: %v", errTimeout, last)
}

// waitGeneration waits until Traefik serves the dynamic configuration last written: the
// marker router of generation tr.gen answers on the web entry point, and the API lists
// every router and Weir middleware of tr.dyn as enabled. A router or middleware that
// Traefik disabled (a plugin New error, an unknown middleware) fails at once with
// Traefik's own error text.
func (tr *Traefik) waitGeneration(deadline time.Time) error {
	marker := fmt.Sprintf("%s%s%d", tr.WebURL, markerPrefix, tr.gen)
	var last error
	for {
		if tr.Exited() {
			return tr.exitError()
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w waiting for generation %d: %v", errTimeout, tr.gen, last)
		}
		status, _, err := tr.get(marker)
		switch {
		case err != nil:
			last = err
		case status != http.StatusOK:
			last = fmt.Errorf("marker %s answered %d", marker, status)
		default:
			done, err := tr.routersEnabled()
			if err != nil {
				return err
			}
			if done {
				return nil
			}
			last = fmt.Errorf("API does not list every router of generation %d yet", tr.gen)
		}
		time.Sleep(pollEvery)
	}
}

// apiObject is the part of Traefik's API answer for a router or middleware the harness reads.
type apiObject struct {
	Name   string   `json:"name"`
	Status string   `json:"status"`
	Error  []string `json:"error"`
}

// routersEnabled reports whether the API lists all routers and middlewares of tr.dyn; it
// returns an error if one of them is disabled.
func (tr *Traefik) routersEnabled() (bool, error) {
	// Middlewares first: routers read after them reflect a configuration at least as new, so
	// a router read before the provider plugin's presets arrived is not judged with them.
	middlewares, err := tr.apiList("/api/http/middlewares")
	if err != nil {
		return false, nil
	}
	routers, err := tr.apiList("/api/http/routers")
	if err != nil {
		return false, nil
	}
	// The provider plugin publishes on its own, maybe after the file provider: routers that
	// reference its presets are judged once its configuration is in.
	for _, name := range providerPresets(tr.opts.Provider) {
		if _, ok := middlewares[name+"@plugin-"+ProviderAlias]; !ok {
			return false, nil
		}
	}
	var want []string
	for _, r := range tr.dyn.Routes {
		want = append(want, "router "+r.Name)
	}
	for name := range tr.dyn.Middlewares {
		want = append(want, "middleware "+name)
	}
	for _, w := range want {
		var obj apiObject
		var ok bool
		if strings.HasPrefix(w, "router ") {
			obj, ok = routers[strings.TrimPrefix(w, "router ")+"@file"]
		} else {
			obj, ok = middlewares[strings.TrimPrefix(w, "middleware ")+"@file"]
		}
		if !ok {
			return false, nil
		}
		if obj.Status != "enabled" && obj.Status != "warning" {
			if tr.opts.Provider != nil && strings.Contains(strings.Join(obj.Error, "; "), "@plugin-"+ProviderAlias+"\" does not exist") {
				// Judged on a configuration from before the provider's presets: not yet.
				return false, nil
			}
			return false, fmt.Errorf("%w: %s is %s: %s", errRouter, w, obj.Status, strings.Join(obj.Error, "; "))
		}
	}
	return true, nil
}

func (tr *Traefik) apiList(path string) (map[string]apiObject, error) {
	status, body, err := tr.get(tr.APIURL + path + "?per_page=10000")
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d", path, status)
	}
	var list []apiObject
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	byName := make(map[string]apiObject, len(list))
	for _, o := range list {
		byName[o.Name] = o
	}
	return byName, nil
}

// Goroutines is Traefik's goroutine count, from the first line of
// /debug/pprof/goroutine?debug=1 ("goroutine profile: total N").
func (tr *Traefik) Goroutines() (int, error) {
	status, body, err := tr.get(tr.APIURL + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, fmt.Errorf("goroutines: %w", err)
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("goroutines: pprof answered %d", status)
	}
	return parseGoroutineTotal(string(body))
}

func parseGoroutineTotal(profile string) (int, error) {
	const prefix = "goroutine profile: total "
	line := profile
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	if !strings.HasPrefix(line, prefix) {
		return 0, fmt.Errorf("goroutines: unexpected profile header %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, prefix)))
	if err != nil {
		return 0, fmt.Errorf("goroutines: %w", err)
	}
	return n, nil
}

// LogTail is the last n lines of Traefik's log and of its stdout and stderr. A Go panic or
// fatal error there puts its message at the top of a long trace, so that message is shown
// too.
func (tr *Traefik) LogTail(n int) string {
	var b strings.Builder
	for _, p := range []string{tr.LogPath, tr.OutPath} {
		if p == "" {
			continue
		}
		lines, err := readLines(p)
		if err != nil {
			fmt.Fprintf(&b, "--- %s: %v\n", p, err)
			continue
		}
		if head := crashHead(lines, n); head != nil {
			fmt.Fprintf(&b, "--- crash reported in %s\n%s\n", p, strings.Join(head, "\n"))
		}
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "--- last %d lines of %s\n%s\n", len(lines), p, strings.Join(lines, "\n"))
	}
	return b.String()
}

// crashHead returns the first lines of a Go panic or fatal error when they fall before the
// last n lines, so a tail would miss them.
func crashHead(lines []string, n int) []string {
	const headLines = 12
	for i, l := range lines {
		if i >= len(lines)-n {
			return nil
		}
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			end := i + headLines
			if end > len(lines)-n {
				end = len(lines) - n
			}
			return lines[i:end]
		}
	}
	return nil
}

// readLines reads a file's lines, at most maxLogRead bytes of it from the end.
func readLines(path string) ([]string, error) {
	const maxLogRead = 4 << 20
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > maxLogRead {
		if _, err := f.Seek(st.Size()-maxLogRead, io.SeekStart); err != nil {
			return nil, err
		}
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// get fetches url with the harness client, reading at most 1 MiB of the body.
func (tr *Traefik) get(url string) (int, []byte, error) {
	resp, err := tr.client.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

// providerPresets lists the names of the presets of a provider plugin block.
func providerPresets(block map[string]interface{}) []string {
	presets, _ := block["presets"].(map[string]interface{})
	names := make([]string, 0, len(presets))
	for name := range presets {
		names = append(names, name)
	}
	return names
}
