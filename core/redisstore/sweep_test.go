package redisstore

import (
	"strings"
	"testing"
	"time"

	"github.com/weirproxy/weir/internal/redistest"
	"github.com/weirproxy/weir/internal/storetest"
)

// TestSweep: Sweep deletes the entries under the prefix whose keys match the glob and that
// drop names, on one server and on every primary of a cluster; the index's sets, the
// keys drop spares and another prefix's keys stay, and this process's near copies go.
func TestSweep(t *testing.T) {
	keys := []string{"http://a/_weir/x", "https://b/_weir", "http://c/%5Fweir/y", "http://d/_weirdo", "http://e/page",
		"http://f/_weir/v\x00g1\x00vary\x00Accept:x"}
	dropped := []string{"http://a/_weir/x", "https://b/_weir", "http://c/%5Fweir/y", "http://f/_weir/v\x00g1\x00vary\x00Accept:x"}
	drop := func(key string) bool {
		return !strings.Contains(key, "_weirdo") && (strings.Contains(key, "/_weir") || strings.Contains(key, "/%5Fweir"))
	}
	servers := []struct {
		desc string
		url  func(t *testing.T) string
	}{
		{desc: "one server", url: func(t *testing.T) string { return "redis://" + redistest.Start(t, redistest.Config{}).Addr }},
		{desc: "a cluster", url: func(t *testing.T) string { return redistest.StartCluster(t, 3, 0).URL() }},
	}
	for _, srv := range servers {
		t.Run(srv.desc, func(t *testing.T) {
			url := srv.url(t)
			ctx := testCtx(t)
			st := newStore(t, Settings{URL: url, KeyPrefix: "w:", NearMaxSize: nearSize})
			other := newStore(t, Settings{URL: url, KeyPrefix: "v:"})
			now := time.Now()
			for _, k := range keys {
				if err := st.Set(ctx, k, storetest.Entry(now, []string{"t"})); err != nil {
					t.Fatalf("Set(%q): %v", k, err)
				}
				if err := other.Set(ctx, k, storetest.Entry(now, nil)); err != nil {
					t.Fatalf("other's Set(%q): %v", k, err)
				}
				// A near copy, which the sweep must drop too.
				if _, err := st.Get(ctx, k); err != nil {
					t.Fatalf("Get(%q): %v", k, err)
				}
			}
			n, err := st.Sweep(ctx, "*://*/[\\_%]*", drop)
			if n != len(dropped) || err != nil {
				t.Errorf("Sweep = %d, %v; want %d, nil", n, err, len(dropped))
			}
			for _, k := range keys {
				e, err := st.Get(ctx, k)
				if err != nil {
					t.Fatalf("Get(%q): %v", k, err)
				}
				if want := !storetest.Contains(dropped, k); (e != nil) != want {
					t.Errorf("after the sweep, %q present %v, want %v", k, e != nil, want)
				}
				if e, err := other.Get(ctx, k); err != nil || e == nil {
					t.Errorf("another prefix's %q: %v, %v; want it kept", k, e, err)
				}
			}
			// The tag's set stays: a purge by tag still finds what is left of it.
			if n, err := st.PurgeTag(ctx, "t"); err != nil || n != len(keys)-len(dropped) {
				t.Errorf("PurgeTag after the sweep = %d, %v; want %d", n, err, len(keys)-len(dropped))
			}
		})
	}
}
