package admin

// The page is three small assets served by the admin itself: it loads nothing from
// elsewhere (no CDN, no font, no chart library), so it works on a network that reaches only
// Traefik, and its Content-Security-Policy allows nothing else. The script polls api/state
// and the console's endpoints (api/series, api/events, api/tables, api/fleet) every two
// seconds while the tab is visible, and not while it is hidden; it draws the overview's
// charts as inline SVG itself, each with its value in words and a table of the numbers;
// it sends actions as JSON; elements carry data-key and class names that tests drive. Both
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
<section id="overview">
  <h2>The last 15 minutes</h2>
  <div class="charts">
    <figure class="chart" data-chart="traffic"><figcaption>Requests a second: clients and origin</figcaption><svg viewBox="0 0 300 90" role="img"></svg><p class="now"></p></figure>
    <figure class="chart" data-chart="hits"><figcaption>Hit ratio</figcaption><svg viewBox="0 0 300 90" role="img"></svg><p class="now"></p></figure>
    <figure class="chart" data-chart="refusals"><figcaption>Refusals a second, by reason</figcaption><svg viewBox="0 0 300 90" role="img"></svg><p class="now"></p></figure>
    <figure class="chart" data-chart="stale"><figcaption>Stale answers a second</figcaption><svg viewBox="0 0 300 90" role="img"></svg><p class="now"></p></figure>
    <figure class="chart" data-chart="inflight"><figcaption>Origin requests in flight and the limiter's cap</figcaption><svg viewBox="0 0 300 90" role="img"></svg><p class="now"></p></figure>
    <figure class="chart" data-chart="latency"><figcaption>Origin latency, p50 and p95 (ms)</figcaption><svg viewBox="0 0 300 90" role="img"></svg><p class="now"></p></figure>
  </div>
  <details><summary>The numbers, the last 10 seconds</summary><div class="scroll"><table id="series-table"><thead></thead><tbody></tbody></table></div></details>
</section>
<section>
  <h2>Events</h2>
  <form id="event-filter">
    <label>kind <input name="kind" placeholder="breaker_opened" list="event-kinds"></label>
    <datalist id="event-kinds"></datalist>
    <label>host <input name="host" placeholder="api.example.com"></label>
    <button type="submit">filter</button>
  </form>
  <ol id="events"></ol>
</section>
<section>
  <h2>Hosts, the last 15 minutes</h2>
  <div class="scroll"><table id="host-table"><thead><tr><th>host</th><th title="estimated from one answer in 61">requests/s</th><th title="share of the requests answered by a fresh hit, estimated from one answer in 61">hit ratio</th><th>fetches/s</th><th>refused/s</th><th>stale/s</th><th>in flight</th><th>p95</th><th>breaker</th></tr></thead><tbody></tbody></table></div>
  <div class="pair">
    <div class="scroll"><table id="path-misses"><thead><tr><th>partitions with the most fetches</th><th>fetches</th><th>refused</th></tr></thead><tbody></tbody></table></div>
    <div class="scroll"><table id="path-refusals"><thead><tr><th>partitions with the most refusals</th><th>refused</th><th>fetches</th></tr></thead><tbody></tbody></table></div>
  </div>
</section>
<section>
  <h2>Look up a URL</h2>
  <form id="lookup">
    <label>URL <input name="url" placeholder="https://example.com/page" required></label>
    <button type="submit">look up</button>
  </form>
  <dl id="entry"></dl>
</section>
<section>
  <h2>Fleet</h2>
  <p id="fleet-note"></p>
  <table id="fleet"><thead><tr><th>instance</th><th>last seen</th></tr></thead><tbody></tbody></table>
</section>
<section>
  <h2>Breakers</h2>
  <div class="scroll"><table id="breakers">
    <thead><tr><th>scope key</th><th>state</th><th>time left</th><th>opened by</th><th>last failure</th><th>trips</th><th>window</th><th>parameters</th><th>actions</th></tr></thead>
    <tbody></tbody>
  </table></div>
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
    <div class="scroll"><table id="partitions"><thead><tr><th>busiest partitions</th><th>in flight</th><th>queued</th></tr></thead><tbody></tbody></table></div>
    <div class="scroll"><table id="hosts"><thead><tr><th>busiest hosts</th><th>in flight</th><th>queued</th></tr></thead><tbody></tbody></table></div>
  </div>
