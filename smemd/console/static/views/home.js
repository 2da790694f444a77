// The Home view: who the namespace's memories say the user is (the profile), and the namespace at
// a glance (GET /ns/{ns}/overview): counts, type mix, memories per hour, facts per document, and
// the latest memories. A namespace with no documents gets a hint instead of calls that would 404.

import { api, ns as nsPath } from "../api.js";
import { href } from "../route.js";
import { Badge, Bars, ErrorNote, When, html, plural, useApi, useState } from "../ui.js";

const TYPES = ["fact", "preference", "episode"];
const PROFILE_SHOWN = 8;
const LATEST = 8;

export default function Home({ ns, namespaces }) {
  const listed = namespaces.find((n) => n.namespace === ns);
  // Not in the shell's list (it holds the first 100, loaded once): ask by name, which never
  // 404s, and again now and then, so the first document's arrival shows.
  const looked = useApi(
    () => (listed && listed.documentCount > 0 ? null : api("/ns", { query: { q: ns, limit: 100 } })),
    [ns, listed && listed.documentCount], 10_000,
  );
  const known = (listed && listed.documentCount > 0) ? listed
    : looked.data && looked.data.namespaces.find((n) => n.namespace === ns);
  let body;
  if (known && known.documentCount > 0) body = html`<${Overview} ns=${ns} />`;
  else if (looked.loading && !looked.data) body = html`<p class="muted">Loading…</p>`;
  else body = html`<${ErrorNote} error=${looked.error} /><${Empty} ns=${ns} known=${known} />`;
  return html`<header><h1>Home</h1><span class="muted mono">${ns}</span></header>${body}`;
}

function Empty({ ns, known }) {
  return html`<section class="panel home-empty" aria-label="Empty namespace">
    <h2>${known ? `${ns} has no documents yet` : `No namespace called ${ns} yet`}</h2>
    <p>Memories come from documents. Add one on <a href=${href("documents", { ns })}>Documents</a>,
      or through the API; the namespace is made with its first document:</p>
    <pre class="mono">POST /ns/${ns}/document  {"content": "Alice lives in Lisbon."}</pre>
  </section>`;
}

function Overview({ ns }) {
  const overview = useApi(() => api(`${nsPath(ns)}/overview`), [ns], 10_000);
  const latest = useApi(
    () => api(`${nsPath(ns)}/list/memories`, { method: "POST", query: { limit: LATEST }, body: {} }),
    [ns], 10_000,
  );
  const profile = useApi(() => api(`${nsPath(ns)}/profile`, { method: "POST", body: {} }), [ns], 30_000);
  const o = overview.data;
  return html`
    <${ErrorNote} error=${overview.error || latest.error || profile.error} />
    ${o && html`<${Counts} o=${o} ns=${ns} />`}
    <div class="grid home-grid">
      ${o && html`<${TypeMix} types=${o.types} />`}
      ${o && html`<${PerHour} hours=${o.perHour} />`}
      ${o && html`<${FactsPerDocument} bins=${o.factsPerDocument} cap=${o.factsCap} />`}
    </div>
    <div class="grid home-grid">
      ${profile.data && html`<${ProfileList} title="Static" hint="preferences and facts, best supported first"
        facts=${profile.data.profile.static} ns=${ns} />`}
      ${profile.data && html`<${ProfileList} title="Dynamic" hint="episodes and updates of the last 14 days"
        facts=${profile.data.profile.dynamic} ns=${ns} />`}
      ${latest.data && html`<${Latest} memories=${latest.data.memories} ns=${ns} />`}
    </div>`;
}

function Counts({ o, ns }) {
  const stats = [
    ["Live memories", o.memories.live, href("memories", { ns })],
    ["Superseded", o.memories.superseded, href("memories", { ns, status: "superseded" })],
    ["Forgotten", o.memories.forgotten, href("memories", { ns, status: "forgotten" })],
    ["Documents", o.documents, href("documents", { ns })],
    ["Jobs open", o.jobsOpen, null],
  ];
  return html`<section class="home-counts" aria-label="Counts">
    ${stats.map(([label, value, link]) => html`<div class="panel">
      <div class="stat">${value.toLocaleString()}</div>
      <div class="muted">${link ? html`<a href=${link}>${label}</a>` : label}</div>
    </div>`)}
  </section>`;
}

