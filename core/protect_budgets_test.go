package core

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/core/budget"
	"github.com/weirproxy/weir/internal/clocktest"
	"github.com/weirproxy/weir/internal/fixture"
)

// budgetSettings are settings with a fake clock and budgets of 2 requests per 10s and no
// burst beyond them, clients read from X-Real-IP.
func budgetSettings(clock *clocktest.Clock) Settings {
	return Settings{Now: clock.Now, Log: discardLog, Budgets: BudgetSettings{
		Client: budget.Rate{N: 2, Per: 10 * time.Second}, Burst: 10 * time.Second, ClientHeader: "X-Real-IP",
	}}
}

// TestBudgetClientOver: a client over its budget gets 429 with Retry-After and its
// Cache-Status detail, before any lookup (a fresh hit is refused too); another client is
// served, and the first is again once its bucket has refilled.
func TestBudgetClientOver(t *testing.T) {
	clock := newFakeClock()
	o := countingOrigin(t, []string{"Cache-Control", "max-age=600"})
	h := newTestHandler(t, budgetSettings(clock), o)
	for i := 0; i < 2; i++ {
		wantCode(t, "within budget", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.7"), 200)
	}
	w := doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.7")
	wantCode(t, "over budget", w, http.StatusTooManyRequests)
	if got, want := w.Header().Get("Cache-Status"), "Weir; detail=over-budget"; got != want {
		t.Errorf("Cache-Status %q, want %q", got, want)
	}
	if got := w.Header().Get("Retry-After"); got != "5" {
		t.Errorf("Retry-After %q, want 5 (one request of 2/10s)", got)
	}
	wantCalls(t, o, 1)
	wantCode(t, "another client", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.8"), 200)
	clock.Add(5 * time.Second)
	wantCode(t, "after Retry-After", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.7"), 200)
	if got := h.e.metrics.shed[shedIndex(t, reasonOverBudget.name)].N; got != 1 {
		t.Errorf("shed over-budget counted %d, want 1", got)
	}
	if got := h.e.metrics.outcomes[outcomeShed].N; got != 1 {
		t.Errorf("outcome shed counted %d, want 1", got)
	}
}

// doFront is do through the handler Traefik is given, behind the budgets.
func doFront(t *testing.T, h *Handler, method, url string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.Front().ServeHTTP(w, newRequest(method, url, header...))
	checkCacheStatusShape(t, w.Header().Get("Cache-Status"))
	return w
}

// shedIndex is the index in weir_shed_total of the reason named name.
func shedIndex(t *testing.T, name string) int {
	t.Helper()
	for _, r := range reasons {
		if r.name == name {
			return r.index
		}
	}
	t.Fatalf("no shed reason %q", name)
	return 0
}

// TestBudgetClientKeys: IPv6 clients of one /64 share a bucket, other /64s and IPv4
// clients do not; exempt networks are never counted; each client source reads its field.
func TestBudgetClientKeys(t *testing.T) {
	_, exemptNet, err := net.ParseCIDR("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		desc   string
		s      BudgetSettings
		header []string
		remote string
		key    string
		exempt bool
		// invalid: the field held no address, and the connection's was taken.
		invalid bool
	}{
		{desc: "remote IPv4", remote: "192.0.2.1:5000", key: "192.0.2.1"},
		{desc: "remote IPv6 counts as its /64", remote: "[2001:db8:1:2:3:4:5:6]:443", key: "2001:db8:1:2::/64"},
		{desc: "mapped IPv4", remote: "[::ffff:192.0.2.9]:1", key: "192.0.2.9"},
		{desc: "header", s: BudgetSettings{ClientHeader: "X-Real-IP"}, header: []string{"X-Real-IP", "2001:db8:1:2::99"}, remote: "127.0.0.1:1", key: "2001:db8:1:2::/64"},
		{desc: "header missing: the connection", s: BudgetSettings{ClientHeader: "X-Real-IP"}, remote: "127.0.0.1:1", key: "127.0.0.1"},
		{desc: "forwarded depth 1", s: BudgetSettings{ForwardedDepth: 1}, header: []string{"X-Forwarded-For", "203.0.113.5, 198.51.100.2"}, remote: "127.0.0.1:1", key: "198.51.100.2"},
		{desc: "forwarded depth 2", s: BudgetSettings{ForwardedDepth: 2}, header: []string{"X-Forwarded-For", "203.0.113.5, 198.51.100.2"}, remote: "127.0.0.1:1", key: "203.0.113.5"},
		{desc: "forwarded too shallow", s: BudgetSettings{ForwardedDepth: 3}, header: []string{"X-Forwarded-For", "203.0.113.5, 198.51.100.2"}, remote: "127.0.0.1:1", key: "127.0.0.1"},
		{desc: "header with port", s: BudgetSettings{ClientHeader: "X-Client"}, header: []string{"X-Client", "192.0.2.3:4711"}, remote: "127.0.0.1:1", key: "192.0.2.3"},
		{desc: "header IPv6 in brackets", s: BudgetSettings{ClientHeader: "X-Client"}, header: []string{"X-Client", "[2001:db8:1:2::9]"}, remote: "127.0.0.1:1", key: "2001:db8:1:2::/64"},
		{desc: "header IPv6 with port", s: BudgetSettings{ClientHeader: "X-Client"}, header: []string{"X-Client", "[2001:db8:1:2::9]:4711"}, remote: "127.0.0.1:1", key: "2001:db8:1:2::/64"},
		{desc: "header list: its first, trimmed", s: BudgetSettings{ClientHeader: "X-Client"}, header: []string{"X-Client", " 192.0.2.4 , 198.51.100.1"}, remote: "127.0.0.1:1", key: "192.0.2.4"},
		{desc: "not an address: the connection", s: BudgetSettings{ClientHeader: "X-Real-IP"}, header: []string{"X-Real-IP", "unknown"}, remote: "127.0.0.1:1", key: "127.0.0.1", invalid: true},
		{desc: "list led by junk: the connection", s: BudgetSettings{ClientHeader: "X-Client"}, header: []string{"X-Client", "junk, 192.0.2.4"}, remote: "127.0.0.1:1", key: "127.0.0.1", invalid: true},
		{desc: "a name is no address", s: BudgetSettings{ClientHeader: "X-Client"}, header: []string{"X-Client", "example.com:80"}, remote: "127.0.0.1:1", key: "127.0.0.1", invalid: true},
		{desc: "an address with a zone is none", s: BudgetSettings{ClientHeader: "X-Client"}, header: []string{"X-Client", "fe80::1%eth0"}, remote: "127.0.0.1:1", key: "127.0.0.1", invalid: true},
		{desc: "a network is no address", s: BudgetSettings{ClientHeader: "X-Client"}, header: []string{"X-Client", "192.0.2.0/24"}, remote: "127.0.0.1:1", key: "127.0.0.1", invalid: true},
		{desc: "empty list element", s: BudgetSettings{ClientHeader: "X-Client"}, header: []string{"X-Client", ", 192.0.2.4"}, remote: "127.0.0.1:1", key: "127.0.0.1", invalid: true},
		{desc: "forwarded junk: the connection", s: BudgetSettings{ForwardedDepth: 1}, header: []string{"X-Forwarded-For", "203.0.113.5, junk"}, remote: "127.0.0.1:1", key: "127.0.0.1", invalid: true},
		{desc: "exempt", s: BudgetSettings{Exempt: []*net.IPNet{exemptNet}}, remote: "10.1.2.3:9", key: "10.1.2.3", exempt: true},
	}
	for _, c := range cases {
		r := newRequest("GET", "http://example.com/", c.header...)
		r.RemoteAddr = c.remote
		ip, key, invalid := clientOf(c.s, r)
		if key != c.key {
			t.Errorf("%s: key %q, want %q", c.desc, key, c.key)
		}
		if invalid != c.invalid {
			t.Errorf("%s: invalid %t, want %t", c.desc, invalid, c.invalid)
		}
		if got := exempt(c.s.Exempt, ip); got != c.exempt {
			t.Errorf("%s: exempt %t, want %t", c.desc, got, c.exempt)
		}
	}
}

// TestBudgetClientJunkValues: forty values of the client's field that hold no address
// spend the connection's one bucket, not one each, and each is counted in
// weir_client_address_invalid_total.
func TestBudgetClientJunkValues(t *testing.T) {
	clock := newFakeClock()
	s := Settings{Now: clock.Now, Log: discardLog, Budgets: BudgetSettings{
		Client: budget.Rate{N: 1, Per: time.Minute}, ClientHeader: "X-Client",
	}}
	o := countingOrigin(t, []string{"Cache-Control", "max-age=600"})
	h := newTestHandler(t, s, o)
	passed := 0
	for i := 0; i < 40; i++ {
		w := doFront(t, h, "GET", "http://example.com/a", "X-Client", "junk-"+strconv.Itoa(i))
		if w.Code == http.StatusOK {
			passed++
		}
	}
	if passed != 1 {
		t.Errorf("%d of 40 requests with junk addresses passed a budget of one, want 1", passed)
	}
	if got := h.e.metrics.clientAddrInvalid.N; got != 40 {
		t.Errorf("weir_client_address_invalid_total %d, want 40", got)
	}
	// A client with an address of its own has a bucket of its own, and is no invalid one.
	wantCode(t, "a valid address", doFront(t, h, "GET", "http://example.com/a", "X-Client", "192.0.2.50"), 200)
	if got := h.e.metrics.clientAddrInvalid.N; got != 40 {
		t.Errorf("weir_client_address_invalid_total %d after a valid address, want 40", got)
	}
	var text bytes.Buffer
	if err := writeMetrics(h.e, &text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "\nweir_client_address_invalid_total 40\n") {
		t.Errorf("metrics hold no weir_client_address_invalid_total 40:\n%s", text.String())
	}
	documented, err := fixture.DocTable("docs/operations.md", "Metrics", "| metric | type | what |")
	if err != nil {
		t.Fatal(err)
	}
	if cells, ok := documented["weir_client_address_invalid_total"]; !ok || cells[1] != "counter" {
		t.Errorf("docs/operations.md's Metrics: row %q, want one for the counter weir_client_address_invalid_total", cells)
	}
}

// TestBudgetHostSpellings: every spelling of a host that Traefik routes alike spends the
// host's one bucket.
func TestBudgetHostSpellings(t *testing.T) {
	clock := newFakeClock()
	s := Settings{Now: clock.Now, Log: discardLog, Budgets: BudgetSettings{Host: budget.Rate{N: 1, Per: time.Minute}}}
	o := countingOrigin(t, []string{"Cache-Control", "max-age=600"})
	h := newTestHandler(t, s, o)
	wantCode(t, "first", doFront(t, h, "GET", "http://example.com/x"), 200)
	for _, host := range []string{"EXAMPLE.com", "example.com.", "example.com:1", "Example.COM:8080"} {
		r := newRequest("GET", "http://example.com/x")
		r.Host = host
		w := httptest.NewRecorder()
		h.Front().ServeHTTP(w, r)
		wantCode(t, host, w, http.StatusTooManyRequests)
	}
	wantCode(t, "another host", doFront(t, h, "GET", "http://other.example/x"), 200)
}

// TestBudgetIPv6Shares: two addresses of one /64 spend one bucket.
func TestBudgetIPv6Shares(t *testing.T) {
	clock := newFakeClock()
	o := countingOrigin(t, []string{"Cache-Control", "max-age=600"})
	h := newTestHandler(t, budgetSettings(clock), o)
	wantCode(t, "first of the /64", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "2001:db8:0:1::1"), 200)
	wantCode(t, "second of the /64", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "2001:db8:0:1::2"), 200)
	wantCode(t, "third of the /64", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "2001:db8:0:1:ffff::3"), 429)
	wantCode(t, "another /64", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "2001:db8:0:2::1"), 200)
}

