// The Memories view: browse a namespace's memories by status, type, document and entity (the list
// route), or find them by text (the search route); the one in the hash's `id` opens beside the list with
// its times, relations and version timeline, and, for a writer, Update, Forget and Restore.

import { api, ns as nsPath } from "../api.js";
import { href, navigate } from "../route.js";
import { Badge, ErrorNote, Pager, When, html, plural, useApi, useEffect, useState } from "../ui.js";

const PAGE = 20;
const SETTLE_MS = 60;
const SEARCHED = 100; // text search ranks this many, then the filters narrow them, paged here
const STATUSES = ["live", "superseded", "forgotten"];
const TYPES = ["fact", "preference", "episode"];

const statusOf = (m) => (m.isForgotten ? "forgotten" : m.isLatest ? "live" : "superseded");
const memoryPath = (ns, id) => `${nsPath(ns)}/memories/${encodeURIComponent(id)}`;

export default function Memories({ ns, params, canWrite }) {
  const [text, setText] = useState(params.q || "");
  const [query, setQuery] = useState(text.trim());
  const [status, setStatus] = useState(STATUSES.includes(params.status) ? params.status : "live");
  const [type, setType] = useState(TYPES.includes(params.type) ? params.type : "");
  const [doc, setDoc] = useState(params.document || "");
  const [entity, setEntity] = useState(params.entity || ""); // an entity's id or name
  useEffect(() => setEntity(params.entity || ""), [params.entity]);
  const [page, setPage] = useState(1);
  const [changes, setChanges] = useState(0); // bumped by Update, Forget and Restore: reload
  // Searched as typed, once the keys pause for a moment: results must be on screen within 150 ms
  // of the last key, and a search of a local daemon costs a few milliseconds.
  useEffect(() => {
    const timer = setTimeout(() => setQuery(text.trim()), SETTLE_MS);
    return () => clearTimeout(timer);
  }, [text]);
  useEffect(() => setPage(1), [ns, query, status, type, doc, entity]);

  const documents = useApi(
    () => api(`${nsPath(ns)}/list/documents`, { method: "POST", query: { limit: 50 }, body: {} }),
    [ns],
  );
  const known = documents.data ? documents.data.documents : [];
  const results = useApi(
    () => (query ? search(ns, query, { status, type, doc, entity, known }) : browse(ns, page, { status, type, doc, entity })),
    // Only browsing polls: a search embeds its text, which is use of the models (dreaming waits).
    [ns, query, status, type, doc, entity, query ? 0 : page, changes], query ? 0 : 15_000,
  );
  // The hash holds the filters beside the selection, so a reload or a shared link opens the same.
  const open = (id) => navigate("memories", {
    ns, id, q: query, status: status === "live" ? undefined : status, type, document: doc, entity,
  });
  const changed = (id) => { setChanges((n) => n + 1); if (id && id !== params.id) open(id); };

  // A reload keeps the last reply on screen: show it only while it answers the same question.
  const data = results.data && results.data.query === query ? results.data : null;
  const rows = data ? (query ? data.rows.slice((page - 1) * PAGE, page * PAGE) : data.rows) : [];
  const pages = data ? (query ? Math.ceil(data.rows.length / PAGE) : data.pages) : 0;
  return html`<header><h1>Memories</h1>
      ${data && html`<span class="muted">${query ? `${plural(data.rows.length, "match", "matches")} of the ${SEARCHED} best` : plural(data.total, `${status} memory`, `${status} memories`)}</span>`}
    </header>
    <form class="row memory-filters" role="search" onSubmit=${(e) => { e.preventDefault(); setQuery(text.trim()); }}>
      <label>Search<input type="search" data-search value=${text} placeholder="words or a question"
        onInput=${(e) => setText(e.target.value)} /></label>
      <label>Status<select value=${status} onChange=${(e) => setStatus(e.target.value)}>
        ${STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}</select></label>
      <label>Type<select value=${type} onChange=${(e) => setType(e.target.value)}>
        <option value="">any</option>${TYPES.map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
      <label>Document<input list="memory-documents" value=${doc} placeholder="any"
        onChange=${(e) => setDoc(e.target.value.trim())} /></label>
      <label>Entity<input value=${entity} placeholder="any"
        onChange=${(e) => setEntity(e.target.value.trim())} /></label>
      <datalist id="memory-documents">${known.map((d) => html`<option value=${d.customId || d.id}>${d.title || d.id}</option>`)}</datalist>
    </form>
    ${query && status === "superseded" && html`<p class="notice">Text search looks at latest versions only: clear the search to browse superseded ones.</p>`}
    <div class="memories-layout">
      <section aria-label="Memory list" data-results-for=${data ? data.query : undefined}>
        <${ErrorNote} error=${results.error} />
        <${MemoryTable} rows=${rows} selected=${params.id} onOpen=${open} scored=${!!query} />
        ${data && rows.length === 0 && html`<p class="empty">No memories match.</p>`}
        <${Pager} page=${page} pages=${pages} onPage=${setPage} label="Memory pages" />
      </section>
      ${params.id ? html`<${Detail} ns=${ns} id=${params.id} canWrite=${canWrite} changes=${changes} onChanged=${changed} onOpen=${open} />`
        : html`<aside class="panel memory-detail muted">Select a memory to see its versions and relations.</aside>`}
    </div>`;
}

