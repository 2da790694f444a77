// The Documents view's re-derive panel (README: Re-derive from the evidence): read every document
// of the namespace again into its shadow, watch it being read, then see what would change —
// counts and examples — and apply it or discard it.

import { api, ns as nsPath } from "../api.js";
import { ErrorNote, html, plural, useApi, useState } from "../ui.js";

const RUNNING_MS = 1000; // while the shadow is being read
const IDLE_MS = 10000; // otherwise only to notice one begun or ended elsewhere (smemctl)
const KINDS = [
  { id: "added", title: "Memories added" },
  { id: "gone", title: "Memories gone" },
  { id: "retyped", title: "Type changed" },
  { id: "rechained", title: "Version chain changed" },
  { id: "relationsGained", title: "Relations gained" },
  { id: "relationsLost", title: "Relations lost" },
];

function Progress({ done }) {
  const read = done.documents - done.pending;
  return html`<div class="progress-line">
    <progress max=${done.documents || 1} value=${read} aria-label="Documents read again"></progress>
    <span class="muted" aria-live="polite">${read} of ${plural(done.documents, "document")} read</span>
  </div>`;
}

function Diff({ done }) {
  const total = KINDS.reduce((n, kind) => n + (done.counts[kind.id] || 0), 0);
  if (!total) return html`<p class="good" role="status">Nothing would change: the documents say what the namespace holds.</p>`;
  return html`<table class="diff-counts" aria-label="What would change">
      <tbody>${KINDS.map((kind) => html`<tr key=${kind.id}><th scope="row">${kind.title}</th><td>${done.counts[kind.id] || 0}</td></tr>`)}</tbody>
    </table>
    ${KINDS.filter((kind) => (done.examples[kind.id] || []).length).map((kind) => html`<details key=${kind.id} class="examples">
      <summary>${kind.title}: examples</summary>
      <ul aria-label=${`${kind.title}: examples`}>${done.examples[kind.id].map((text, i) => html`<li key=${i}>${text}</li>`)}</ul>
    </details>`)}`;
}

export default function Rederive({ ns, onApplied }) {
  const [busy, setBusy] = useState("");
  const [error, setError] = useState(null);
  const [ended, setEnded] = useState(null); // "applied" or "discarded", until the next start
  const [running, setRunning] = useState(false);
  const state = useApi(async () => {
    const found = await api(`${nsPath(ns)}/rederive`); // state "none" while there is none
    setRunning(found.state === "running");
    return found;
  }, [ns, running], running ? RUNNING_MS : IDLE_MS);
  const done = state.data;

  const act = async (label, method, path, confirmText) => {
    if (confirmText && !window.confirm(confirmText)) return;
    setBusy(label);
    setError(null);
    try {
      const reply = await api(`${nsPath(ns)}/rederive${path}`, { method });
      setEnded(reply.state === "applied" || reply.state === "discarded" ? reply.state : null);
      if (reply.state === "applied") onApplied();
      state.reload();
      setRunning(reply.state === "running");
    } catch (err) {
      setError(err);
    } finally {
      setBusy("");
    }
  };

  return html`<section class="panel rederive" aria-labelledby="rederive-title">
    <div class="row spread">
      <h2 id="rederive-title">Re-derive</h2>
      ${done && done.state !== "none" && html`<span class="muted">${done.model ? `read by ${done.model}` : "read by this daemon's rules"}</span>`}
    </div>
    <${ErrorNote} error=${state.error || error} />
    ${done && done.state === "none" && html`
      <p class="muted">Read every document of ${ns} again with today's rules, into a shadow, and see what would change before anything does.</p>
      ${ended && html`<p class="good" role="status">${ended === "applied" ? "Applied: the namespace now holds the memory its documents give." : "Discarded: the namespace is as it was."}</p>`}
      <div class="row"><button type="button" onClick=${() => act("start", "POST", "")} disabled=${Boolean(busy)}>${busy === "start" ? "Starting…" : "Re-derive"}</button></div>`}
    ${done && done.state === "running" && html`<${Progress} done=${done} />`}
    ${done && done.state === "ready" && html`
      <${Diff} done=${done} />
      ${done.notCarried.length > 0 && html`<details class="examples" open>
        <summary class="warn">Not carried over by an apply (${done.notCarried.length})</summary>
        <ul aria-label="Not carried over">${done.notCarried.map((text, i) => html`<li key=${i}>${text}</li>`)}</ul>
      </details>`}
      <div class="row">
        <button class="primary" type="button" disabled=${Boolean(busy)}
          onClick=${() => act("apply", "POST", "/apply", `Replace the memory of ${ns} with the re-derived one? Its documents get new ids; their custom ids stay.`)}>${busy === "apply" ? "Applying…" : "Apply"}</button>
        <button type="button" disabled=${Boolean(busy)} onClick=${() => act("discard", "DELETE", "")}>${busy === "discard" ? "Discarding…" : "Discard"}</button>
      </div>`}
  </section>`;
}