</section>
<section>
  <h2>Refusals</h2>
  <div class="scroll"><table id="refusals"><thead><tr><th>reason</th><th>answer</th><th>refused since start</th></tr></thead><tbody></tbody></table></div>
</section>
<section>
  <h2>Pacing</h2>
  <div class="scroll"><table id="pacing"><thead><tr><th>host or domain</th><th>rate</th><th>origin</th><th>actions</th></tr></thead><tbody></tbody></table></div>
  <form id="pace">
    <label>Pace <input name="name" placeholder="feeds.example.com" required></label>
    <label>at <input name="rate" placeholder="3/10s" required></label>
    <button type="submit">set</button>
  </form>
</section>
<section>
  <h2>Miss-rate anomalies</h2>
  <div class="scroll"><table id="anomalies"><thead><tr><th>partition</th><th>misses</th><th>lookups</th><th>ratio</th><th>throttled</th></tr></thead><tbody></tbody></table></div>
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
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:.8em 1.5em}
.chart{margin:0}.chart figcaption{font-weight:600}
.chart svg{width:100%;height:auto;background:#fafafa;border:1px solid #e4e4e4;display:block}
.chart .now{margin:.2em 0;color:#333}
.chart .key span{margin-right:.8em;white-space:nowrap}
.swatch{display:inline-block;width:.8em;height:.8em;margin-right:.25em;vertical-align:middle}
.scroll{overflow-x:auto;max-width:100%}
#events{list-style:none;padding:0;margin:.3em 0;max-height:22em;overflow-y:auto;border:1px solid #e4e4e4}
#events li{padding:.2em .5em;border-bottom:1px solid #eee;font-size:.92em}
#events li.level-warn{background:#fff6e5}#events li.level-error{background:#fdecea}
#events .ev{font-weight:600}#events time{color:#777;margin-right:.5em}
#entry{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em}
#entry dt{color:#555}#entry dd{margin:0}
form label{margin-right:.5em}
#entry dd,#events li,#fleet td,.now{overflow-wrap:anywhere}
select,input{max-width:100%}
@media (max-width:640px){body{margin:.6em}header{flex-wrap:wrap}.charts{grid-template-columns:1fr}input{max-width:60vw}form{display:flex;flex-wrap:wrap;gap:.3em}}
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
// The overview: each chart names the series' columns it draws. Colors are fixed, so that
// a line keeps its color from one refresh to the next.
const palette = ["#2471a3", "#c0392b", "#1e8449", "#8e44ad", "#d68910", "#17a589", "#7f8c8d", "#a04000"];
const svgNS = "http://www.w3.org/2000/svg";
function fmtNum(n) { return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2); }
function pct(n) { return (100 * n).toFixed(1) + "%"; }
function col(v, name) { const i = v.names.indexOf(name); return i < 0 ? [] : v.values[i]; }
function last(a) { return a.length ? a[a.length - 1] : 0; }
// Averages of the last few seconds read more steadily than one second's sample.
function recent(a, n) { const s = a.slice(-(n || 5)); return s.length ? s.reduce((x, y) => x + y, 0) / s.length : 0; }
const charts = {
  traffic: {lines: v => [["client", "clients"], ["origin", "origin"]], words: v => {
    const c = recent(col(v, "client")), o = recent(col(v, "origin")), saved = recent(col(v, "saved"));
    return fmtNum(c) + " requests a second from clients, " + fmtNum(o) + " to the origin: " + pct(saved) + " saved"; }},
  hits: {max: 1, lines: v => [["hitRatio", "hit ratio"]], words: v => pct(recent(col(v, "hitRatio"))) + " of requests answered from the cache"},
  refusals: {lines: v => {
    const out = v.names.filter(n => n.startsWith("refused:") && col(v, n).some(x => x > 0)).map(n => [n, n.slice(8)]);
    return out.length ? out : [[null, "refusals"]]; },
    words: v => { const parts = v.names.filter(n => n.startsWith("refused:")).map(n => [n.slice(8), recent(col(v, n))]).filter(p => p[1] > 0);
      return parts.length ? parts.map(p => fmtNum(p[1]) + "/s " + p[0]).join(", ") : "no refusals"; }},
  stale: {lines: v => [["stale", "stale answers"]], words: v => fmtNum(recent(col(v, "stale"))) + " stale answers a second"},
  inflight: {lines: v => [["inFlight", "in flight"], ["cap", "limiter cap"]], words: v =>
    last(col(v, "inFlight")) + " origin requests in flight of " + last(col(v, "cap")) + " the limiter allows"},
  latency: {lines: v => [["p50", "p50"], ["p95", "p95"]], words: v => {
    const p50 = recent(col(v, "p50")), p95 = recent(col(v, "p95"));
    return p50 || p95 ? "origin answers in " + fmtNum(p50) + " ms (p50), " + fmtNum(p95) + " ms (p95)" : "no origin requests timed"; }},
};
function clock(t) { return t ? new Date(t * 1000).toLocaleTimeString() : ""; }
function svgEl(tag, attrs) { const e = document.createElementNS(svgNS, tag); for (const k in attrs) e.setAttribute(k, attrs[k]); return e; }
// drawChart draws the last 15 minutes of lines into the figure's svg: x from the first
// sample within them to the last (a page opened a minute after Weir started spreads that
// minute over the width), y from 0 to the largest value (or max).
function drawChart(fig, v, spec) {
  const svg = $("svg", fig), W = 300, H = 90, pad = 4;
  const lines = spec.lines(v);
  const end = last(v.times), start = Math.max(v.times.length ? v.times[0] : end, end - 900), span = Math.max(end - start, 1);
  let top = spec.max || 0;
  if (!spec.max) for (const [name] of lines) for (const x of (name ? col(v, name) : [])) top = Math.max(top, x);
  if (top <= 0) top = 1;
  const nodes = [svgEl("title", {})];
  nodes[0].textContent = fig.querySelector("figcaption").textContent + ": " + spec.words(v);
  for (let g = 1; g < 4; g++) nodes.push(svgEl("line", {x1: 0, x2: W, y1: H * g / 4, y2: H * g / 4, stroke: "#e8e8e8", "stroke-width": 0.5}));
  const key = document.createElement("p"); key.className = "key";
  lines.forEach(([name, label], i) => {
    const color = palette[i % palette.length];
    const ys = name ? col(v, name) : v.times.map(() => 0);
    const pts = v.times.map((t, j) => (pad + (W - 2 * pad) * (t - start) / span).toFixed(1) + "," + (H - 10 - (H - 14) * ys[j] / top).toFixed(1));
    nodes.push(svgEl("polyline", {points: pts.join(" "), fill: "none", stroke: color, "stroke-width": 1.5, "data-line": label, "vector-effect": "non-scaling-stroke"}));
    const s = document.createElement("span"); const sw = document.createElement("i"); sw.className = "swatch"; sw.style.background = color;
    s.append(sw, document.createTextNode(label + " " + fmtNum(recent(ys))));
    key.appendChild(s);
  });
  const topLabel = svgEl("text", {x: W - pad, y: 10, "text-anchor": "end", "font-size": 8, fill: "#777"});
  topLabel.textContent = spec.max === 1 ? "100%" : fmtNum(top);
  nodes.push(topLabel);
  for (const [x, anchor, label] of [[pad, "start", clock(start)], [W - pad, "end", clock(end)]]) {
    const e = svgEl("text", {x: x, y: H - 2, "text-anchor": anchor, "font-size": 7, fill: "#999"});
    e.textContent = label; nodes.push(e);
  }
  svg.replaceChildren(...nodes);
  svg.setAttribute("aria-label", nodes[0].textContent);
  fig.dataset.points = String(v.times.length);
  $(".now", fig).textContent = spec.words(v);
  const old = $(".key", fig); if (old) old.replaceWith(key); else fig.appendChild(key);
}
// The numbers without the charts: the last 10 seconds, every column with a value.
function fillSeriesTable(v) {
  const names = v.names.filter(n => !n.startsWith("refused:") || col(v, n).some(x => x > 0));
  const head = document.createElement("tr"); head.appendChild(text("th", "time"));
  for (const n of names) head.appendChild(text("th", n));
  $("#series-table thead").replaceChildren(head);
  const rows = [];
  for (let j = Math.max(0, v.times.length - 10); j < v.times.length; j++) {
    const tr = document.createElement("tr"); tr.appendChild(text("td", new Date(v.times[j] * 1000).toLocaleTimeString()));
    for (const n of names) tr.appendChild(text("td", fmtNum(col(v, n)[j])));
    rows.push(tr);
  }
  $("#series-table tbody").replaceChildren(...rows.reverse());
}
async function getJSON(path) {
  let res;
  try { res = await fetch(path, {credentials: "same-origin"}); } catch (e) { return null; }
  if (!res.ok) { const d = await res.json().catch(() => ({})); say(path + ": " + (d.error || res.status), true); return null; }
  return res.json();
}
// series is the page's copy of the last 15 minutes: each poll asks only for the seconds from
// the last it holds (which the sampler may have rewritten) on.
let series = null;
function mergeSeries(v) {
  if (!series || !series.times.length || v.names.join() !== series.names.join()) { series = v; return; }
  v.times.forEach((t, j) => {
    let at = series.times.length;
    while (at > 0 && series.times[at - 1] >= t) at--;
    series.times.splice(at, series.times.length - at, t);
    series.values.forEach((col, i) => col.splice(at, col.length - at, v.values[i][j]));
  });
  const from = last(series.times) - 900;
  let drop = 0;
  while (drop < series.times.length && series.times[drop] <= from) drop++;
  if (drop) { series.times.splice(0, drop); for (const col of series.values) col.splice(0, drop); }
}
async function refreshSeries() {
  const since = series && series.times.length ? last(series.times) : 0;
  const got = await getJSON("api/series" + (since ? "?since=" + since : ""));
  if (!got) return;
  mergeSeries(got);
  const v = series;
  for (const fig of document.querySelectorAll("figure.chart")) drawChart(fig, v, charts[fig.dataset.chart]);
  fillSeriesTable(v);
}
let eventFilter = "";
const kinds = new Set();
async function refreshEvents() {
  const d = await getJSON("api/events?n=200" + eventFilter);
  if (!d) return;
  const items = d.events.map(ev => {
    const li = document.createElement("li"); li.className = "level-" + ev.level; li.dataset.event = ev.event; li.dataset.seq = ev.seq;
    const t = document.createElement("time"); t.dateTime = ev.time; t.textContent = new Date(ev.time).toLocaleTimeString();
    li.append(t, text("span", ev.event, "ev"), document.createTextNode(" " + ev.fields.map(f => f.key + "=" + f.value).join(" ")));
    if (!kinds.has(ev.event)) { kinds.add(ev.event); const o = document.createElement("option"); o.value = ev.event; $("#event-kinds").appendChild(o); }
    return li;
  });
  if (!items.length) items.push(text("li", "no events" + (eventFilter ? " match" : " yet")));
  const list = $("#events");
  if (list.dataset.shown !== (eventFilter + (d.events[0] ? d.events[0].seq : ""))) {
    list.replaceChildren(...items);
    list.dataset.shown = eventFilter + (d.events[0] ? d.events[0].seq : "");
  }
}
function perSecond(n, secs) { return fmtNum(n / secs); }
async function refreshTables() {
  const d = await getJSON("api/tables");
  if (!d) return;
  const secs = d.seconds || 1;
  const hostRow = h => { const tr = document.createElement("tr"); tr.dataset.key = h.host;
    tr.append(text("td", h.host), text("td", fmtNum(h.requestsPerSecond || 0)), text("td", h.requestsPerSecond ? pct(h.hitRatio) : ""),
      text("td", perSecond(h.fetches, secs)), text("td", perSecond(h.refused, secs)), text("td", perSecond(h.stale, secs)),
      text("td", h.host === "other" ? "" : String(h.inFlight)), text("td", h.p95ms ? h.p95ms + " ms" : ""), text("td", h.breaker || "", "state"));
    if (h.breaker) tr.className = "state-" + h.breaker;
    return tr; };
  const hosts = (d.hosts || []).slice();
  if (d.otherHosts && (d.otherHosts.requestsPerSecond || d.otherHosts.fetches || d.otherHosts.refused || d.otherHosts.stale)) hosts.push(d.otherHosts);
  fill("#host-table", hosts, hostRow);
  fill("#path-misses", d.byMisses || [], p => { const tr = document.createElement("tr"); tr.dataset.key = p.partition;
    tr.append(text("td", p.partition), text("td", String(p.fetches)), text("td", String(p.refused))); return tr; });
  fill("#path-refusals", d.byRefusals || [], p => { const tr = document.createElement("tr"); tr.dataset.key = p.partition;
    tr.append(text("td", p.partition), text("td", String(p.refused)), text("td", String(p.fetches))); return tr; });
}
function ago(t) { const s = (Date.now() - new Date(t).getTime()) / 1000; return s < 1 ? "now" : s.toFixed(0) + " s ago"; }
async function refreshFleet() {
  const d = await getJSON("api/fleet");
  if (!d) return;
  $("#fleet-note").textContent = d.shared ? d.instances.length + " instance(s) that wrote to the shared store in the last 15 minutes (this one always)" : "no shared store: this instance alone";
  fill("#fleet", d.instances, i => { const tr = document.createElement("tr"); tr.dataset.key = i.id;
    tr.append(text("td", i.id + (i.self ? " (this one)" : "")), text("td", ago(i.seen))); return tr; });
}
function secs(s) { return s > 0 ? fmtNum(s) + " s" : "none"; }
async function lookup(u) {
  const d = await getJSON("api/lookup?url=" + encodeURIComponent(u));
  const dl = $("#entry");
  if (!d) { dl.replaceChildren(); return; }
  const rows = [["url", "URL", d.url], ["key", "key", d.key]];
  if (!d.found) rows.push(["found", "stored", "nothing stored"]);
  else rows.push(["status", "status", String(d.status)], ["age", "age", fmtNum(d.ageSeconds) + " s"],
    ["ttl", "time to live", d.ttlSeconds >= 0 ? fmtNum(d.ttlSeconds) + " s" : "stale for " + fmtNum(-d.ttlSeconds) + " s"],
    ["swr", "stale-while-revalidate left", secs(d.staleWhileRevalidateSeconds)], ["sie", "stale-if-error left", secs(d.staleIfErrorSeconds)],
    ["size", "size", d.size + " bytes"], ["vary", "varies on", (d.vary || []).join(", ") || "nothing"],
    ["variants", "variants", d.variants ? "an index of variants" : "one answer"], ["tags", "tags", (d.tags || []).join(" ") || "none"],
    ["pass", "hit-for-pass", d.hitForPass ? "yes" : "no"]);
  rows.push(["negative", "negative", d.negative ? "yes, " + d.negativeStatus : "no"]);
  const out = [];
  for (const [k, label, value] of rows) { const dt = text("dt", label); const dd = text("dd", value); dd.dataset.field = k; out.push(dt, dd); }
  const purge = text("button", "purge this URL", "purge-url"); purge.type = "button";
  purge.addEventListener("click", async () => { if (await act("purge", {url: d.url}, "url " + d.url)) lookup(d.url); });
  const dd = document.createElement("dd"); dd.appendChild(purge);
  out.push(text("dt", ""), dd);
  dl.replaceChildren(...out);
}
// Polling runs while the tab is visible, every two seconds, and stops while it is hidden.
let ticks = 0, timer = null;
function refreshAll() {
  refresh(); refreshSeries(); refreshEvents(); refreshTables();
  if (ticks++ % 5 === 0) refreshFleet();
}
function startPolling() { if (timer === null) { refreshAll(); timer = setInterval(refreshAll, 2000); } }
function stopPolling() { if (timer !== null) { clearInterval(timer); timer = null; } }
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
  $("#event-filter").addEventListener("submit", ev => {
    ev.preventDefault();
    const q = new URLSearchParams(), f = ev.target;
    if (f.elements.kind.value.trim()) q.set("kind", f.elements.kind.value.trim());
    if (f.elements.host.value.trim()) q.set("host", f.elements.host.value.trim());
    eventFilter = q.toString() ? "&" + q.toString() : "";
    refreshEvents();
  });
  $("#lookup").addEventListener("submit", ev => { ev.preventDefault(); lookup(ev.target.elements.url.value.trim()); });
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") startPolling(); else stopPolling(); });
  if (document.visibilityState === "visible") startPolling(); else refresh();
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