// TestBudgetHost: a Host over its budget is refused whoever asks; other hosts are served.
func TestBudgetHost(t *testing.T) {
	clock := newFakeClock()
	s := Settings{Now: clock.Now, Log: discardLog, Budgets: BudgetSettings{Host: budget.Rate{N: 1, Per: time.Second}}}
	o := countingOrigin(t, []string{"Cache-Control", "max-age=600"})
	h := newTestHandler(t, s, o)
	wantCode(t, "first", doFront(t, h, "GET", "http://a.example/x", "X-Real-IP", "192.0.2.1"), 200)
	w := doFront(t, h, "POST", "http://A.example/x", "X-Real-IP", "192.0.2.2")
	wantCode(t, "second, another client and method", w, 429)
	if !strings.Contains(w.Header().Get("Cache-Status"), "detail=over-budget") || w.Header().Get("Retry-After") != "1" {
		t.Errorf("Cache-Status %q, Retry-After %q; want over-budget, 1", w.Header().Get("Cache-Status"), w.Header().Get("Retry-After"))
	}
	wantCode(t, "another host", doFront(t, h, "GET", "http://b.example/x"), 200)
}

// TestBudgetsOffByDefault: no budget set builds no tables, and the handler holds none.
func TestBudgetsOffByDefault(t *testing.T) {
	o := countingOrigin(t, nil)
	h := newTestHandler(t, Settings{Log: discardLog}, o)
	if h.budgets != nil || *h.paced != 0 {
		t.Fatalf("budgets %v, pacing on %d; want nil and 0 with nothing configured", h.budgets, *h.paced)
	}
	if front, ok := h.Front().(*Handler); !ok || front != h {
		t.Fatalf("Front() = %T, want the handler itself with no budget set", h.Front())
	}
}

// TestBudgetsKeptAcrossReloads: a reload with the same budgets keeps the buckets, so a
// client over budget stays over it.
func TestBudgetsKeptAcrossReloads(t *testing.T) {
	clock := newFakeClock()
	name := uniqueEngineName(t)
	o := countingOrigin(t, []string{"Cache-Control", "max-age=600"})
	h := mustNew(t, name, budgetSettings(clock), o)
	for i := 0; i < 2; i++ {
		doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.7")
	}
	h = mustNew(t, name, budgetSettings(clock), o)
	wantCode(t, "after a reload", doFront(t, h, "GET", "http://example.com/a", "X-Real-IP", "192.0.2.7"), 429)
}
