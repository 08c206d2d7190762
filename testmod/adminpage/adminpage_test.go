package adminpage

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/weirproxy/weir/core/admin"
	"github.com/weirproxy/weir/e2e"
)

var updateScreenshot = flag.Bool("update-screenshot", false,
	"write the page's screenshot to testdata/admin/page.png at the repository's root")

const (
	// adminPath is where the middleware serves its admin, below the router's prefix.
	adminPath = "/x/_weir"
	// token is the operator's token (admin.token).
	token = "page-operator-token-24-chars"
	// tag is the surrogate key of the cacheable page that the operator purges.
	tag = "product-42"
	// declaredKey is the scope key the operator adds by hand and opens.
	declaredKey = "api.example.com"

	// stepTimeout bounds one step, in the browser or through Traefik: the machine is shared
	// and noisy, so it is generous; it is there so that nothing hangs.
	stepTimeout = 30 * time.Second
	// testBudget bounds the browser's whole life, its start included.
	testBudget = 5 * time.Minute
	// feedTimeout is how soon an event must show in the page's feed (issue: within 3 s).
	feedTimeout = 3 * time.Second
	// seriesTimeout bounds the wait for 10 samples of the series, one a second.
	seriesTimeout = 45 * time.Second
	// screenshotName is the screenshot's file, in testdata/admin/ with -update-screenshot.
	screenshotName = "page.png"
)

// middleware is the Weir configuration of the route: the admin under adminPath, a breaker
// that trips after three failures and stays open long enough to be seen, and a negative
// cache that forgets failures quickly.
func middleware() map[string]interface{} {
	return map[string]interface{}{
		"admin":    map[string]interface{}{"path": adminPath, "token": token},
		"breaker":  map[string]interface{}{"minRequests": "3", "openFor": "120s", "maxOpenFor": "240s"},
		"negative": map[string]interface{}{"ttl": "1s"},
	}
}

