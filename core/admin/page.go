package admin

// The page is three small assets served by the admin itself: it loads nothing from
// elsewhere (no CDN, no font), so it works on a network that reaches only Traefik, and its
// Content-Security-Policy allows nothing else. The script polls api/state every two seconds
// and sends actions as JSON; elements carry data-key and class names that tests drive. Both
// pages name an empty icon: a browser would otherwise ask the site's root for /favicon.ico,
// outside admin.path, and reach the origin.

const pageHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Weir admin</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="page.css">
<script src="page.js" defer></script>
</head>
<body>
<header>
  <h1>Weir <span id="middleware"></span></h1>
  <span id="updated"></span>
  <a href="metrics">metrics</a>
  <button id="logout" type="button">sign out</button>
</header>
<p id="message" role="status"></p>
<section>
  <h2>Breakers</h2>
  <table id="breakers">
    <thead><tr><th>scope key</th><th>state</th><th>time left</th><th>opened by</th><th>last failure</th><th>trips</th><th>window</th><th>parameters</th><th>actions</th></tr></thead>
    <tbody></tbody>
  </table>
  <form id="declare">
    <label>Add a scope key <input name="key" placeholder="api.example.com" required></label>
    <button type="submit">add</button>
  </form>
  <p class="defaults">Defaults: <span id="defaults"></span></p>
</section>
<section>
  <h2>Origin limiter</h2>
  <p id="limiter"></p>
  <div class="pair">
    <table id="partitions"><thead><tr><th>busiest partitions</th><th>in flight</th><th>queued</th></tr></thead><tbody></tbody></table>
    <table id="hosts"><thead><tr><th>busiest hosts</th><th>in flight</th><th>queued</th></tr></thead><tbody></tbody></table>
  </div>
</section>
<section>
  <h2>Refusals</h2>
  <table id="refusals"><thead><tr><th>reason</th><th>answer</th><th>refused since start</th></tr></thead><tbody></tbody></table>
</section>
<section>
  <h2>Pacing</h2>
  <table id="pacing"><thead><tr><th>host or domain</th><th>rate</th><th>origin</th><th>actions</th></tr></thead><tbody></tbody></table>
  <form id="pace">
    <label>Pace <input name="name" placeholder="feeds.example.com" required></label>
    <label>at <input name="rate" placeholder="3/10s" required></label>
    <button type="submit">set</button>
  </form>
</section>
<section>
  <h2>Miss-rate anomalies</h2>
  <table id="anomalies"><thead><tr><th>partition</th><th>misses</th><th>lookups</th><th>ratio</th><th>throttled</th></tr></thead><tbody></tbody></table>
</section>
<section>
  <h2>Store</h2>
  <p id="store"></p>
</section>
<section>
  <h2>Purge</h2>
  <form id="purge">
    <select name="kind">
      <option value="url">one URL, all its variants</option>
      <option value="prefix">a URL prefix</option>
      <option value="host">a host</option>
      <option value="tag">a surrogate key (Surrogate-Key, Cache-Tag)</option>
      <option value="all">everything</option>
    </select>
    <input name="value" placeholder="https://example.com/page">
    <button type="submit">purge</button>
  </form>