async function browse(ns, page, { status, type, doc, entity }) {
  const reply = await api(`${nsPath(ns)}/list/memories`, {
    method: "POST", query: { page, limit: PAGE },
    body: { status, type: type || undefined, document: doc || undefined, entity: entity || undefined },
  });
  const rows = reply.memories.map((m) => ({ ...m, status: statusOf(m) }));
  return { query: "", rows, total: reply.pagination.totalItems, pages: reply.pagination.totalPages };
}

// Search sees the latest versions (and, asked, the forgotten ones); its results say `isLatest`
// false for a forgotten one. The entity narrows the search itself; type and document narrow the
// ranked results here.
async function search(ns, query, { status, type, doc, entity, known }) {
  if (status === "superseded") return { query, rows: [] };
  const reply = await api(`${nsPath(ns)}/search`, {
    method: "POST",
    body: {
      query, searchMode: "memories", limit: SEARCHED, include: { forgotten: status === "forgotten" },
      entity: entity || undefined,
    },
  });
  const docIds = new Set([doc, ...known.filter((d) => d.customId === doc).map((d) => d.id)]);
  const rows = reply.results
    .filter((r) => r.memory !== undefined)
    .map((r) => ({ ...r, status: r.isLatest ? "live" : "forgotten" }))
    .filter((r) => r.status === status && (!type || r.type === type) && (!doc || docIds.has(r.documentId)));
  return { query, rows };
}

function MemoryTable({ rows, selected, onOpen, scored }) {
  if (!rows.length) return null;
  const keyed = (id) => (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); onOpen(id); } };
  return html`<table class="memory-table">
    <thead><tr><th>Memory</th><th>Type</th><th>Status</th><th>${scored ? "Score" : "Stored"}</th></tr></thead>
    <tbody>${rows.map((m) => html`<tr tabindex="0" class=${m.id === selected ? "selected" : ""}
        aria-current=${m.id === selected ? "true" : undefined} onClick=${() => onOpen(m.id)} onKeyDown=${keyed(m.id)}>
      <td>${m.memory}${m.version > 1 ? html` <span class="muted">v${m.version}</span>` : null}</td>
      <td><${Badge} kind=${m.type} /></td>
      <td><span class=${`status ${m.status}`}>${m.status}</span></td>
      <td class="muted">${scored ? m.similarity.toFixed(2) : html`<${When} at=${m.system.createdAt} />`}</td>
    </tr>`)}</tbody>
  </table>`;
}

function Detail({ ns, id, canWrite, changes, onChanged, onOpen }) {
  const memory = useApi(() => api(memoryPath(ns, id), { query: { include: "related,documents" } }), [ns, id, changes]);
  const history = useApi(() => api(`${memoryPath(ns, id)}/history`), [ns, id, changes]);
  const m = memory.data && memory.data.id === id ? memory.data : null;
  if (!m) {
    return html`<aside class="panel memory-detail" aria-label="Memory"><${ErrorNote} error=${memory.error} />
      ${!memory.error && html`<p class="muted">Loading…</p>`}</aside>`;
  }
  const status = statusOf(m);
  const document = m.included && m.included.document;
  return html`<aside class="panel memory-detail" aria-label="Memory">
    <div class="row"><h2>Memory</h2><${Badge} kind=${m.type} /><span class=${`status ${status}`} data-status>${status}</span>
      <span class="muted">version ${m.version}</span></div>
    <blockquote class="memory-text">${m.memory}</blockquote>
    <dl class="memory-times">
      <dt>Valid</dt><dd><${When} at=${m.validFrom} /> → ${m.validUntil ? html`<${When} at=${m.validUntil} />` : "now"}</dd>
      <dt>Recorded</dt><dd><${When} at=${m.system.createdAt} />${m.supersededAt && html`, superseded <${When} at=${m.supersededAt} />`}</dd>
      ${m.forgottenAt && html`<dt>Forgotten</dt><dd><${When} at=${m.forgottenAt} />${m.forgetReason && html` · ${m.forgetReason}`}</dd>`}
      ${m.expiresAt && html`<dt>Expires</dt><dd><${When} at=${m.expiresAt} /></dd>`}
      ${document && html`<dt>Document</dt><dd><a href=${href("documents", { ns, id: document.id })}>${document.title || document.id}</a></dd>`}
      ${m.typedBy && html`<dt>Typed by</dt><dd>${m.typedBy}</dd>`}
      ${m.entities && html`<dt>About</dt><dd>${m.entities.join(", ")}</dd>`}
    </dl>
    <${Relations} related=${m.included && m.included.related} ns=${ns} />
    <${Timeline} history=${history} current=${id} ns=${ns} />
    ${canWrite && html`<${Actions} ns=${ns} m=${m} status=${status} onChanged=${onChanged} />`}
  </aside>`;
}