// TestAdminPage drives the admin page in headless Chromium through a real Traefik: the
// operator signs in, sees the breaker that a failing origin opened, closes it, tunes it,
// adds and opens a key by hand, purges a surrogate key, and paces the host then clears the
// pace; after each action the test checks through Traefik that it took effect. The page must write no error to the console.
func TestAdminPage(t *testing.T) {
	required := os.Getenv("WEIR_E2E") == "required"
	chromium := findChromium(t)
	binary, root := findTraefik(t, required)

	o := e2e.NewOrigin()
	t.Cleanup(o.Close)
	o.Handle("/x/fail", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	o.Handle("/x/live", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "live")
	})
	o.Handle("/x/product", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		w.Header().Set("Surrogate-Key", "catalog "+tag)
		io.WriteString(w, "product 42")
	})
	s := startSite(t, binary, root, o)

	// The breaker's scope key is the request's host without its port.
	u, err := url.Parse(s.tr.WebURL)
	if err != nil {
		t.Fatal(err)
	}
	host := u.Hostname()
	row := fmt.Sprintf(`#breakers tr[data-key=%q]`, host)

	// 1. The origin fails until the host's breaker opens; then Weir answers for it.
	began := time.Now()
	sent := 0
	for sent < 10 && s.breaker(host).State != "open" {
		sent++
		if r := s.get(fmt.Sprintf("/x/fail?n=%d", sent), nil); r.status != http.StatusServiceUnavailable {
			t.Fatalf("GET /x/fail: status %d, want 503 from the failing origin", r.status)
		}
	}
	if b := s.breaker(host); b.State != "open" || b.OpenedBy != "auto" {
		t.Fatalf("after %d failures the breaker of %s is %q opened by %q, want open by auto", sent, host, b.State, b.OpenedBy)
	}
	if r := s.get("/x/live", nil); r.status != http.StatusServiceUnavailable || !strings.Contains(r.cacheStatus, "circuit-open") {
		t.Fatalf("GET /x/live while open: %d, Cache-Status %q; want 503 circuit-open", r.status, r.cacheStatus)
	}
	if n := o.Count("/x/live"); n != 0 {
		t.Fatalf("GET /x/live while open reached the origin %d times, want 0", n)
	}
	t.Logf("the breaker of %s opened after %d failures, in %v", host, sent, time.Since(began).Round(time.Millisecond))

	p := openBrowser(t, chromium)

	// 2. Sign in: the page without the cookie is a 403 with a login form.
	pageURL := s.tr.URL(adminPath + "/")
	if status := p.load("open the page", chromedp.Navigate(pageURL)); status != http.StatusForbidden {
		t.Fatalf("the page before sign-in answered %d, want 403 with the login form", status)
	}
	p.do("type the token", chromedp.SendKeys(chromedp.CSS(`input[name=token]`), token))
	if status := p.load("sign in", chromedp.Click(chromedp.CSS(`button[type=submit]`))); status != http.StatusOK {
		t.Fatalf("sign in: the page answered %d, want 200", status)
	}
	p.do("see the breaker open", chromedp.WaitVisible(chromedp.CSS(row+".state-open")))
	// The opener, with the trip rule that opened it.
	if got := p.text("the opener", row+" td.opener"); got != "auto (failure-ratio)" {
		t.Errorf("opened by %q, want auto (failure-ratio)", got)
	}
	if got := p.text("the trips", row+" td.trips"); got != "1" {
		t.Errorf("trips %q, want 1", got)
	}
	// The breaker's opening is in the events feed within 3 s of the page's first refresh
	// (the breakers' table above is that refresh's): the feed polls every 2 s.
	p.do("see the opening in the events feed", chromedp.Poll[chromedp.Void](
		fmt.Sprintf(`[...document.querySelectorAll("#events li[data-event=breaker_opened]")].some(li => li.textContent.includes(%q))`, "scope="+host),
		chromedp.WithPollingTimeout(feedTimeout)))

	// 3. Close it: the row turns closed and requests reach the origin again.
	p.do("close the breaker",
		chromedp.Click(chromedp.CSS(row+" button.close")),
		chromedp.WaitVisible(chromedp.CSS(row+".state-closed")))
	p.wantMessage("breakers/close " + host + ": done")
	if r := s.get("/x/live", nil); r.status != http.StatusOK || r.body != "live" {
		t.Errorf("GET /x/live after close: %d %q, want 200 \"live\"", r.status, r.body)
	}
	if n := o.Count("/x/live"); n != 1 {
		t.Errorf("GET /x/live after close reached the origin %d times, want 1", n)
	}

	// 4. Tune it: the window becomes the key's own, marked as an override.
	p.do("tune the window",
		chromedp.SendKeys(chromedp.CSS(row+" form.tune input[name=window]"), "30s\r"),
		chromedp.WaitVisible(chromedp.CSS(row+" span.param[data-param=window].override")))
	if got := p.text("the window", row+" span.param[data-param=window]"); got != "window=30s" {
		t.Errorf("window shown as %q, want window=30s", got)
	}
	if got := p.text("the ratio", row+" span.param[data-param=failureRatio]"); got != "failureRatio=0.5" {
		t.Errorf("failureRatio shown as %q, want the default failureRatio=0.5", got)
	}
	if w := param(s.breaker(host), "window"); w.Value != "30s" || !w.Override {
		t.Errorf("api/state: window %+v, want 30s overridden", w)
	}
	if got := p.value("the tune form", row+" form.tune input[name=window]"); got != "" {
		t.Errorf("the tune form still holds %q after it was applied, want it cleared", got)
	}

	// The page refreshes every two seconds; a refresh keeps the row, and what the operator
	// is typing in it.
	p.do("type while the page refreshes",
		chromedp.SendKeys(chromedp.CSS(row+" form.open input[name=for]"), "45s"),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`document.querySelector(%q).dataset.seen = "1"; window.asOf = document.querySelector("#updated").textContent`, row)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#updated").textContent !== window.asOf`,
			chromedp.WithPollingTimeout(stepTimeout)))
	if got := p.value("the open form", row+" form.open input[name=for]"); got != "45s" {
		t.Errorf("after a refresh the open form holds %q, want what was typed: 45s", got)
	}
	kept := step(p, "read the row's mark", func(ctx context.Context) (bool, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q).dataset.seen === "1"`, row)))
	})
	if !kept {
		t.Errorf("a refresh replaced the row of %s, want it updated in place", host)
	}
	// Not chromedp.Clear: it sets the value attribute, which a field typed in no longer
	// shows; nor SetValue, which takes an empty value for a failure.
	p.do("clear the open form", chromedp.Evaluate[chromedp.Void](
		fmt.Sprintf(`document.querySelector(%q).value = ""`, row+" form.open input[name=for]")))

	// 5. Add a key by hand and open it for five minutes.
	declared := fmt.Sprintf(`#breakers tr[data-key=%q]`, declaredKey)
	p.do("add a key",
		chromedp.SendKeys(chromedp.CSS(`#declare input[name=key]`), declaredKey+"\r"),
		chromedp.WaitVisible(chromedp.CSS(declared+".state-closed")))
	p.do("open it by hand",
		chromedp.SendKeys(chromedp.CSS(declared+" form.open input[name=for]"), "5m\r"),
		chromedp.WaitVisible(chromedp.CSS(declared+".state-open")))
	if got := p.text("the opener", declared+" td.opener"); got != "manual" {
		t.Errorf("%s opened by %q, want manual", declaredKey, got)
	}
	if b := s.breaker(declaredKey); b.State != "open" || b.OpenedBy != "manual" {
		t.Errorf("api/state: %s is %q opened by %q, want open by manual", declaredKey, b.State, b.OpenedBy)
	}

	// 6. Purge by surrogate key: the cached page is dropped and the origin called again.
	if r := s.get("/x/product", nil); r.status != http.StatusOK || !strings.Contains(r.cacheStatus, "stored") {
		t.Fatalf("GET /x/product: %d, Cache-Status %q; want 200 stored", r.status, r.cacheStatus)
	}
	if r := s.get("/x/product", nil); !strings.Contains(r.cacheStatus, "hit") {
		t.Fatalf("GET /x/product again: Cache-Status %q, want a hit", r.cacheStatus)
	}
	if n := o.Count("/x/product"); n != 1 {
		t.Fatalf("origin requests for /x/product = %d, want 1 before the purge", n)
	}
	p.do("purge the tag",
		chromedp.SetValue(chromedp.CSS(`#purge select[name=kind]`), "tag"),
		chromedp.SendKeys(chromedp.CSS(`#purge input[name=value]`), tag),
		chromedp.Click(chromedp.CSS(`#purge button[type=submit]`)))
	p.wantMessage("purge tag " + tag + ": done (1 dropped)")
	if r := s.get("/x/product", nil); r.status != http.StatusOK || strings.Contains(r.cacheStatus, "hit") {
		t.Errorf("GET /x/product after the purge: %d, Cache-Status %q; want 200 from the origin", r.status, r.cacheStatus)
	}
	if n := o.Count("/x/product"); n != 2 {
		t.Errorf("origin requests for /x/product = %d, want 2: the purge should send the next request to the origin", n)
	}

	// 7. Pace the host: the page lists it as the operator's, and so does api/state.
	paced := fmt.Sprintf(`#pacing tr[data-key=%q]`, host)
	p.do("pace the host",
		chromedp.SendKeys(chromedp.CSS(`#pace input[name=name]`), host),
		chromedp.SendKeys(chromedp.CSS(`#pace input[name=rate]`), "2/1s\r"),
		chromedp.WaitVisible(chromedp.CSS(paced+".origin-operator")))
	p.wantMessage("pacing " + host + " at 2/1s: done")
	if got := p.text("the pace's rate", paced+" td.rate"); got != "2/1s" {
		t.Errorf("rate shown as %q, want 2/1s", got)
	}
	if got := p.text("the pace's origin", paced+" td.origin"); got != "operator" {
		t.Errorf("origin shown as %q, want operator", got)
	}
	if pc := s.pace(host); pc.Rate != "2/1s" || pc.Origin != admin.OriginOperator {
		t.Errorf("api/state: the pace of %s is %+v, want 2/1s by the operator", host, pc)
	}

	// 8. The page settles: the breaker closed, the key opened by hand.
	p.do("wait for the page to settle", chromedp.WaitVisible(chromedp.CSS(row+".state-closed")),
		chromedp.WaitVisible(chromedp.CSS(declared+".state-open")))

	// 9. Clear the pace: its row goes, and api/state lists it no more.
	p.do("clear the pace", chromedp.Click(chromedp.CSS(paced+" button.clear")),
		chromedp.WaitNotPresent(chromedp.CSS(paced)))
	p.wantMessage("pacing " + host + ": done")
	if pc := s.pace(host); pc.Name != "" {
		t.Errorf("api/state after the clear: %+v, want no pace for %s", pc, host)
	}

	// 10. The console: with traffic flowing, every chart of the overview draws at least 10
	// points (one a second), the hosts table lists the host, and the URL lookup shows the
	// stored page's time to live.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(150 * time.Millisecond):
			}
			// Errors are the test's concern only through what the page shows.
			for _, path := range []string{"/x/product", "/x/product", "/x/product", fmt.Sprintf("/x/live?i=%d", i)} {
				if req, err := http.NewRequest(http.MethodGet, s.tr.URL(path), nil); err == nil {
					if resp, err := s.tr.Client().Do(req); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
			}
		}
	}()
	// The first sample spreads what came since the middleware started over those seconds;
	// then one comes a second: the count must grow by 3 as well as reach 10.
	first := step(p, "count the points drawn", func(ctx context.Context) (int, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[int](`Number(document.querySelector("figure.chart").dataset.points || 0)`))
	})
	want := first + 3
	if want < 10 {
		want = 10
	}
	p.do(fmt.Sprintf("see every chart draw %d points", want), chromedp.Poll[chromedp.Void](fmt.Sprintf(
		`[...document.querySelectorAll("figure.chart")].every(f => f.querySelectorAll("polyline").length > 0 &&
		   [...f.querySelectorAll("polyline")].every(l => l.getAttribute("points").split(" ").length >= %d))`, want),
		chromedp.WithPollingTimeout(seriesTimeout)))
	close(stop)
	select {
	case <-done:
	case <-time.After(stepTimeout):
		t.Fatal("the traffic hangs: not stopped within the step's timeout")
	}
	charts := step(p, "count the charts", func(ctx context.Context) (int, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("figure.chart").length`))
	})
	if charts != 6 {
		t.Errorf("charts drawn: %d, want 6", charts)
	}
	// The refusal of step 1 (circuit-open) has its line.
	p.do("see the refusals chart draw circuit-open", chromedp.WaitVisible(chromedp.CSS(`figure[data-chart=refusals] polyline[data-line=circuit-open]`)))
	if got := p.text("the traffic in words", `figure[data-chart=traffic] .now`); !strings.Contains(got, "saved") {
		t.Errorf("the traffic chart says %q, want the requests a second and the share saved", got)
	}
	p.do("see the host in the hosts table", chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#host-table tr[data-key=%q]`, host))))
	p.do("look up the product",
		chromedp.SendKeys(chromedp.CSS(`#lookup input[name=url]`), s.tr.URL("/x/product")+"\r"),
		chromedp.WaitVisible(chromedp.CSS(`#entry dd[data-field=ttl]`)))
	ttl := p.text("the entry's time to live", `#entry dd[data-field=ttl]`)
	var secs float64
	if _, err := fmt.Sscanf(ttl, "%g s", &secs); err != nil || secs <= 0 || secs > 600 {
		t.Errorf("the entry's time to live reads %q, want up to 600 s (max-age=600)", ttl)
	}
	if got := p.text("the entry's tags", `#entry dd[data-field=tags]`); got != "catalog "+tag {
		t.Errorf("the entry's tags read %q, want %q", got, "catalog "+tag)
	}

	// 11. Screenshots at a desktop's width and a phone's, as the test's artifacts
	// ($WEIR_ARTIFACTS, else a temporary folder); at a phone's width nothing is wider than
	// the screen (wide tables scroll in their box). With -update-screenshot the desktop's
	// is the README's too.
	dir := os.Getenv("WEIR_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, shot := range []struct {
		name          string
		width, height int64
	}{{"console-desktop.png", 1280, 800}, {"console-phone.png", 390, 844}} {
		p.do("set the width to "+fmt.Sprint(shot.width), chromedp.EmulateViewport(shot.width, shot.height),
			chromedp.Poll[chromedp.Void](`document.querySelector("figure.chart polyline") !== null`, chromedp.WithPollingTimeout(stepTimeout)))
		wide := step(p, "measure the page's width", func(ctx context.Context) (int, error) {
			return chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`))
		})
		if wide > 1 {
			over := step(p, "find what is wider", func(ctx context.Context) (string, error) {
				return chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("body *")].filter(e =>
					e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest(".scroll")).slice(0, 8).map(e =>
					e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className && typeof e.className === "string" ? "." + e.className : "")).join(" ")`))
			})
			t.Errorf("at %d px the page is %d px wider than the screen: %s", shot.width, wide, over)
		}
		png := p.screenshot()
		paths := []string{filepath.Join(dir, shot.name)}
		if *updateScreenshot && shot.width == 1280 {
			paths = append(paths, filepath.Join(root, "testdata", "admin", screenshotName))
		}
		for _, path := range paths {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s (%d bytes)", path, len(png))
		}
	}
	p.checkConsole("the end")
}