function TypeMix({ types }) {
  const total = TYPES.reduce((sum, t) => sum + (types[t] || 0), 0);
  return html`<section class="panel" aria-labelledby="home-types">
    <h2 id="home-types">Type mix</h2>
    ${total === 0 ? html`<p class="empty">No live memories.</p>` : html`
      <div class="type-bar" role="img" aria-label=${TYPES.map((t) => `${types[t] || 0} ${t}`).join(", ")}>
        ${TYPES.filter((t) => types[t]).map((t) => html`<span class=${`type-${t}`} style=${{ width: `${(100 * types[t]) / total}%` }}></span>`)}
      </div>
      <ul class="type-legend">
        ${TYPES.map((t) => html`<li><${Badge} kind=${t} /> ${(types[t] || 0).toLocaleString()}
          <span class="muted">${total ? Math.round((100 * (types[t] || 0)) / total) : 0}%</span></li>`)}
      </ul>`}
  </section>`;
}

function PerHour({ hours }) {
  const values = hours.map((h) => h.count);
  const sum = values.reduce((a, b) => a + b, 0);
  const last24 = values.slice(-24).reduce((a, b) => a + b, 0);
  return html`<section class="panel" aria-labelledby="home-hours">
    <h2 id="home-hours">Memories per hour</h2>
    <${Bars} values=${values} width=${288} height=${56} label=${`Memories stored per hour over the last 48 hours: ${sum} in all`} />
    <div class="axis muted"><span>48 h ago</span><span>now</span></div>
    <p class="muted">${plural(last24, "memory", "memories")} in the last 24 h, ${sum} in 48 h</p>
  </section>`;
}

function FactsPerDocument({ bins, cap }) {
  const top = Math.max(0, ...bins.map((b) => b.facts));
  const counts = Array.from({ length: top + 1 }, (_, n) => (bins.find((b) => b.facts === n) || { documents: 0 }).documents);
  const documents = counts.reduce((a, b) => a + b, 0);
  const facts = bins.reduce((sum, b) => sum + b.facts * b.documents, 0);
  return html`<section class="panel" aria-labelledby="home-facts">
    <h2 id="home-facts">Facts per document</h2>
    <${Bars} values=${counts} width=${288} height=${56} label=${`Documents by how many live memories cite them, from 0 to ${top}${top >= cap ? " or more" : ""}`} />
    <div class="axis muted"><span>0 facts</span><span>${top}${top >= cap ? "+" : ""}</span></div>
    <p class="muted">${documents ? `${(facts / documents).toFixed(1)} on average over ${plural(documents, "document")}` : "No documents."}</p>
    <ul class="bins muted" aria-label="Documents by facts">
      ${bins.map((b) => html`<li>${b.facts}${b.facts >= cap ? "+" : ""} facts: ${plural(b.documents, "doc")}</li>`)}
    </ul>
  </section>`;
}

function ProfileList({ title, hint, facts, ns }) {
  const [all, setAll] = useState(false);
  const shown = all ? facts : facts.slice(0, PROFILE_SHOWN);
  const id = `home-profile-${title.toLowerCase()}`;
  return html`<section class="panel" aria-labelledby=${id}>
    <h2 id=${id}>${title} <span class="muted hint">${hint}</span></h2>
    ${facts.length === 0 ? html`<p class="empty">Nothing yet.</p>` : html`<ul class="facts">
      ${shown.map((f) => html`<li><a href=${href("memories", { ns, id: f.id })}>${f.memory}</a></li>`)}
    </ul>`}
    ${facts.length > PROFILE_SHOWN && html`<button onClick=${() => setAll(!all)}>${all ? "Show fewer" : `Show all ${facts.length}`}</button>`}
  </section>`;
}

function Latest({ memories, ns }) {
  return html`<section class="panel" aria-labelledby="home-latest">
    <h2 id="home-latest">Latest memories</h2>
    ${memories.length === 0 ? html`<p class="empty">None yet.</p>` : html`<ul class="facts latest">
      ${memories.map((m) => html`<li>
        <${Badge} kind=${m.type} /> <a href=${href("memories", { ns, id: m.id })}>${m.memory}</a>
        <span class="muted"> <${When} at=${m.system.createdAt} /></span>
      </li>`)}
    </ul>`}
  </section>`;
}
