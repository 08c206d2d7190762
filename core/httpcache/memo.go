package httpcache

import "sync"

// An origin sends the same Cache-Control line with every answer of a path
// (`max-age=3600`, `public, max-age=60`), and every answer Weir fetches has its directives
// read (ResponseControl) before anything else is decided. Parsing a line costs a miss
// hundreds of interpreted steps and allocations under Yaegi (docs/yaegi.md); a line read
// before is one map read.

// Bounds of the memo: lines longer than memoLineMax are parsed every time, and the memo
// starts over once it holds memoSize lines, so that an origin sending a new line with every
// answer costs it nothing but the parse.
const (
	memoLineMax = 128
	memoSize    = 256
)

// memo holds the directives of Cache-Control lines read lately. A Directives is a value: a
// caller gets its own copy, and nothing it does reaches the memo.
var memo struct {
	// mu guards lines.
	mu    sync.RWMutex
	lines map[string]Directives
}

// lineControl is ParseCacheControl of one field line, from the memo when the line was read
// lately.
func lineControl(line string) Directives {
	memo.mu.RLock()
	cc, ok := memo.lines[line]
	memo.mu.RUnlock()
	if ok {
		return cc
	}
	cc = ParseCacheControl([]string{line})
	if len(line) > memoLineMax {
		return cc
	}
	memo.mu.Lock()
	if memo.lines == nil || len(memo.lines) >= memoSize {
		memo.lines = make(map[string]Directives, memoSize)
	}
	memo.lines[line] = cc
	memo.mu.Unlock()
	return cc
}
