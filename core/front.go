package core

import "net/http"

// Front is the handler Traefik is given: h itself, or with admission or budgets on, h
// behind them. They decide in front of h.ServeHTTP, before any lookup, so that with both
// off the hit path pays nothing for them, not even a check (docs/yaegi.md: every value of a
// function's body costs each call a frame slot).
//
// With key.scheme: forwarded, forwardedScheme comes first (core/keyscheme.go).
func (h *Handler) Front() http.Handler {
	var f http.Handler = h
	if h.budgets != nil || h.admission != nil {
		f = &front{h: h}
	}
	if h.s.KeyScheme == KeySchemeForwarded {
		f = &forwardedScheme{front: f}
	}
	return f
}

// front is a Handler behind admission and its budgets.
type front struct {
	h *Handler
}

// ServeHTTP serves the admin first, whatever the load and the budgets (the operator
// must reach it most when they refuse), refuses what admission refuses, answers 429 to a
// request over budget, and serves the others.
func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := f.h
	if h.admin != nil && adminRequest(h, w, r) {
		return
	}
	if h.admission != nil {
		admitted(h, w, r)
		return
	}
	// No admission: budgets, or there would be no front. budgeted written out, one call
	// less.
	if overBudget(h, w, r) {
		return
	}
	h.ServeHTTP(w, r)
}

// budgeted serves r unless it is over budget.
func budgeted(h *Handler, w http.ResponseWriter, r *http.Request) {
	if h.budgets != nil && overBudget(h, w, r) {
		return
	}
	h.ServeHTTP(w, r)
}
