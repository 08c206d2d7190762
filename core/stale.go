package core

import (
	"net/http"
	"time"

	"github.com/weirproxy/weir/core/httpcache"
	"github.com/weirproxy/weir/core/store"
)

// Stale answers (RFC 5861): a stored answer past its freshness stands in for the origin's
// while its stale-while-revalidate window lasts (and a background refresh runs), and for an
// origin that failed while its stale-if-error window lasts. The windows are the origin's
// own directives or, where it sent none, the operator's stale policy (stale.*), given when
// the answer is stored (httpcache.Policy). Refusals say which window answers them
// (reason.stale, shed.go).

// StaleSettings are the operator's stale policy (stale.*). Zero fields: off.
type StaleSettings struct {
	// IfError is the stale-if-error window of an answer whose origin sent none: how long
	// past freshness it answers when the origin fails (a 500, 502, 503 or 504, a timeout, a
	// dropped or refused connection) or a protection keeps the request from the origin.
	IfError time.Duration
	// WhileRevalidate is the stale-while-revalidate window of an answer whose origin sent
	// none: how long past freshness it answers at once while one background refresh runs.
	WhileRevalidate time.Duration
}

// Why a stale answer was served, beside the refusals' reasons: weir_stale_total's reasons
// and the answer's Cache-Status detail.
const (
	// staleRevalidating: within stale-while-revalidate, a refresh under way.
	staleRevalidating = "stale-while-revalidate"
	// staleOriginError: the origin answered 500, 502, 503 or 504 (Traefik's answers for a
	// timeout and a dropped or refused connection), or its answer broke off.
	staleOriginError = "stale-if-error"
	// staleCoalesceTimeout: a follower waited coalesce.followerMaxWait for its leader.
	staleCoalesceTimeout = "coalesce-timeout"
)

// staleCauses are the reasons a stale answer is counted under (weir_stale_total): the ones
// above, then every refusal's.
func staleCauses() []string {
	return append([]string{staleRevalidating, staleOriginError, staleCoalesceTimeout}, reasonNames()...)
}

// localStale is what this process's memory holds for r that may answer a refusal made before
// any lookup (admission): the entry of a GET or HEAD without credentials, or of its variant,
// under the key the hit path looks up (scheme, host and RequestURI as sent). Local memory
// and no normalising: an instance refusing requests for overload neither asks the shared
// store nor spends a key's making on each refusal. Nil for none.
func localStale(h *Handler, r *http.Request) *store.Entry {
	ru := r.RequestURI
	if h.hot == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) || len(r.Header["Authorization"]) > 0 ||
		ru == "" || ru[0] != '/' {
		return nil
	}
	key := "http://" + r.Host + ru
	if r.TLS != nil {
		key = "https://" + r.Host + ru
	}
	ent := store.Lookup(h.hot, key)
	if ent != nil && ent.VaryIndex {
		ent = store.Lookup(h.hot, httpcache.VariantKey(httpcache.GenerationKey(key, ent), ent.Vary, r))
	}
	if ent == nil || ent.Pass || ent.VaryIndex || h.s.Now().After(ent.KeepUntil) {
		return nil
	}
	return ent
}
