package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxBody bounds what an API request may send.
const maxBody = 64 << 10

// purgeTimeout bounds one purge: a purge of a prefix or of everything walks a shared store
// in batches.
const purgeTimeout = 30 * time.Second

// contentTypeJSON is what every API answer is, and what every action must send: a form on
// another site cannot send it without the browser asking first, so a logged-in browser
// cannot be made to act by another page.
const contentTypeJSON = "application/json"

// Handler serves the admin under one path. The zero value is not usable; build it with
// NewHandler.
type Handler struct {
	path   string
	access *Access
	engine Engine
	now    func() time.Time
}

// NewHandler serves engine's admin under path ("/_weir") to those access lets in. now reads
// the clock (nil: time.Now).
func NewHandler(path string, access *Access, engine Engine, now func() time.Time) *Handler {
	if now == nil {
		now = time.Now
	}
	return &Handler{path: strings.TrimSuffix(path, "/"), access: access, engine: engine, now: now}
}

// Under tells whether a request path is the admin's: path itself or below it, never a
// longer name that starts the same ("/_weirdo").
func Under(base, p string) bool {
	if base == "" || !strings.HasPrefix(p, base) {
		return false
	}
	return len(p) == len(base) || p[len(base)] == '/' || p[len(base)] == '?'
}

// ServeHTTP answers one admin request. Nothing under the admin's path reaches the origin
// or is stored, whoever asks.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	if !h.access.ServesHost(r.Host) {
		// As if no admin were there: nothing says there is one on another name.
		hdr.Set("Cache-Status", "Weir; fwd=bypass")
		hdr.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("404 page not found\n"))
		return
	}
	hdr.Set("Cache-Status", "Weir; fwd=bypass; detail=admin")
	rel := strings.TrimPrefix(r.URL.Path, h.path)
	switch rel {
	case "":
		// The page's links are relative to the folder: "/_weir" would send them to "/".
		http.Redirect(w, r, h.path+"/", http.StatusMovedPermanently)
		return
	case "/login":
		h.login(w, r)
		return
	case "/page.css":
		// The style sheet reveals nothing, and the login form uses it.
		h.asset(w, r, "text/css; charset=utf-8", pageCSS)
		return
	}
	v := h.access.Check(r, h.now())
	if v.Result == Throttled {
		Throttle(w, v.RetryAfter)
		return
	}
	if v.Result != Granted {
		if v.ClearCookie {
			h.clearCookie(w, r)
		}
		h.forbidden(w, r, rel, v.Why)
		return
	}
	switch rel {
	case "/", "/index.html":
		h.asset(w, r, "text/html; charset=utf-8", pageHTML)
	case "/page.js":
		h.asset(w, r, "text/javascript; charset=utf-8", pageJS)
	case "/logout":
		h.logout(w, r)
	case "/metrics":
		h.metrics(w, r)
	case "/api/state":
		if !h.method(w, r, http.MethodGet) {
			return
		}
		writeJSON(w, http.StatusOK, h.engine.State(h.now()))
	default:
		if consolePaths[rel] {
			h.console(w, r, rel)
			return
		}
		if strings.HasPrefix(rel, "/api/") {
			h.action(w, r, rel[len("/api/"):])
			return
		}
		writeError(w, http.StatusNotFound, "no such admin page: "+rel)
	}
}

// Throttle answers 429 to a client the brake holds back, as Weir answers every refusal:
// Retry-After in whole seconds, rounded up, and the reason in Cache-Status.
func Throttle(w http.ResponseWriter, retryAfter time.Duration) {
	seconds := int64((retryAfter + time.Second - 1) / time.Second)
	if seconds < 1 {
		seconds = 1
	}
	hdr := w.Header()
	hdr.Set("Retry-After", strconv.FormatInt(seconds, 10))
	hdr.Set("Cache-Status", "Weir; fwd=bypass; detail="+DetailThrottled)
	// The body of every refusal of Weir's to a JSON client (core's refusalBody).
	writeJSON(w, http.StatusTooManyRequests, map[string]interface{}{"error": DetailThrottled, "retryAfter": seconds})
}

// method answers 405 unless r uses one of the allowed methods (HEAD goes with GET).
func (h *Handler) method(w http.ResponseWriter, r *http.Request, allowed string) bool {
	if r.Method == allowed || (allowed == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	w.Header().Set("Allow", allowed)
	writeError(w, http.StatusMethodNotAllowed, r.Method+" is not allowed here; use "+allowed)
	return false
}

func (h *Handler) asset(w http.ResponseWriter, r *http.Request, contentType, body string) {
	if !h.method(w, r, http.MethodGet) {
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", contentType)
	// The page loads nothing from elsewhere and can be framed by no one.
	hdr.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hdr.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write([]byte(body))
	}
}

func (h *Handler) metrics(w http.ResponseWriter, r *http.Request) {
	if !h.method(w, r, http.MethodGet) {
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var b strings.Builder
	if err := h.engine.WriteMetrics(&b); err != nil {
		writeError(w, http.StatusInternalServerError, "writing metrics: "+err.Error())
		return
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write([]byte(b.String()))
	}
}

// forbidden answers 403 for why. A browser asking for the page gets a sign-in form with it,
// so that an operator with the token can sign in; the form reveals nothing of the engine.
func (h *Handler) forbidden(w http.ResponseWriter, r *http.Request, rel, why string) {
	if r.Method == http.MethodGet && (rel == "/" || rel == "/index.html") && h.access.Configured() && why != whyOutside {
		warning := ""
		if !Secure(r) && !loopback(r.RemoteAddr) {
			warning = plainHTTPWarning
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src data:; form-action 'self'; frame-ancestors 'none'")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(strings.NewReplacer("{{action}}", h.path+"/login", "{{warning}}", warning).Replace(loginHTML)))
		return
	}
	writeError(w, http.StatusForbidden, why)
}

// login takes the token from the page's form and gives a session in a cookie for the
// admin's path only: unreadable by scripts, never sent by another site's request, sent
// only over HTTPS when the page was reached over HTTPS, and never the token itself.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if !h.method(w, r, http.MethodPost) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	now := h.now()
	v := h.access.SignIn(r, now, r.PostFormValue("token"))
	if v.Result == Throttled {
		Throttle(w, v.RetryAfter)
		return
	}
	if v.Result != Granted {
		writeError(w, http.StatusForbidden, v.Why)
		return
	}
	value, _ := newSession(h.access.Token, now)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: h.path + "/",
		MaxAge: int(SessionLifetime / time.Second), HttpOnly: true, Secure: Secure(r), SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, h.path+"/", http.StatusSeeOther)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if !h.method(w, r, http.MethodPost) {
		return
	}
	h.clearCookie(w, r)
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// clearCookie drops the session cookie.
func (h *Handler) clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: h.path + "/", MaxAge: -1,
		HttpOnly: true, Secure: Secure(r), SameSite: http.SameSiteStrictMode})
}