</section>
</body>
</html>
`

const pageCSS = `body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
header{display:flex;gap:1em;align-items:baseline}
h1{font-size:1.4em;margin:0}h2{font-size:1.1em;margin:1.4em 0 .4em}
table{border-collapse:collapse;margin:.3em 0}
th,td{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4}
.state-open td.state{color:#fff;background:#c0392b}
.state-half-open td.state{background:#f39c12}
.state-closed td.state{color:#1e8449}
.override{font-weight:bold;color:#8e44ad}
.override::after{content:" (override)";font-weight:normal;font-size:.85em}
.pair{display:flex;gap:2em;flex-wrap:wrap}
#message{min-height:1.4em;color:#1e8449}#message.error{color:#c0392b}
.warning{color:#c0392b;border:1px solid #c0392b;padding:.4em .6em}
.actions form{display:inline-flex;gap:.3em;margin:.1em .3em .1em 0}
.actions>button{margin-right:.3em}
.actions input{width:5em}
td.left,td.window,.param{white-space:nowrap}
#updated,.defaults{color:#777}
.origin-operator td.origin{font-weight:bold;color:#8e44ad}
`

const pageJS = `"use strict";
const $ = (s, el) => (el || document).querySelector(s);
function text(tag, s, cls) { const e = document.createElement(tag); e.textContent = s; if (cls) e.className = cls; return e; }
function say(msg, error) { const m = $("#message"); m.textContent = msg; m.className = error ? "error" : ""; }
async function call(action, body) {
  const res = await fetch("api/" + action, {method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  const data = await res.json().catch(() => ({error: res.statusText}));
  if (!res.ok) { say(action + ": " + (data.error || res.status), true); return null; }
  return data;
}
function fmtSeconds(s) { return s > 0 ? s.toFixed(1) + "s" : ""; }
function paramList(params) {
  const ul = document.createElement("span");
  for (const p of params || []) {
    const e = text("span", p.name + "=" + p.value, p.override ? "override param" : "param");
    e.dataset.param = p.name;
    ul.appendChild(e); ul.appendChild(document.createTextNode(" "));
  }
  return ul;
}
function miniForm(cls, fields, label, onsubmit) {
  const f = document.createElement("form"); f.className = cls;
  for (const [name, ph] of fields) { const i = document.createElement("input"); i.name = name; i.placeholder = ph; f.appendChild(i); }
  const b = text("button", label); b.type = "submit"; f.appendChild(b);
  f.addEventListener("submit", async ev => { ev.preventDefault(); if (await onsubmit(f)) f.reset(); });
  return f;
}
function params(f) {
  const parts = [];
  for (const n of ["window", "failureRatio", "openFor", "minRequests", "maxOpenFor"]) {
    const i = f.elements[n]; if (i && i.value.trim()) parts.push(n + "=" + i.value.trim());
  }
  return parts.join(" ");
}
// A breaker's row is built once and then updated in place, so that a refresh never takes a
// form the operator is typing in or a button being clicked from under them.
function breakerRow(key) {
  const tr = document.createElement("tr");
  tr.dataset.key = key;
  for (const cls of ["key", "state", "left", "opener", "last", "trips", "window", "params"]) {
    tr.appendChild(text("td", "", cls));
  }
  $("td.key", tr).textContent = key;
  const a = document.createElement("td"); a.className = "actions";
  a.appendChild(miniForm("open", [["for", "30s"]], "open", f => act("breakers/open", {key, for: f.elements.for.value})));
  const close = text("button", "close", "close"); close.type = "button";
  close.addEventListener("click", () => act("breakers/close", {key}));
  a.appendChild(close);
  a.appendChild(miniForm("tune", [["window", "window"], ["failureRatio", "ratio"], ["openFor", "openFor"]], "tune",
    f => act("breakers/override", {key, params: params(f)})));
  const reset = text("button", "reset", "reset"); reset.type = "button";
  reset.addEventListener("click", () => act("breakers/reset", {key}));
  a.appendChild(reset);
  tr.appendChild(a);
  return tr;
}
function setText(el, s) { if (el.textContent !== s) el.textContent = s; }
function showBreaker(tr, b) {
  const cls = "state-" + b.state;
  if (tr.className !== cls) tr.className = cls;
  setText($("td.state", tr), b.state);
  setText($("td.left", tr), fmtSeconds(b.openLeftSeconds));
  setText($("td.opener", tr), (b.openedBy || "") + (b.openedBy === "auto" && b.reason ? " (" + b.reason + ")" : "") +
    (b.probesOK ? ", " + b.probesOK + " probes ok" : ""));
  setText($("td.last", tr), b.lastStatus ? String(b.lastStatus) : "");
  setText($("td.trips", tr), String(b.trips));
  setText($("td.window", tr), b.failures + "/" + b.requests + " failed" + (b.slow ? ", " + b.slow + " slow" : ""));
  const p = $("td.params", tr), shown = JSON.stringify(b.params || []);
  if (p.dataset.shown !== shown) { p.replaceChildren(paramList(b.params)); p.dataset.shown = shown; }
}
function fillBreakers(list) {
  const tb = $("#breakers tbody");
  const rows = new Map();
  for (const tr of tb.rows) rows.set(tr.dataset.key, tr);
  list.forEach((b, i) => {
    const tr = rows.get(b.key) || breakerRow(b.key);
    rows.delete(b.key);
    showBreaker(tr, b);
    // Moved only when out of place: moving a row would drop the focus of its form.
    if (tb.rows[i] !== tr) tb.insertBefore(tr, tb.rows[i] || null);
  });
  for (const tr of rows.values()) tr.remove();
}
function fill(sel, rows, make) {
  const tb = $(sel + " tbody");
  tb.replaceChildren(...rows.map(make));
}
// A pace's row is rebuilt only when what it shows changed, so that a refresh never takes its
// button from under a click.
function fillPacing(list) {
  const tb = $("#pacing tbody");
  const rows = new Map();
  for (const tr of tb.rows) rows.set(tr.dataset.key, tr);
  list.forEach((p, i) => {
    const shown = JSON.stringify(p);
    let tr = rows.get(p.name);
    rows.delete(p.name);
    if (!tr || tr.dataset.shown !== shown) {
      const fresh = paceRow(p);
      fresh.dataset.shown = shown;
      if (tr) tr.replaceWith(fresh);
      tr = fresh;
    }
    if (tb.rows[i] !== tr) tb.insertBefore(tr, tb.rows[i] || null);
  });
  for (const tr of rows.values()) tr.remove();
}
function paceRow(p) {
  const tr = document.createElement("tr");
  tr.dataset.key = p.name;
  tr.className = "origin-" + p.origin;
  tr.append(text("td", p.name, "name"), text("td", p.rate, "rate"),
    text("td", p.origin + (p.configured ? " (configured: " + p.configured + ")" : ""), "origin"));
  const a = document.createElement("td"); a.className = "actions";
  if (p.origin === "operator") {
    const clear = text("button", "clear", "clear"); clear.type = "button";
    clear.addEventListener("click", () => act("pacing", {name: p.name, rate: ""}, p.name));
    a.appendChild(clear);
  }
  tr.appendChild(a);
  return tr;
}
function occupant(o) { const tr = document.createElement("tr"); tr.dataset.key = o.key;
  tr.append(text("td", o.key), text("td", String(o.inFlight)), text("td", String(o.queued))); return tr; }
function refusal(f) { const tr = document.createElement("tr"); tr.dataset.key = f.reason;
  tr.append(text("td", f.reason, "reason"), text("td", String(f.status)), text("td", String(f.count), "count")); return tr; }
function anomaly(a) { const tr = document.createElement("tr"); tr.dataset.key = a.partition;
  tr.append(text("td", a.partition), text("td", String(a.misses)), text("td", String(a.lookups)),
    text("td", a.ratio.toFixed(2)), text("td", a.throttled ? "yes" : "no")); return tr; }
async function refresh() {
  let res;
  try { res = await fetch("api/state", {credentials: "same-origin"}); } catch (e) { say("unreachable: " + e, true); return; }
  if (!res.ok) { say("state: " + res.status, true); return; }
  const s = await res.json();
  $("#middleware").textContent = s.middleware;
  $("#updated").textContent = "as of " + new Date(s.time).toLocaleTimeString();
  $("#defaults").replaceChildren(paramList(s.defaults));
  fillBreakers(s.breakers || []);
  const l = s.limiter;
  $("#limiter").textContent = l.inFlight + " of " + l.maxConcurrent + " in flight, " + l.queued + " of " + l.maxQueue +
    " queued, " + l.uploads + " of " + l.maxUpload + " uploads";
  fill("#partitions", l.partitions || [], occupant);
  fill("#hosts", l.hosts || [], occupant);
  fill("#refusals", s.refusals || [], refusal);
  fillPacing(s.pacing || []);
  fill("#anomalies", s.anomalies || [], anomaly);
  const st = s.store;
  $("#store").textContent = st.kind + (st.breaker ? ", store breaker " + st.breaker : "") +
    (st.nearCache ? ", near cache " + st.nearCache : "") + ", " + st.entries + (st.entries === 1 ? " entry, " : " entries, ") +
    st.bytes + " bytes";
}
// act runs an action and tells whether it succeeded; what names its object in the message
// (default: the key).
async function act(action, body, what) {
  const r = await call(action, body);
  const label = what !== undefined ? what : body.key;
  if (r) { say(action + (label ? " " + label : "") + ": done" + (r.purged !== undefined ? " (" + r.purged + " dropped)" : "")); }
  refresh();
  return r !== null;
}
document.addEventListener("DOMContentLoaded", () => {
  $("#declare").addEventListener("submit", async ev => {
    ev.preventDefault();
    if (await act("breakers/declare", {key: ev.target.elements.key.value})) ev.target.reset();
  });
  $("#pace").addEventListener("submit", async ev => {
    ev.preventDefault();
    const f = ev.target, name = f.elements.name.value.trim(), rate = f.elements.rate.value.trim();
    if (await act("pacing", {name, rate}, name + " at " + rate)) f.reset();
  });
  $("#purge").addEventListener("submit", async ev => {
    ev.preventDefault();
    const f = ev.target, kind = f.elements.kind.value, v = f.elements.value.value.trim();
    if (await act("purge", kind === "all" ? {all: true} : {[kind]: v}, kind === "all" ? "everything" : kind + " " + v)) {
      f.elements.value.value = "";
    }
  });
  $("#logout").addEventListener("click", async () => { await call("../logout", {}); location.reload(); });
  refresh();
  setInterval(refresh, 2000);
});
`

const loginHTML = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Weir admin: sign in</title><link rel="icon" href="data:,"><link rel="stylesheet" href="page.css"></head>
<body>
<h1>Weir admin</h1>
<p>This page needs the operator's token (admin.token).</p>
{{warning}}<form method="post" action="{{action}}">
<label>Token <input type="password" name="token" autocomplete="current-password" required></label>
<button type="submit">sign in</button>
</form>
</body>
</html>
`

// plainHTTPWarning is shown on the sign-in form when it was reached over plain HTTP from an
// address that is not loopback: the token would cross the network readable.
const plainHTTPWarning = `<p class="warning" role="alert"><strong>Warning:</strong> this page was reached over plain HTTP. The token you type, and the session cookie that follows, cross the network unencrypted: serve admin.path over HTTPS only.</p>
`
