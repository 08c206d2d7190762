package hostkey

import (
	"runtime"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	long := strings.Repeat("a", MaxLen)
	tests := []struct {
		desc string
		host string
		want string
	}{
		{desc: "canonical name", host: "example.com", want: "example.com"},
		{desc: "upper case", host: "EXAMPLE.com", want: "example.com"},
		{desc: "mixed case and port", host: "Example.COM:8080", want: "example.com"},
		{desc: "trailing dot", host: "example.com.", want: "example.com"},
		{desc: "trailing dots", host: "example.com..", want: "example.com"},
		{desc: "port", host: "example.com:1", want: "example.com"},
		{desc: "trailing dot and port", host: "example.com.:80", want: "example.com"},
		{desc: "empty port", host: "example.com:", want: "example.com"},
		{desc: "single label", host: "localhost", want: "localhost"},
		{desc: "empty", host: "", want: ""},
		{desc: "dots alone", host: "..", want: ""},
		{desc: "port alone", host: ":80", want: ""},
		{desc: "IPv4", host: "192.0.2.10", want: "192.0.2.10"},
		{desc: "IPv4 with port", host: "192.0.2.10:8080", want: "192.0.2.10"},
		{desc: "IPv6 in brackets", host: "[::1]", want: "[::1]"},
		{desc: "IPv6 with port", host: "[::1]:80", want: "[::1]"},
		{desc: "bare IPv6", host: "::1", want: "[::1]"},
		{desc: "bare IPv6 with a trailing dot", host: "::1.", want: "[::1]"},
		{desc: "IPv6 long form and upper case", host: "[2001:DB8:0::1]:443", want: "[2001:db8::1]"},
		{desc: "IPv4 in brackets", host: "[192.0.2.1]", want: "192.0.2.1"},
		{desc: "IPv4-mapped IPv6", host: "[::ffff:192.0.2.1]:80", want: "192.0.2.1"},
		{desc: "bare IPv4-mapped IPv6", host: "::ffff:192.0.2.1", want: "192.0.2.1"},
		{desc: "IPv6 with zone kept whole", host: "[FE80::1%25eth0]:80", want: "[fe80::1%25eth0]"},
		{desc: "bracketed non-address kept", host: "[Not-An-Address]:1", want: "[not-an-address]"},
		{desc: "text after the bracket dropped", host: "[::1]x", want: "[::1]"},
		{desc: "unclosed bracket", host: "[::1", want: "[::1"},
		{desc: "colons, not an address", host: "A:B:C", want: "a:b:c"},
		{desc: "non-ASCII bytes kept", host: "ÄBC.example", want: "Äbc.example"},
		{desc: "longest name kept", host: long, want: long},
		{desc: "longest name with port and dot", host: strings.ToUpper(long) + ".:80", want: long},
		{desc: "longer name", host: long + "a", want: Long},
		{desc: "header-long name", host: strings.Repeat("A", 1<<20) + ":80", want: Long},
		{desc: "long bracketed non-address", host: "[" + long + "]", want: Long},
		{desc: "the long key itself", host: Long, want: Long},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got := Canonical(tc.host)
			if got != tc.want {
				t.Errorf("Canonical(%.40q) = %.40q, want %.40q", tc.host, got, tc.want)
			}
			if again := Canonical(got); again != got {
				t.Errorf("Canonical(%.40q) = %.40q, not its own key", got, again)
			}
		})
	}
}

// TestCanonicalSpellingsAgree holds the spellings Traefik routes to one router to one key.
func TestCanonicalSpellingsAgree(t *testing.T) {
	for _, set := range [][]string{
		{"example.com", "EXAMPLE.com", "example.com.", "example.com:1", "Example.COM:8080", "EXAMPLE.COM.:443"},
		{"[::1]", "[::1]:80", "::1", "[0:0::1]:8080", "[0000::0001]"},
	} {
		want := Canonical(set[0])
		for _, h := range set[1:] {
			if got := Canonical(h); got != want {
				t.Errorf("Canonical(%q) = %q, want %q, as for %q", h, got, want, set[0])
			}
		}
	}
}