// findChromium returns the browser: $WEIR_CHROMIUM, else chromium on PATH, else
// /usr/bin/chromium (Debian's package). Without one the test skips, or fails when
// WEIR_E2E=required.
func findChromium(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("WEIR_CHROMIUM")}
	if p, err := exec.LookPath("chromium"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/bin/chromium")
	for _, p := range candidates {
		if st, err := os.Stat(p); p != "" && err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	e2e.Unavailable(t, "no Chromium for the admin page test: install Debian's chromium or set WEIR_CHROMIUM")
	return ""
}

// findTraefik returns the Traefik binary and the repository whose plugin it loads, as the
// end-to-end tests find them.
func findTraefik(t *testing.T, required bool) (binary, root string) {
	t.Helper()
	if testing.Short() && !required {
		t.Skip("end-to-end test: skipped in -short mode")
	}
	root, err := e2e.RepoRoot()
	if err == nil {
		binary, err = e2e.FindTraefik(root)
	}
	if err != nil {
		e2e.Unavailable(t, fmt.Sprintf("no Traefik for the admin page test: %v\n"+
			"set WEIR_TRAEFIK to a Traefik v3.6.12 binary or run scripts/build-traefik.sh", err))
	}
	return binary, root
}

// site is Traefik serving the route /x through Weir to the origin.
type site struct {
	t  *testing.T
	tr *e2e.Traefik
}

func startSite(t *testing.T, binary, root string, o *e2e.Origin) *site {
	t.Helper()
	d := e2e.Dynamic{
		Routes:      []e2e.Route{{Name: "x", Rule: "PathPrefix(`/x`)", Middleware: "weir-x"}},
		Middlewares: map[string]map[string]interface{}{"weir-x": middleware()},
	}
	began := time.Now()
	tr, err := e2e.Start(e2e.Options{Binary: binary, Root: root, Dir: t.TempDir()}, o.URL, d)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Logf("traefik ready in %v", time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("traefik log on failure:\n%s", tr.LogTail(60))
		}
		if err := tr.Stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return &site{t: t, tr: tr}
}

// reply is what a client got back through Traefik.
type reply struct {
	status      int
	cacheStatus string
	body        string
}

// get sends one GET through Traefik's web entry point.
func (s *site) get(path string, header map[string]string) reply {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.tr.URL(path), nil)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := s.tr.Client().Do(req)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return reply{status: resp.StatusCode, cacheStatus: resp.Header.Get("Cache-Status"), body: string(body)}
}