function Relations({ related, ns }) {
  const siblings = related ? related.siblings : [];
  const groups = [
    ["Extends", siblings.filter((s) => s.relation === "extends" && s.outgoing)],
    ["Extended by", siblings.filter((s) => s.relation === "extends" && !s.outgoing)],
    ["Derived from", siblings.filter((s) => s.relation === "derives" && s.outgoing)],
    ["Derives", siblings.filter((s) => s.relation === "derives" && !s.outgoing)],
    ["Contradicts", siblings.filter((s) => s.relation === "contradicts")],
  ].filter(([, items]) => items.length);
  return html`<section aria-labelledby="memory-relations">
    <h3 id="memory-relations">Relations</h3>
    ${groups.length === 0 ? html`<p class="muted">No links to other memories.</p>` : groups.map(([title, items]) => html`
      <h4>${title}</h4>
      <ul class="relations">${items.map((s) => html`<li><a href=${href("memories", { ns, id: s.id })}>${s.memory}</a></li>`)}</ul>`)}
  </section>`;
}

function Timeline({ history, current, ns }) {
  const versions = history.data ? history.data.memories : [];
  return html`<section aria-labelledby="memory-versions">
    <h3 id="memory-versions">Versions ${versions.length ? html`<span class="muted">(${versions.length})</span>` : null}</h3>
    <${ErrorNote} error=${history.error} />
    <ol class="timeline" aria-label="Version timeline">
      ${versions.map((v) => html`<li class=${v.id === current ? "current" : ""}>
        <div class="row"><strong>v${v.version}</strong><span class=${`status ${statusOf(v)}`}>${statusOf(v)}</span>
          <span class="muted">valid from <${When} at=${v.validFrom} /></span></div>
        ${v.id === current ? html`<span aria-current="true">${v.memory}</span>`
          : html`<a href=${href("memories", { ns, id: v.id })}>${v.memory}</a>`}
      </li>`)}
    </ol>
  </section>`;
}

function Actions({ ns, m, status, onChanged }) {
  const [text, setText] = useState(m.memory);
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  useEffect(() => { setText(m.memory); setReason(""); setError(null); }, [m.id, m.memory]);
  const act = async (work) => {
    setBusy(true);
    setError(null);
    try { onChanged(await work()); } catch (err) { setError(err); } finally { setBusy(false); }
  };
  const update = (e) => {
    e.preventDefault();
    act(async () => (await api(memoryPath(ns, m.id), { method: "PATCH", body: { memory: text.trim() } })).id);
  };
  const forget = () => act(async () => {
    await api(`${nsPath(ns)}/memories`, { method: "DELETE", body: { ids: [m.id], reason: reason.trim() || undefined } });
    return m.id;
  });
  const restore = () => act(async () => (await api(`${memoryPath(ns, m.id)}/restore`, { method: "POST" })).id);
  return html`<section class="memory-actions" aria-labelledby="memory-change">
    <h3 id="memory-change">Change</h3>
    <${ErrorNote} error=${error} />
    ${status === "live" ? html`<form onSubmit=${update}>
      <label>New text<textarea value=${text} onInput=${(e) => setText(e.target.value)} required></textarea></label>
      <div class="row"><button class="primary" type="submit" disabled=${busy || !text.trim() || text.trim() === m.memory}>Update</button>
        <span class="muted">stores a new version</span></div>
    </form>` : status === "superseded" ? html`<p class="muted">Only the latest version takes new text.</p>` : null}
    ${m.forgottenAt ? html`<div class="row"><button onClick=${restore} disabled=${busy}>Restore</button>
        <span class="muted">back into recall</span></div>`
      : html`<div class="row"><label>Reason (optional)<input value=${reason} maxlength="500"
          onInput=${(e) => setReason(e.target.value)} /></label>
        <button class="danger" onClick=${forget} disabled=${busy}>Forget</button></div>`}
  </section>`;
}