// interpreted reports whether the test runs under Yaegi: there runtime.Caller sees the
// interpreter's own frames rather than this file.
func interpreted() bool {
	_, file, _, ok := runtime.Caller(0)
	return !ok || !strings.HasSuffix(file, "hostkey_test.go")
}

func TestCanonicalDoesNotAllocateWhenCanonical(t *testing.T) {
	if interpreted() {
		t.Skip("allocation counts measure the interpreter under Yaegi")
	}
	for _, h := range []string{"example.com", "a.b.example.org", "192.0.2.10", "[::1]", "[2001:db8::1]", "", Long} {
		if n := testing.AllocsPerRun(100, func() { sink = Canonical(h) }); n != 0 {
			t.Errorf("Canonical(%q) allocates %v times, want 0", h, n)
		}
	}
	// Nor when it only cuts: a port, trailing dots.
	for _, h := range []string{"example.com:8080", "example.com.", "[::1]:80", strings.Repeat("a", MaxLen+1)} {
		if n := testing.AllocsPerRun(100, func() { sink = Canonical(h) }); n != 0 {
			t.Errorf("Canonical(%q) allocates %v times, want 0", h, n)
		}
	}
}

var sink string

// canonicalSeeds are hosts, odd and ordinary, that FuzzCanonical starts from and that
// TestCanonicalSeeds checks where fuzzing does not run (yaegi test runs no fuzz test).
var canonicalSeeds = []string{
	"", ".", "..", ":", "::", "[", "]", "[]", "[:]", "[::1]", "[::1]:80", "::1", "::1.",
	"a:b", "a:b:c", "[a:b]", "[a:b", "a.:80", "a:80.", "a..b", "x.Co.UK.", "1.2.3.4",
	"1.2.3.4:", "::ffff:1.2.3.4", "[fe80::1%eth0]", "ÄBC.example.com", "\xff\xfe.de",
	"a.b.co.uk:443", "example.com..", "[2001:db8::1]x", ".[].A", "[::ffff:1.2.3.4]:1",
	"<long>", "[%]", "[::%25]", "::%25",
}

// checkCanonical fails t unless Canonical(host) is its own key, lower case, without a
// trailing dot, and no longer than MaxLen.
func checkCanonical(t *testing.T, host string) {
	t.Helper()
	got := Canonical(host)
	if again := Canonical(got); again != got {
		t.Errorf("Canonical(%q) = %q, but Canonical(%q) = %q", host, got, got, again)
	}
	if len(got) > MaxLen {
		t.Errorf("Canonical(%q) = %q: %d bytes, want at most %d", host, got, len(got), MaxLen)
	}
	if strings.ContainsAny(got, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		t.Errorf("Canonical(%q) = %q holds upper case", host, got)
	}
	if strings.HasSuffix(got, ".") {
		t.Errorf("Canonical(%q) = %q ends with a dot", host, got)
	}
	if strings.ToLower(host) == host && !strings.HasSuffix(host, ".") && !strings.ContainsAny(host, ":[") && len(host) <= MaxLen && got != host {
		t.Errorf("Canonical(%q) = %q, want the host as is", host, got)
	}
}

func TestCanonicalSeeds(t *testing.T) {
	for _, s := range canonicalSeeds {
		checkCanonical(t, s)
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add(s)
	}
	f.Fuzz(checkCanonical)
}

// BenchmarkCanonical is a canonical host's key, the case of nearly every request: under Yaegi
// (scripts/yaegi-cost.sh core/hostkey BenchmarkCanonical) what each protection's key costs.
func BenchmarkCanonical(b *testing.B) {
	h := "www.example.com"
	for i := 0; i < b.N; i++ {
		sink = Canonical(h)
	}
}