// state is what api/state answers.
func (s *site) state() admin.State {
	s.t.Helper()
	r := s.get(adminPath+"/api/state", map[string]string{"Authorization": "Bearer " + token})
	if r.status != http.StatusOK {
		s.t.Fatalf("api/state: %d %q", r.status, r.body)
	}
	var st admin.State
	if err := json.Unmarshal([]byte(r.body), &st); err != nil {
		s.t.Fatalf("api/state: %v in %q", err, r.body)
	}
	return st
}

// breaker is the breaker of key as api/state shows it; the zero Breaker if it is not listed.
func (s *site) breaker(key string) admin.Breaker {
	s.t.Helper()
	for _, b := range s.state().Breakers {
		if b.Key == key {
			return b
		}
	}
	return admin.Breaker{}
}

// pace is the pace in force for name as api/state shows it; the zero Pace if none.
func (s *site) pace(name string) admin.Pace {
	s.t.Helper()
	for _, p := range s.state().Pacing {
		if p.Name == name {
			return p
		}
	}
	return admin.Pace{}
}

// param is b's parameter name; the zero Param if it has none.
func param(b admin.Breaker, name string) admin.Param {
	for _, p := range b.Params {
		if p.Name == name {
			return p
		}
	}
	return admin.Param{}
}

// browser is one headless Chromium tab and what its console reported.
type browser struct {
	t   *testing.T
	ctx context.Context

	// mu guards problems: console errors and uncaught exceptions, in order.
	mu       sync.Mutex
	problems []string
}