// actionRequest is the body of every action; each action reads the fields it needs.
type actionRequest struct {
	Key string `json:"key"`
	// For is how long to open by hand ("30s"; empty: the key's openFor).
	For string `json:"for"`
	// Params are an override's parameters, as in breaker.overrides after the key.
	Params string `json:"params"`
	// What a purge drops (Purge's fields). Not Purge embedded: under Yaegi v0.16.1,
	// encoding/json does not promote an embedded struct's fields (docs/yaegi.md).
	URL    string `json:"url"`
	Prefix string `json:"prefix"`
	Host   string `json:"host"`
	Tag    string `json:"tag"`
	All    bool   `json:"all"`
	User   string `json:"user"`
	// Name and Rate are a pace's: a host or domain, and "3/10s" ("" or "off": clear it).
	Name string `json:"name"`
	Rate string `json:"rate"`
}

// action runs one of the API's actions: a POST with a JSON body.
func (h *Handler) action(w http.ResponseWriter, r *http.Request, name string) {
	if !h.method(w, r, http.MethodPost) {
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, contentTypeJSON) {
		writeError(w, http.StatusUnsupportedMediaType, "send the action as "+contentTypeJSON)
		return
	}
	var req actionRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "reading the request: "+err.Error())
		return
	}
	req.Key = strings.TrimSpace(req.Key)
	if name != "purge" && name != "pacing" && req.Key == "" {
		writeError(w, http.StatusBadRequest, "key: a breaker's scope key is needed")
		return
	}
	var err error
	result := map[string]interface{}{"ok": true}
	switch name {
	case "breakers/open":
		var d time.Duration
		if d, err = parseFor(req.For); err == nil {
			err = h.engine.OpenBreaker(req.Key, d)
		}
	case "breakers/close":
		err = h.engine.CloseBreaker(req.Key)
	case "breakers/override":
		err = h.engine.SetOverride(req.Key, req.Params)
	case "breakers/reset":
		err = h.engine.RemoveOverride(req.Key)
	case "breakers/declare":
		err = h.engine.DeclareBreaker(req.Key)
	case "pacing":
		err = h.pace(req.Name, req.Rate)
	case "purge":
		var n int
		if n, err = h.purge(r.Context(), Purge{URL: req.URL, Prefix: req.Prefix, Host: req.Host, Tag: req.Tag, All: req.All, User: req.User}); err == nil {
			result["purged"] = n
		}
	default:
		writeError(w, http.StatusNotFound, "no such action: "+name)
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, result)
}

// pace sets name's pace at rate, or clears the operator's ("" or "off").
func (h *Handler) pace(name, rate string) error {
	name = strings.TrimSpace(name)
	if name == "" {
		return errors.New("name: a host or domain to pace is needed")
	}
	rate = strings.TrimSpace(rate)
	if rate == "" || strings.EqualFold(rate, "off") {
		return h.engine.ClearPace(name)
	}
	return h.engine.SetPace(name, rate)
}

func (h *Handler) purge(ctx context.Context, p Purge) (int, error) {
	set := 0
	for _, v := range []string{p.URL, p.Prefix, p.Host, p.Tag} {
		if strings.TrimSpace(v) != "" {
			set++
		}
	}
	if p.All {
		set++
	}
	if p.User != "" && set == 1 && strings.TrimSpace(p.URL) != "" {
		// One URL of one user's.
		set = 0
	}
	if p.User != "" {
		set++
	}
	if set != 1 {
		return 0, errors.New("purge: name exactly one of url, prefix, host, tag, all or user (user may come with url)")
	}
	ctx, cancel := context.WithTimeout(ctx, purgeTimeout)
	defer cancel()
	return h.engine.Purge(ctx, p)
}

// maxOpenSeconds bounds a bare number of seconds: about 292 years fit a time.Duration.
const maxOpenSeconds = 1e9

// parseFor reads an open's duration: a Go duration or a bare number of seconds.
func parseFor(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, numErr := strconv.ParseFloat(s, 64)
		if numErr != nil || secs != secs || secs > maxOpenSeconds {
			return 0, fmt.Errorf("for: %q is not a duration such as \"30s\"", s)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return 0, fmt.Errorf("for: %q must not be negative", s)
	}
	return d, nil
}

func writeJSON(w http.ResponseWriter, status int, v interface{}) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(status)
	w.Write(body)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
