// The Activity view: what the daemon is doing on its own (dreaming), what it is asked (requests
// per minute, per route, the last ones), the engine's figures from /v1/metrics (ingest, recall,
// the store, dreaming's backlog), and what its judge decided, with the labels a person gives
// those calls and the calibration they feed. Everything here only reads, polled every few
// seconds, so an open console never counts as use and never keeps dreaming waiting.

import { api } from "../api.js";
import { means, parseMetrics, sumBy, total } from "../metrics.js";
import { Badge, Bars, ErrorNote, When, html, plural, useApi, useState } from "../ui.js";

const EVERY_MS = 5000;
const LOG_PAGE = 15;

const seconds = (s) => (s < 10 ? `${s.toFixed(1)} s` : s < 90 ? `${Math.round(s)} s` : s < 5400 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`);
const percent = (p) => (p === null || p === undefined ? "—" : `${Math.round(p * 100)}%`);
const ms = (v) => (v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : Math.round(v).toString());
const mean = (s) => (s === null || s === undefined ? "—" : s < 1 ? `${ms(s * 1000)} ms` : seconds(s));
const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

// Binary units to three figures: "512 B", "4.00 KiB", "76.4 GiB".
function bytes(n) {
  let unit = 0;
  for (; n >= 1024 && unit < UNITS.length - 1; unit++) n /= 1024;
  return unit ? `${n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : Math.round(n)} ${UNITS[unit]}` : `${n} B`;
}

export default function Activity({ session, isAdmin, canWrite }) {
  // Calibration and the request log span every namespace: a token limited to some may not read them.
  const seesEvery = session.namespaces.includes("*");
  const [labelled, setLabelled] = useState(0); // bumped by a label, so calibration reloads at once
  return html`<header><h1>Activity</h1><span class="muted">refreshes every ${EVERY_MS / 1000} s</span></header>
    <div class="activity">
      <${Dreaming} isAdmin=${isAdmin} />
      <${Traffic} />
      <${Engine} />
      ${seesEvery ? html`<${Calibration} isAdmin=${isAdmin} labelled=${labelled} />` : null}
      <${JudgeLog} canWrite=${canWrite} onLabel=${() => setLabelled((n) => n + 1)} />
      ${seesEvery ? html`<${RecentRequests} />`
        : html`<p class="notice">This token is limited to some namespaces: the request log and calibration, which span every namespace, are not shown.</p>`}
    </div>`;
}

function Dreaming({ isAdmin }) {
  const dreaming = useApi(() => api("/v1/dreaming"), [], EVERY_MS);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const d = dreaming.data;
  const toggle = async () => {
    setBusy(true);
    setError(null);
    try {
      await api("/v1/dreaming", { method: "POST", body: { enabled: !d.enabled } });
      await dreaming.reload();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const state = d ? (d.state === "off" ? "paused" : d.state === "dreaming" ? "up" : "") : "";
  return html`<section class="panel dreaming" aria-labelledby="dreaming-title">
    <div class="row spread">
      <h2 id="dreaming-title">Dreaming</h2>
      ${d && isAdmin ? html`<button class=${d.enabled ? "" : "primary"} disabled=${busy} onClick=${toggle}>
        ${d.enabled ? "Pause dreaming" : "Resume dreaming"}</button>` : null}
    </div>
    <${ErrorNote} error=${dreaming.error || error} />
    ${d ? html`<p class="row"><span class=${`dot ${state}`} aria-hidden="true"></span>
        <strong data-testid="dreaming-state">${d.state}</strong>
        <span class="muted">${d.enabled ? "" : "(paused)"}</span></p>
      <dl class="facts">
        <dt>Quiet for</dt><dd><span data-testid="quiet-for">${seconds(d.quietForS)}</span>
          <span class="muted"> · dreams after ${seconds(d.quietAfterS)} without use</span></dd>
        <dt>Waiting</dt><dd>${plural(d.untyped, "memory", "memories")} to type, ${d.unlinked} to link</dd>
        <dt>So far</dt><dd>${d.typed} typed of ${d.typingAsked} asked · ${d.linked} linked of ${d.linksLooked} looked at</dd>
        <dt>Last step</dt><dd><${When} at=${d.lastStepAt} /></dd>
        <dt>Errors</dt><dd class=${d.errors ? "error" : ""}>${d.errors}${d.lastError ? ` · ${d.lastError}` : ""}</dd>
        ${d.heuristics.length ? html`<dt>Heuristics</dt><dd class="muted">${d.heuristics.join(", ")}</dd>` : null}
      </dl>` : dreaming.loading ? html`<p class="muted">Loading…</p>` : null}
  </section>`;
}

function Traffic() {
  const activity = useApi(() => api("/v1/activity"), [], EVERY_MS);
  const [sort, setSort] = useState({ key: "requests", descending: true });
  const a = activity.data;
  const routes = a ? [...a.routes].sort((x, y) => (sort.descending ? -1 : 1) * (x[sort.key] - y[sort.key]) || x.route.localeCompare(y.route)) : [];
  const header = (key, title) => {
    const on = sort.key === key;
    return html`<th class="num" aria-sort=${on ? (sort.descending ? "descending" : "ascending") : "none"}>
      <button class="sort" onClick=${() => setSort({ key, descending: on ? !sort.descending : true })}>
        ${title}${on ? (sort.descending ? " ↓" : " ↑") : ""}</button></th>`;
  };
  return html`<section class="panel traffic" aria-labelledby="traffic-title">
    <h2 id="traffic-title">Requests</h2>
    <${ErrorNote} error=${activity.error} />
    ${a ? html`<p class="row"><span class="stat">${a.requests}</span>
        <span class="muted">in the last ${a.windowMinutes} min</span></p>
      <div class="minutes"><${Bars} values=${a.perMinute.map((m) => m.requests)} width=${480} height=${56}
        label=${`Requests per minute over the last hour, ${a.perMinute[a.perMinute.length - 1].requests} in the current minute`} />
        <div class="row spread muted axis"><span>${a.windowMinutes} min ago</span><span>now</span></div></div>
      <table class="routes">
        <thead><tr><th>Route</th>${header("requests", "Requests")}<th class="num">p50 ms</th>${header("p95Ms", "p95 ms")}</tr></thead>
        <tbody>${routes.map((r) => html`<tr key=${r.route}><td class="mono">${r.route}</td>
          <td class="num">${r.requests}</td><td class="num">${ms(r.p50Ms)}</td><td class="num">${ms(r.p95Ms)}</td></tr>`)}</tbody>
      </table>` : null}
  </section>`;
}

// What the README's alert table names, read as a scraper reads it: the whole /v1/metrics text,
// parsed here. A failed scrape hides the figures rather than show old ones as current.
function Engine() {
  const metrics = useApi(() => api("/v1/metrics").then(parseMetrics), [], EVERY_MS);
  const samples = metrics.error ? null : metrics.data;
  return html`<section class="panel engine" aria-labelledby="engine-title">
    <div class="row spread">
      <h2 id="engine-title">Engine</h2>
      <span class="muted">as Prometheus reads it from /v1/metrics</span>
    </div>
    ${metrics.error ? html`<p class="muted" role="status">The engine's figures are unavailable (${metrics.error.message}).</p>` : null}
    ${samples ? html`<div class="figures">
      <${Ingest} samples=${samples} /><${Recall} samples=${samples} /><${Store} samples=${samples} /><${Backlog} samples=${samples} />
    </div>` : metrics.loading ? html`<p class="muted">Loading…</p>` : null}
  </section>`;
}

function Ingest({ samples }) {
  const open = sumBy(samples, "smem_ingest_jobs", "phase");
  const timed = new Map(means(samples, "smem_ingest_phase_seconds", "phase").map((t) => [t.key, t]));
  const ended = sumBy(samples, "smem_ingest_jobs_ended_total", "outcome");
  const failed = ended.get("failed") || 0;
  const retries = total(samples, "smem_ingest_retries_total") || 0;
  return html`<section aria-labelledby="engine-ingest">
    <h3 id="engine-ingest">Ingest</h3>
    <dl class="facts">
      <dt>Ended</dt><dd><span data-testid="jobs-done">${ended.get("done") || 0}</span> done · <span class=${failed ? "error" : ""}>${failed} failed</span></dd>
      <dt>Retries</dt><dd class=${retries ? "warn" : ""}>${retries}</dd>
    </dl>
    <table>
      <thead><tr><th>Phase</th><th class="num">Open</th><th class="num">Mean</th></tr></thead>
      <tbody>${[...new Set([...open.keys(), ...timed.keys()])].map((phase) => html`<tr key=${phase}>
        <td>${phase}</td><td class="num">${open.get(phase) ?? "—"}</td><td class="num">${mean(timed.get(phase)?.mean)}</td></tr>`)}</tbody>
    </table>
  </section>`;
}

function Recall({ samples }) {
  const purposes = means(samples, "smem_recall_seconds", "purpose");
  return html`<section aria-labelledby="engine-recall">
    <h3 id="engine-recall">Recall</h3>
    ${purposes.length ? html`<table>
      <thead><tr><th>Purpose</th><th class="num">Count</th><th class="num">Mean</th></tr></thead>
      <tbody>${purposes.map((p) => html`<tr key=${p.key}><td>${p.key}</td>
        <td class="num" data-testid=${`recall-${p.key}`}>${p.count}</td><td class="num">${mean(p.mean)}</td></tr>`)}</tbody>
    </table>` : html`<p class="muted">None yet.</p>`}
  </section>`;
}

function Store({ samples }) {
  const free = total(samples, "smem_state_dir_free_bytes");
  const database = total(samples, "smem_store_database_bytes");
  const wal = total(samples, "smem_store_wal_bytes");
  const [wait] = means(samples, "smem_store_writer_wait_seconds");
  const faults = [...sumBy(samples, "smem_store_faults_total", "code")].filter(([, n]) => n);
  return html`<section aria-labelledby="engine-store">
    <h3 id="engine-store">Store</h3>
    <dl class="facts">
      <dt>State dir</dt><dd title="Free space on the state dir's file system">${free === null ? "—"
        : html`<span data-testid="free-bytes">${bytes(free)}</span> free`}</dd>
      ${database !== null ? html`<dt>Database</dt><dd>${bytes(database)}</dd>` : null}
      ${wal !== null ? html`<dt>WAL</dt><dd>${bytes(wal)}</dd>` : null}
      <dt>Writer wait</dt><dd>${wait ? html`${mean(wait.mean)} <span class="muted">over ${plural(wait.count, "write")}</span>` : "—"}</dd>
      <dt>Faults</dt><dd class=${faults.length ? "error" : "muted"}>${faults.length ? faults.map(([code, n]) => `${n} ${code}`).join(", ") : "none"}</dd>
    </dl>
  </section>`;
}

function Backlog({ samples }) {
  const works = [...sumBy(samples, "smem_dreaming_backlog", "work")];
  return html`<section aria-labelledby="engine-backlog">
    <h3 id="engine-backlog">Dreaming backlog</h3>
    ${works.length ? html`<dl class="facts">${works.map(([work, n]) => html`<dt>${work}</dt><dd>${plural(n, "memory", "memories")}</dd>`)}</dl>`
      : html`<p class="muted">—</p>`}
  </section>`;
}

function RecentRequests() {
  const [hideReads, setHideReads] = useState(false);
  const [shown, setShown] = useState(50);
  // With reads hidden, more are fetched so that the writes among them still fill the table.
  const recent = useApi(() => api("/v1/requests", { query: { limit: hideReads ? 500 : shown } }), [hideReads, shown], EVERY_MS);
  const all = recent.data ? recent.data.requests : [];
  const rows = (hideReads ? all.filter((r) => r.method !== "GET" && r.method !== "HEAD") : all).slice(0, shown);
  return html`<section class="panel recent" aria-labelledby="recent-title">
    <div class="row spread">
      <h2 id="recent-title">Recent requests</h2>
      <div class="row">
        <label class="check"><input type="checkbox" checked=${hideReads} onChange=${(e) => setHideReads(e.target.checked)} />
          Hide GETs (the console's own polling)</label>
        <label>Show <select aria-label="How many requests to show" value=${shown} onChange=${(e) => setShown(Number(e.target.value))}>
          ${[50, 100, 200, 500].map((n) => html`<option value=${n}>${n}</option>`)}</select></label>
      </div>
    </div>
    <p class="muted">Newest first. Routes are templates; the console's own files are not listed, its polling is the GETs every ${EVERY_MS / 1000} s.</p>
    <${ErrorNote} error=${recent.error} />
    ${rows.length ? html`<table class="requests">
      <thead><tr><th>Time</th><th>Method</th><th>Route</th><th class="num">Status</th><th class="num">ms</th><th>Request id</th></tr></thead>
      <tbody>${rows.map((r) => html`<tr key=${r.requestId + r.at} class=${r.method === "GET" || r.method === "HEAD" ? "read" : ""}>
        <td><time datetime=${r.at}>${new Date(r.at).toLocaleTimeString()}</time></td>
        <td class="mono">${r.method}</td><td class="mono">${r.route}</td>
        <td class=${`num ${r.status >= 500 ? "error" : r.status >= 400 ? "warn" : ""}`}>${r.status}</td>
        <td class="num">${ms(r.durationMs)}</td><td class="mono muted">${r.requestId}</td></tr>`)}</tbody>
    </table>` : recent.data ? html`<p class="empty">No requests${hideReads ? " but GETs" : ""} yet.</p>` : null}
  </section>`;
}

function Calibration({ isAdmin, labelled }) {
  const calibration = useApi(() => api("/v1/calibration"), [labelled], EVERY_MS);
  const [fitting, setFitting] = useState(false);
  const [fitted, setFitted] = useState(null);
  const [error, setError] = useState(null);
  const c = calibration.data;
  const fit = async () => {
    setFitting(true);
    setError(null);
    try {
      setFitted(await api("/v1/calibration/fit", { method: "POST" }));
      await calibration.reload();
    } catch (err) {
      setError(err);
    } finally {
      setFitting(false);
    }
  };
  return html`<section class="panel calibration" aria-labelledby="calibration-title">
    <div class="row spread">
      <h2 id="calibration-title">Calibration</h2>
      ${isAdmin && c && !c.heuristics ? html`<button class="primary" disabled=${fitting} onClick=${fit}
        title="Fit each judge's threshold on its labels, and redo past calls under it">Fit</button>` : null}
    </div>
    <${ErrorNote} error=${calibration.error || error} />
    ${c && c.heuristics ? html`<p class="notice">No model: nothing is judged; labels still set memories' types.</p>` : null}
    ${c ? html`<table>
      <thead><tr><th>Judge</th><th class="num">Threshold</th><th>Fit</th><th class="num">Calls</th>
        <th class="num">Labels</th><th class="num">Accuracy</th><th class="num">Coverage</th></tr></thead>
      <tbody>${c.judges.map((j) => html`<tr key=${j.kind} data-kind=${j.kind}>
        <th scope="row">${j.kind}</th>
        <td class="num">${j.threshold.toFixed(2)}${j.threshold !== j.defaultThreshold ? html`<span class="muted"> (default ${j.defaultThreshold.toFixed(2)})</span>` : null}</td>
        <td>${j.fitted ? html`<span title=${`slope ${j.fitted.slope}, intercept ${j.fitted.intercept}`}>on ${plural(j.fitted.labels, "label")}, <${When} at=${j.fitted.fittedAt} /></span>` : html`<span class="muted">default</span>`}</td>
        <td class="num">${j.judgements}</td>
        <td class="num" data-testid=${`labels-${j.kind}`}>${j.labels}</td>
        <td class="num" title=${`${j.correct} right of ${j.decided} that stand`}>${percent(j.accuracy)}</td>
        <td class="num">${percent(j.coverage)}</td></tr>`)}</tbody>
    </table>` : null}
    ${fitted ? html`<p class="muted" role="status">Fit: ${fitted.results.map((r) => `${r.kind} ${r.outcome === "fitted"
      ? `${r.before.toFixed(2)} → ${r.after.toFixed(2)}, ${r.reapplied} redone` : r.outcome}`).join("; ")}</p>` : null}
  </section>`;
}

function JudgeLog({ canWrite, onLabel }) {
  const [kind, setKind] = useState("");
  const [afters, setAfters] = useState([0]); // the `after` of each page seen: the last is shown
  const after = afters[afters.length - 1];
  const log = useApi(() => api("/v1/judgements", { query: { kind, after, limit: LOG_PAGE } }), [kind, after], EVERY_MS);
  const [error, setError] = useState(null);
  const calls = log.data ? log.data.judgements : [];
  const label = async (call, correct) => {
    setError(null);
    try {
      await api("/v1/labels", { method: "POST", body: { judgementId: call.id, correct } });
      await log.reload();
      onLabel();
    } catch (err) {
      setError(err);
    }
  };
  const choose = (value) => { setKind(value); setAfters([0]); };
  return html`<section class="panel judge-log" aria-labelledby="judge-title">
    <div class="row spread">
      <h2 id="judge-title">The judge's calls</h2>
      <label>Judge <select aria-label="Which judge's calls" value=${kind} onChange=${(e) => choose(e.target.value)}>
        <option value="">every judge</option><option value="type">type</option>
        <option value="link">link</option><option value="reconcile">reconcile</option>
        <option value="derives">derives</option><option value="alias">alias</option></select></label>
    </div>
    <p class="muted">Oldest first. ${canWrite ? "✓ or ✗ says whether the judge was right: the labels its threshold is fitted on." : ""}</p>
    <${ErrorNote} error=${log.error || error} />
    ${calls.length ? html`<ol class="calls">${calls.map((call) => html`<${Call} key=${call.id} call=${call} canWrite=${canWrite} onLabel=${label} />`)}</ol>`
      : log.data ? html`<p class="empty">No calls${kind ? ` by the ${kind} judge` : ""} yet.</p>` : null}
    ${afters.length > 1 || (log.data && log.data.nextAfter !== null) ? html`<nav class="pager" aria-label="Pages of the judge's calls">
      <button disabled=${afters.length <= 1} onClick=${() => setAfters(afters.slice(0, -1))}>Previous</button>
      <span class="muted">page ${afters.length}</span>
      <button disabled=${!log.data || log.data.nextAfter === null} onClick=${() => setAfters([...afters, log.data.nextAfter])}>Next</button>
    </nav>` : null}
  </section>`;
}

// An outcome as stored ("fact", "updates:mem_…", "none"): its kind, without the memory it names.
const outcome = (option) => option.split(":")[0];
const target = (option) => option.split(":")[1] || "";

function Call({ call, canWrite, onLabel }) {
  const picked = call.proposal === null ? -1 : call.options.indexOf(call.proposal);
  return html`<li class="call" data-judgement=${call.id}>
    <div class="row spread">
      <span class="row"><${Badge} kind=${call.kind} /><span class="muted mono">${call.namespace}</span><${When} at=${call.createdAt} /></span>
      <span class="row">
        ${call.label ? html`<span class=${`badge label ${call.label}`}>labelled ${call.label}</span>`
          : canWrite ? html`<button class="mark" aria-label=${`Right: ${call.text}`} title="The judge was right" onClick=${() => onLabel(call, true)}>✓</button>
            <button class="mark" aria-label=${`Wrong: ${call.text}`} title="The judge was wrong" onClick=${() => onLabel(call, false)}>✗</button>` : null}
      </span>
    </div>
    <p class="question">${call.text}</p>
    <p class="row options">
      ${call.options.map((option, i) => html`<span class=${`option ${i === picked ? "picked" : ""}`}>
        <${Badge} kind=${outcome(option)} />${target(option) ? html`<span class="mono muted target" title=${target(option)}>${target(option).slice(0, 12)}</span>` : null}
        <span class="muted">${percent(call.probabilities[i])}</span></span>`)}
    </p>
    <p class="muted">Answer: ${picked >= 0 ? html`<strong class="answer">${outcome(call.proposal)}</strong> at ${percent(call.probabilities[picked])}` : "none"}
      · ${call.decided ? "stands at the threshold" : "below the threshold"} · applied ${outcome(call.applied)}${call.applied !== call.fallback ? `, the heuristic would have ${outcome(call.fallback)}` : ""}</p>
  </li>`;
}