// openBrowser starts Chromium with a profile of its own, closed when the test ends, and
// records the errors its console reports.
func openBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	budget, cancelBudget := context.WithTimeout(context.Background(), testBudget)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // the tests may run as root, where the sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(budget, opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancelBudget()
	})
	b := &browser{t: t, ctx: ctx}
	began := time.Now()
	// The first action starts the browser; it must run on the tab's own context, which
	// owns the browser, so it is bounded by the budget rather than by a step's timeout.
	if err := chromedp.Do(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("starting %s hangs: no browser within %v", chromium, testBudget)
		}
		t.Fatalf("starting %s: %v", chromium, err)
	}
	t.Logf("chromium ready in %v", time.Since(began).Round(time.Millisecond))
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if (m.Type == chromedp.ConsoleError || m.IsException()) && !expected(m) {
				b.mu.Lock()
				b.problems = append(b.problems, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// expected tells whether a console error is one the test causes on purpose: the browser
// reports the 403 of the page before sign-in as a failed load.
func expected(m chromedp.ConsoleMessage) bool {
	return m.Source == "network" && strings.HasSuffix(m.URL, adminPath+"/") && strings.Contains(m.Text, "403")
}

// step runs f with a context bounded by stepTimeout, failing the test if it errs or hangs,
// and logs how long it took.
func step[T any](b *browser, what string, f func(ctx context.Context) (T, error)) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	began := time.Now()
	v, err := f(ctx)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, chromedp.ErrPollingTimeout) {
			b.t.Fatalf("%s hangs: not done within %v (%v)%s", what, stepTimeout, err, b.consoleReport())
		}
		b.t.Fatalf("%s: %v%s", what, err, b.consoleReport())
	}
	b.t.Logf("%s: %v", what, time.Since(began).Round(time.Millisecond))
	b.checkConsole(what)
	return v
}

