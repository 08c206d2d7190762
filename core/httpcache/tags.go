package httpcache

import (
	"net/http"
	"strings"

	"github.com/weirproxy/weir/core/entry"
)

// The fields an answer names its surrogate keys in, so that one purge of a key drops every
// answer carrying it (store.Purger.PurgeTag). Both are kept in the stored answer as the origin
// sent them: Weir only reads them.
const (
	// FieldSurrogateKey is Fastly's field: keys separated by spaces.
	FieldSurrogateKey = "Surrogate-Key"
	// FieldCacheTag is Cloudflare's field: tags separated by commas.
	FieldCacheTag = "Cache-Tag"
)

// Tags returns the tags of an answer with header h: the keys of its Surrogate-Key lines,
// split at spaces and tabs, then the tags of its Cache-Tag lines, split at commas, with the
// spaces and tabs around each trimmed. Each tag is kept once, in the order first seen, and
// compared byte for byte (case matters: "A" and "a" are two tags). Tags that entry.ValidTag
// refuses (longer than entry.MaxTagLen bytes, or holding a control character) are left out
// whole, never cut: a shortened tag could name another one. Past entry.MaxTags tags the
// rest are left out. Nil when there are none.
func Tags(h http.Header) []string {
	keys, tags := h[FieldSurrogateKey], h[FieldCacheTag]
	if len(keys) == 0 && len(tags) == 0 {
		return nil
	}
	var out []string
	// seen finds repeats with one map read each: a field may repeat one tag many times, and
	// under Yaegi each comparison of a scan through out is interpreted.
	seen := make(map[string]bool)
	for _, line := range keys {
		out = addTags(out, seen, strings.Split(strings.ReplaceAll(line, "\t", " "), " "))
	}
	for _, line := range tags {
		out = addTags(out, seen, strings.Split(line, ","))
	}
	return out
}

// addTags appends to out each of parts, trimmed, that is a valid tag not seen yet, while out
// holds fewer than entry.MaxTags.
func addTags(out []string, seen map[string]bool, parts []string) []string {
	for _, t := range parts {
		if len(out) >= entry.MaxTags {
			return out
		}
		t = strings.Trim(t, " \t")
		if seen[t] || !entry.ValidTag(t) {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}
