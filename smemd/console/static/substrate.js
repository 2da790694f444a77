// The substrate, at the foot of the rail: each node's state, package temperature and memory, and
// what the background worker is doing, so the card doing the work is always in view.

import { api } from "./api.js";
import { html, useApi } from "./ui.js";

const EVERY_MS = 5000;

function nodeState(node) {
  if (node.state === "paused" || node.state === "lent") return "paused";
  return node.healthy ? "up" : "down";
}

function Node({ node }) {
  const calls = Object.values(node.inFlight || {}).reduce((a, b) => a + b, 0);
  const memory = node.memTotalKb && node.memAvailableKb !== null && node.memAvailableKb !== undefined
    ? `${Math.round((100 * (node.memTotalKb - node.memAvailableKb)) / node.memTotalKb)}% mem` : "";
  const temperature = node.temperatureC !== null && node.temperatureC !== undefined ? `${Math.round(node.temperatureC)}°C` : "";
  return html`<li title=${`${node.id}: ${node.state}${node.lastError ? ` (${node.lastError})` : ""}`}>
    <span class=${`dot ${nodeState(node)}`} aria-hidden="true"></span>
    <span>${node.id} <span class="sr-only">${node.state}</span></span>
    <span class="muted">${[temperature, memory, calls ? `${calls} busy` : ""].filter(Boolean).join(" · ") || node.state}</span>
  </li>`;
}

function Worker({ dreaming, jobs }) {
  const open = jobs ? Object.entries(jobs.counts).filter(([phase, n]) => n && !["done", "failed"].includes(phase)) : [];
  const ingest = open.length ? open.map(([phase, n]) => `${n} ${phase}`).join(", ") : "no ingest queued";
  const dream = dreaming ? `dreaming: ${dreaming.state}` : "";
  return html`<p class="worker" aria-live="polite">${ingest}${dream ? html`<br />${dream}` : ""}</p>`;
}

export function Substrate() {
  const nodes = useApi(() => api("/v1/nodes"), [], EVERY_MS);
  const dreaming = useApi(() => api("/v1/dreaming"), [], EVERY_MS);
  const jobs = useApi(() => api("/v1/jobs", { query: { limit: 1 } }), [], EVERY_MS);
  const list = nodes.data ? nodes.data.nodes : [];
  return html`<section class="substrate" aria-label="Substrate">
    <h2>Substrate${nodes.data ? ` · ${nodes.data.fleetKind}` : ""}</h2>
    ${list.length ? html`<ul>${list.map((n) => html`<${Node} node=${n} key=${n.id} />`)}</ul>`
      : html`<p class="muted">in-process models</p>`}
    <${Worker} dreaming=${dreaming.data} jobs=${jobs.data} />
  </section>`;
}