// do runs the actions as one step.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	step(b, what, func(ctx context.Context) (chromedp.Void, error) {
		return chromedp.Void{}, chromedp.Do(ctx, actions...)
	})
}

// load runs the actions as one step, waits for the page they load, and returns the status
// of that page's response.
func (b *browser) load(what string, actions ...chromedp.Action[chromedp.Void]) int {
	b.t.Helper()
	return step(b, what, func(ctx context.Context) (int, error) {
		resp, err := chromedp.RunResponse(ctx, actions...)
		if err != nil {
			return 0, err
		}
		return int(resp.Status), nil
	})
}

// text is the text of the element sel finds.
func (b *browser) text(what, sel string) string {
	b.t.Helper()
	return step(b, "read "+what, func(ctx context.Context) (string, error) {
		return chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	})
}

// value is the value of the form field sel finds.
func (b *browser) value(what, sel string) string {
	b.t.Helper()
	return step(b, "read "+what, func(ctx context.Context) (string, error) {
		return chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
	})
}

// wantMessage waits until #message says want, failing if it says something else at the end.
func (b *browser) wantMessage(want string) {
	b.t.Helper()
	js := fmt.Sprintf(`document.querySelector("#message").textContent === %q`, want)
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(stepTimeout))); err != nil {
		got := b.text("the message", "#message")
		b.t.Fatalf("#message says %q, want %q (%v)%s", got, want, err, b.consoleReport())
	}
}

// screenshot is a PNG of the whole page.
func (b *browser) screenshot() []byte {
	b.t.Helper()
	return step(b, "take the screenshot", func(ctx context.Context) ([]byte, error) {
		return chromedp.Run(ctx, chromedp.FullScreenshot(100))
	})
}

// checkConsole fails the test if the page reported an error so far.
func (b *browser) checkConsole(when string) {
	b.t.Helper()
	if r := b.consoleReport(); r != "" {
		b.t.Fatalf("after %s, the page reported errors:%s", when, r)
	}
}

func (b *browser) consoleReport() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) == 0 {
		return ""
	}
	return "\nconsole: " + strings.Join(b.problems, "\nconsole: ")
}
