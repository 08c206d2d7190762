// Package admin is Weir's operator face: who may reach it (a bearer token compared in
// constant time, or a signed session the sign-in form gives; CIDRs matched against the
// connection's address narrowing who may present it; the Host names it answers for; a brake
// on failed attempts per address), and the HTTP API and page
// under admin.path that show and steer one middleware's engine: its breakers, limiter,
// miss-rate anomalies and store, its metrics, and purges.
//
// It knows nothing of how the engine works. The engine implements Engine and hands in plain
// values; admin turns requests into calls and values into JSON and HTML. It imports only the
// standard library, so its tests run without an engine.
package admin
