// The Documents view: the namespace's ingest queue as its jobs move through their phases, its
// documents a page at a time, adding one (text, a URL for smemd to fetch, or a file), one
// document read with the memories extracted from it, and re-deriving the namespace from them.

import { api, download, ns as nsPath } from "../api.js";
import { href, navigate } from "../route.js";
import { ErrorNote, Pager, When, html, plural, useApi, useEffect, useRef, useState } from "../ui.js";
import Rederive from "./documents-rederive.js";

// A job is open until it is done or failed (smemd.store.records.OPEN_PHASES).
const OPEN = ["queued", "fetching", "chunking", "embedding", "extracting", "reconciling"];
const OPEN_MS = 1000; // while a job of the namespace moves, its phases are worth watching
const IDLE_MS = 10000; // otherwise only to notice work added elsewhere
const JOBS = 10;
const PAGE = 20;
const SHOWN_CHARS = 4000; // of a document's content, before "Show all"
const SHOWN_MEMORIES = 100; // of a document's memories, before "Show all" (a long PDF has hundreds)

const isOpen = (job) => OPEN.includes(job.phase);
const docPath = (ns, id) => `${nsPath(ns)}/document/${encodeURIComponent(id)}`;

// The phases each job was seen in, in order, kept for as long as the view is open: a poll sees
// only the current phase, and a quick job passes several between two polls.
function useTrails(jobs) {
  const trails = useRef(new Map());
  for (const job of jobs) {
    const trail = trails.current.get(job.id) || [];
    if (trail[trail.length - 1] !== job.phase) trails.current.set(job.id, [...trail, job.phase]);
  }
  return trails.current;
}

function Phase({ phase }) {
  return html`<span class=${`phase ${phase}`}>${phase}</span>`;
}

function Queue({ ns, jobs, trails, selected, titles }) {
  const data = jobs.data;
  const list = data ? data.jobs : [];
  const counts = data ? Object.entries(data.counts).filter(([, n]) => n) : [];
  return html`<section class="panel queue" aria-labelledby="queue-title">
    <div class="row spread">
      <h2 id="queue-title">Processing queue</h2>
      <span class="muted" aria-live="polite">${counts.map(([phase, n]) => `${n} ${phase}`).join(" · ") || "nothing queued yet"}</span>
    </div>
    <${ErrorNote} error=${jobs.error} />
    ${list.length ? html`<table>
      <caption class="sr-only">The namespace's latest ingest jobs</caption>
      <thead><tr><th>Document</th><th>Phase</th><th>Tries</th><th>Updated</th></tr></thead>
      <tbody>${list.map((job) => html`<tr key=${job.id} class=${job.documentId === selected ? "selected" : undefined}>
        <td><a href=${href("documents", { ns, id: job.documentId })}>${job.documentId}</a>
          ${titles.has(job.documentId) && html`<div class="muted one-line">${titles.get(job.documentId)}</div>`}
          ${job.revision > 1 ? html` <span class="muted">rev ${job.revision}</span>` : ""}</td>
        <td><${Phase} phase=${job.phase} />
          ${(trails.get(job.id) || []).length > 1 ? html`<div class="trail muted">${trails.get(job.id).join(" → ")}</div>` : ""}
          ${job.error ? html`<div class="error">${job.error}</div>` : ""}</td>
        <td>${job.attempts}</td>
        <td><${When} at=${job.updatedAt} /></td>
      </tr>`)}</tbody>
    </table>` : data && html`<p class="empty">No document of ${ns} has been ingested yet.</p>`}
  </section>`;
}

const MODES = [
  { id: "text", title: "Text" },
  { id: "url", title: "URL" },
  { id: "file", title: "File" },
];

