// Package httpcache holds the HTTP caching rules Weir follows, and nothing of its engine: the
// cache key of a request (RFC 3986 section 6, RFC 9111 sections 2 and 4.1), Cache-Control and
// the targeted cache-control fields (RFC 9111 section 5.2, RFC 9213, Edge Architecture 1.0),
// what may be stored and for how long (RFC 9111 sections 3 and 4.2), an answer's tags for
// purges (Surrogate-Key and Cache-Tag), conditional requests (RFC 9110 section 13) and ranges
// (RFC 9110 section 14).
//
// Its functions read requests, answers and stored entries and return values; they hold no
// state, start nothing, and call no store, origin or clock. It imports the standard library
// and core/entry, for the stored answer (entry.Entry, which core/store names store.Entry),
// and nothing else of Weir: the engine (package core) calls it, never the other way round.
//
// None of it is on the fresh hit path (core's Handler.ServeHTTP), which builds its key
// inline: under Yaegi each call is paid on every request.
package httpcache