function AddDocument({ ns, onAdded }) {
  const [mode, setMode] = useState("text");
  const [text, setText] = useState("");
  const [url, setUrl] = useState("");
  const [file, setFile] = useState(null);
  const [customId, setCustomId] = useState("");
  const [fileInput, setFileInput] = useState(0); // a new key empties the file input
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [added, setAdded] = useState(null);

  const ready = mode === "text" ? text.trim() : mode === "url" ? url.trim() : file;
  const submit = async (event) => {
    event.preventDefault();
    if (!ready || busy) return;
    setBusy(true);
    setError(null);
    setAdded(null);
    try {
      let ref;
      if (mode === "file") {
        const form = new FormData();
        form.append("file", file, file.name);
        ref = await api(`${nsPath(ns)}/document/file`, { method: "POST", form });
        setFile(null);
        setFileInput((k) => k + 1);
      } else {
        // A lone URL as content is fetched by smemd (README: Documents from a URL).
        const content = mode === "url" ? url.trim() : text;
        ref = await api(`${nsPath(ns)}/document`, { method: "POST", body: { content, id: customId.trim() || undefined } });
        if (mode === "url") setUrl(""); else setText("");
        setCustomId("");
      }
      setAdded(ref);
      onAdded(ref);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return html`<section class="panel add" aria-labelledby="add-title">
    <h2 id="add-title">Add a document</h2>
    <form onSubmit=${submit}>
      <fieldset class="modes">
        <legend class="sr-only">Add from</legend>
        ${MODES.map((m) => html`<label class="mode" key=${m.id}>
          <input type="radio" name="add-mode" value=${m.id} checked=${mode === m.id} onChange=${() => setMode(m.id)} /> ${m.title}
        </label>`)}
      </fieldset>
      ${mode === "text" && html`<label>Document text
        <textarea value=${text} onInput=${(e) => setText(e.target.value)} placeholder="What smem should remember" required></textarea>
      </label>`}
      ${mode === "url" && html`<label>URL to fetch
        <input type="url" value=${url} onInput=${(e) => setUrl(e.target.value)} placeholder="The address of a page, PDF or text file" required />
        <span class="hint">smemd fetches the page, PDF or text file, then reads it</span>
      </label>`}
      ${mode === "file" && html`<label>File to upload
        <input key=${fileInput} type="file" accept=".txt,.md,.html,.htm,.pdf,text/*,application/pdf"
          onChange=${(e) => setFile(e.target.files[0] || null)} required />
        <span class="hint">UTF-8 text, HTML or PDF</span>
      </label>`}
      <div class="row">
        ${mode !== "file" && html`<label class="custom-id">Your id (optional)
          <input value=${customId} onInput=${(e) => setCustomId(e.target.value)} maxlength="255" />
        </label>`}
        <button class="primary" type="submit" disabled=${!ready || busy}>${busy ? "Adding…" : "Add"}</button>
      </div>
      <${ErrorNote} error=${error} />
      ${added && html`<p class="good" role="status">Added <a class="mono" href=${href("documents", { ns, id: added.id })}>${added.id}</a> (${added.status})</p>`}
    </form>
  </section>`;
}

// The whole namespace in the export format (README: Export), saved as NS.jsonl.
function ExportButton({ ns }) {
  const [state, setState] = useState({ busy: false, error: null });
  const save = async () => {
    setState({ busy: true, error: null });
    try {
      await download(`${nsPath(ns)}/export`, `${ns}.jsonl`);
      setState({ busy: false, error: null });
    } catch (error) {
      setState({ busy: false, error });
    }
  };
  return html`<button type="button" onClick=${save} disabled=${state.busy}>${state.busy ? "Exporting…" : "Export"}</button>
    <${ErrorNote} error=${state.error} />`;
}

function DocumentList({ ns, docs, page, onPage, selected }) {
  const data = docs.data;
  const list = data ? data.documents : [];
  const open = (id) => navigate("documents", { ns, id });
  return html`<section class="panel" aria-labelledby="list-title">
    <div class="row spread">
      <h2 id="list-title">Documents</h2>
      ${data && html`<span class="muted">${plural(data.pagination.totalItems, "document")}</span>`}
      ${list.length > 0 && html`<${ExportButton} ns=${ns} />`}
    </div>
    <${ErrorNote} error=${docs.error} />
    ${list.length ? html`<table class="documents">
      <thead><tr><th>Document</th><th>Type</th><th>Status</th><th>Memories</th><th>Added</th></tr></thead>
      <tbody>${list.map((doc) => html`<tr key=${doc.id} tabindex="0" class=${doc.id === selected ? "selected" : undefined}
          aria-label=${`Open ${doc.title || doc.customId || doc.id}`}
          onClick=${() => open(doc.id)} onKeyDown=${(e) => { if (e.key === "Enter") open(doc.id); }}>
        <td><div class="title">${doc.title || doc.customId || doc.id}</div>
          <div class="mono muted">${doc.customId ? `${doc.customId} · ` : ""}${doc.id}</div>
          ${doc.url && html`<div class="muted url">${doc.url}</div>`}</td>
        <td>${doc.type}</td>
        <td><${Phase} phase=${doc.system.status} /></td>
        <td>${doc.system.memoryCount ?? "—"}</td>
        <td><${When} at=${doc.system.createdAt} /></td>
      </tr>`)}</tbody>
    </table>` : data && html`<p class="empty">No documents in ${ns}.</p>`}
    <${Pager} page=${page} pages=${data && data.pagination.totalPages} onPage=${onPage} label="Document pages" />
  </section>`;
}

function Content({ text }) {
  const [all, setAll] = useState(false);
  if (!text) return html`<p class="muted">No content.</p>`;
  const long = text.length > SHOWN_CHARS;
  return html`<pre class="content">${all || !long ? text : `${text.slice(0, SHOWN_CHARS)}…`}</pre>
    ${long && html`<button type="button" onClick=${() => setAll(!all)} aria-expanded=${all}>${all ? "Show less" : `Show all ${text.length} characters`}</button>`}`;
}

function Detail({ ns, id, canWrite, version, onDeleted }) {
  // `version` changes when the document's job moves, so its status and memories follow.
  const doc = useApi(() => api(docPath(ns, id), { query: { include: "memories" } }), [ns, id, version]);
  const [error, setError] = useState(null);
  const [deleting, setDeleting] = useState(false);
  const [allMemories, setAllMemories] = useState(false);
  const d = doc.data;
  const remove = async () => {
    const name = d.title || d.customId || d.id;
    if (!window.confirm(`Delete "${name}" for good? Its chunks and the memories only it supports go with it.`)) return;
    setDeleting(true);
    setError(null);
    try {
      await api(`${nsPath(ns)}/document`, { method: "DELETE", body: { ids: [d.id] } });
      onDeleted(d.id);
    } catch (err) {
      setError(err);
      setDeleting(false);
    }
  };
  const memories = d ? d.memories || [] : [];
  return html`<section class="panel detail" aria-labelledby="detail-title">
    <div class="row spread">
      <h2 id="detail-title">${d ? d.title || d.customId || "Document" : "Document"}</h2>
      <a href=${href("documents", { ns })}>Close</a>
    </div>
    <${ErrorNote} error=${doc.error} />
    ${d && html`
      <dl class="facts">
        <dt>Id</dt><dd class="mono">${d.id}</dd>
        ${d.customId && html`<dt>Your id</dt><dd class="mono">${d.customId}</dd>`}
        ${d.url && html`<dt>URL</dt><dd class="url">${d.url}</dd>`}
        <dt>Type</dt><dd>${d.type}</dd>
        <dt>Status</dt><dd><${Phase} phase=${d.system.status} /></dd>
        <dt>Added</dt><dd><${When} at=${d.system.createdAt} /></dd>
      </dl>
      ${canWrite && html`<div class="row"><button class="danger" type="button" onClick=${remove} disabled=${deleting}>${deleting ? "Deleting…" : "Delete document"}</button></div>`}
      <${ErrorNote} error=${error} />
      <h3>Memories (${memories.length})</h3>
      ${memories.length ? html`<ul class="memories" aria-label="Memories of this document">${(allMemories ? memories : memories.slice(0, SHOWN_MEMORIES)).map((m) => html`<li key=${m.id}>
        <span class=${`badge ${m.type}`}>${m.type}</span>
        <a href=${href("memories", { ns, id: m.id })}>${m.memory}</a>
        ${!m.isLatest && html` <span class="badge superseded">superseded</span>`}
        ${m.isForgotten && html` <span class="badge forgotten">forgotten</span>`}
      </li>`)}</ul>
      ${memories.length > SHOWN_MEMORIES && !allMemories && html`<button type="button" onClick=${() => setAllMemories(true)}>Show all ${memories.length} memories</button>`}` : html`<p class="muted">${OPEN.includes(d.system.status) ? "Not read yet: its job is still open." : "No memories were extracted."}</p>`}
      <h3>Content</h3>
      <${Content} text=${d.content} />`}
  </section>`;
}

export default function Documents({ ns, params, canWrite, reloadNamespaces }) {
  const [page, setPage] = useState(1);
  const [openJobs, setOpenJobs] = useState(false);
  useEffect(() => setPage(1), [ns]);
  const jobs = useApi(() => api("/v1/jobs", { query: { namespace: ns, limit: JOBS } }), [ns, openJobs], openJobs ? OPEN_MS : IDLE_MS);
  const jobList = jobs.data ? jobs.data.jobs : [];
  const trails = useTrails(jobList);
  const anyOpen = jobList.some(isOpen);
  useEffect(() => setOpenJobs(anyOpen), [anyOpen]);
  // What the queue shows, as one string: when it changes, the list and the open document follow.
  const moves = jobList.map((j) => `${j.id}:${j.phase}`).join(",");
  const docs = useApi(
    () => api(`${nsPath(ns)}/list/documents`, { method: "POST", query: { page, limit: PAGE }, body: { include: { memoryCount: true } } }),
    [ns, page, moves],
  );
  // The queue names the jobs' documents that the listed page holds (jobs carry only ids).
  const titles = new Map((docs.data ? docs.data.documents : []).map((d) => [d.id, d.title || d.customId]).filter(([, t]) => t));
  const selected = params.id || null;
  const selectedJob = selected && jobList.find((j) => j.documentId === selected);
  const added = () => {
    jobs.reload();
    docs.reload();
    setOpenJobs(true);
    reloadNamespaces(); // the namespace's counts changed, and the first document made it
  };
  const applied = () => {
    docs.reload(); // the documents came back from the shadow, under new ids
    reloadNamespaces();
  };
  const deleted = () => {
    navigate("documents", { ns });
    jobs.reload();
    docs.reload();
    reloadNamespaces();
  };
  return html`<header><h1>Documents</h1><span class="muted">in ${ns}</span></header>
    <div class="documents-view">
      <div class=${canWrite ? "grid top" : "top"}>
        <${Queue} ns=${ns} jobs=${jobs} trails=${trails} selected=${selected} titles=${titles} />
        ${canWrite && html`<${AddDocument} ns=${ns} onAdded=${added} />`}
      </div>
      <div class=${selected ? "split" : ""}>
        <${DocumentList} ns=${ns} docs=${docs} page=${page} onPage=${setPage} selected=${selected} />
        ${selected && html`<${Detail} key=${selected} ns=${ns} id=${selected} canWrite=${canWrite}
          version=${selectedJob ? `${selectedJob.id}:${selectedJob.phase}` : ""} onDeleted=${deleted} />`}
      </div>
      ${canWrite && docs.data && docs.data.pagination.totalItems > 0 && html`<${Rederive} ns=${ns} onApplied=${applied} />`}
    </div>`;
}
