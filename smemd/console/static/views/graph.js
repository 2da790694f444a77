// The Graph view: a bounded neighbourhood of documents, memories and the entities they name
// (`GET /ns/{ns}/graph`), laid out once by d3-force and drawn as static SVG. Searching re-centres it on the search's hits;
// picking a node re-centres it on that node and shows the node beside the graph. Where the graph
// is centred lives in the hash (`#/graph?ns=x&around=id` or `&q=text`), so it can be shared.

import { api, ns as nsPath } from "../api.js";
import { ErrorNote, html, plural, useApi, useEffect, useMemo, useState } from "../ui.js";
import { href, navigate } from "../route.js";

const VENDOR = ["d3-dispatch", "d3-quadtree", "d3-timer", "d3-force"]; // in dependency order
const TICKS = 300;
const CARD = { width: 112, height: 22 };
const DOT = 6;
const MARK = 8; // an entity's shape, centre to corner
const TYPES = ["fact", "preference", "episode"];
const KINDS = ["person", "place", "organisation", "thing"]; // of entities, each its own shape
const KIND_NAMES = { person: "people", place: "places", organisation: "organisations", thing: "things" };
const EDGES = ["source", "mentions", "updates", "extends", "derives", "contradicts"];
const DEPTHS = ["1", "2", "3"];
const LIMITS = ["50", "150", "300", "500"];

let d3Loading = null;

// The d3 modules are UMD files that extend `window.d3`: loaded once, in order, on first use, as
// same-origin scripts (the page's policy allows those and nothing inline).
function loadD3() {
  if (!d3Loading) {
    d3Loading = VENDOR.reduce((before, name) => before.then(() => new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = `/console/vendor/${name}.js`;
      script.addEventListener("load", resolve);
      script.addEventListener("error", () => reject(new Error(`${name}.js did not load`)));
      document.head.append(script);
    })), Promise.resolve()).then(() => window.d3);
    d3Loading.catch(() => { d3Loading = null; });
  }
  return d3Loading;
}

function useD3() {
  const [state, setState] = useState({ d3: null, error: null });
  useEffect(() => { loadD3().then((d3) => setState({ d3, error: null }), (error) => setState({ d3: null, error })); }, []);
  return state;
}

const DISTANCE = { source: 80, mentions: 64 };
const CHARGE = { document: -220, entity: -140, memory: -45 };
const radius = (n) => (n.kind === "document" ? CARD.width / 2 + 4 : n.kind === "entity" ? MARK + 3 : DOT + 3);

// Positions for every node, after a fixed number of ticks, and the box that holds them.
function layout(d3, graph) {
  const nodes = graph.nodes.map((n) => ({ ...n }));
  const links = graph.edges.map((e) => ({ ...e }));
  const simulation = d3.forceSimulation(nodes)
    .force("link", d3.forceLink(links).id((n) => n.id).distance((l) => DISTANCE[l.kind] || 36).strength((l) => (l.kind === "source" ? 0.4 : l.kind === "mentions" ? 0.3 : 0.8)))
    .force("charge", d3.forceManyBody().strength((n) => CHARGE[n.kind]))
    // A card collides as the circle around it, so no dot lands on its ends; an entity with room
    // for its name below it.
    .force("collide", d3.forceCollide((n) => radius(n) + (n.kind === "entity" ? 10 : 0)))
    .force("x", d3.forceX().strength(0.05))
    .force("y", d3.forceY().strength(0.05));
  simulation.stop();
  for (let i = 0; i < TICKS; i++) simulation.tick();
  // Room for a card's half width around the outermost centres; a small graph is not blown up.
  const pad = CARD.width / 2 + 12;
  const xs = nodes.map((n) => n.x);
  const ys = nodes.map((n) => n.y);
  const width = Math.max(Math.max(...xs) - Math.min(...xs) + 2 * pad, 480);
  const height = Math.max(Math.max(...ys) - Math.min(...ys) + 2 * pad, 360);
  const middle = [(Math.max(...xs) + Math.min(...xs)) / 2, (Math.max(...ys) + Math.min(...ys)) / 2];
  const box = [middle[0] - width / 2, middle[1] - height / 2, width, height];
  return { nodes, links, box: box.map((v) => v.toFixed(1)).join(" ") };
}

// A line from edge to edge of its two nodes, so an arrow's head shows at the node it points to.
function ends(link) {
  const { source: a, target: b } = link;
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const length = Math.hypot(dx, dy) || 1;
  const inset = (n) => (n.kind === "document" ? CARD.height / 2 + 2 : n.kind === "entity" ? MARK + 2 : DOT + 3);
  const from = inset(a) / length;
  const to = inset(b) / length;
  return { x1: a.x + dx * from, y1: a.y + dy * from, x2: b.x - dx * to, y2: b.y - dy * to };
}

const short = (text, max) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

function describe(node) {
  if (node.kind === "entity") return `${node.entityKind}: ${node.label}, named by ${plural(node.memories, "live memory", "live memories")}`;
  const what = node.kind === "document" ? "Document" : node.status === "live" ? node.type : `${node.status} ${node.type}`;
  return `${what}: ${node.label}`;
}

// An entity's outline, by its kind: a person a diamond, a place a triangle, an organisation a
// square, a thing a hexagon; `r` from the centre to a corner.
function markPath(kind, r) {
  const points = {
    person: [[0, -r], [r, 0], [0, r], [-r, 0]],
    place: [[0, -r], [r * 0.95, r * 0.7], [-r * 0.95, r * 0.7]],
    organisation: [[-r * 0.78, -r * 0.78], [r * 0.78, -r * 0.78], [r * 0.78, r * 0.78], [-r * 0.78, r * 0.78]],
  }[kind] || [0, 1, 2, 3, 4, 5].map((i) => [r * Math.cos((Math.PI / 3) * i), r * Math.sin((Math.PI / 3) * i)]);
  return `M${points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" L")} Z`;
}

// A ring around a search's hit, or the node the graph is centred on, in the node's own shape.
function Halo({ node, kind }) {
  const gap = 4;
  return node.kind === "document"
    ? html`<rect class=${`halo ${kind}`} x=${-CARD.width / 2 - gap} y=${-CARD.height / 2 - gap}
        width=${CARD.width + 2 * gap} height=${CARD.height + 2 * gap} rx="9" />`
    : html`<circle class=${`halo ${kind}`} r=${(node.kind === "entity" ? MARK : DOT) + gap + 1} />`;
}

function Node({ node, hit, selected, onPick }) {
  const classes = ["node", node.kind, node.type, node.entityKind, node.status, hit && "hit", selected && "selected"].filter(Boolean).join(" ");
  const onKeyDown = (event) => {
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); onPick(node); }
  };
  const shape = node.kind === "document"
    ? html`<rect class="shape" x=${-CARD.width / 2} y=${-CARD.height / 2} width=${CARD.width} height=${CARD.height} rx="6" />
        <text class="card-label" y="4">${short(node.label, 18)}</text>`
    : node.kind === "entity"
      ? html`<path class="shape" d=${markPath(node.entityKind, MARK)} />
          <text class="mark-label" y=${MARK + 15}>${short(node.label, 16)}</text>`
      : html`<circle class="shape" r=${DOT} />`;
  return html`<g class=${classes} transform=${`translate(${node.x.toFixed(1)} ${node.y.toFixed(1)})`}
      tabindex="0" role="button" aria-label=${describe(node)} aria-current=${selected ? "true" : undefined}
      data-id=${node.id} onClick=${() => onPick(node)} onKeyDown=${onKeyDown}>
    ${(hit || selected) && html`<${Halo} node=${node} kind=${selected ? "selected" : "hit"} />`}
    ${shape}
    <title>${node.label}</title>
  </g>`;
}

function Canvas({ placed, highlight, selected, onPick }) {
  return html`<svg class="graph-canvas" viewBox=${placed.box} role="group"
      aria-label=${`Graph of ${plural(placed.nodes.length, "node")} and ${plural(placed.links.length, "link")}`}>
    <defs>
      <marker id="graph-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
        <path class="arrow" d="M0,0 L10,5 L0,10 z" />
      </marker>
    </defs>
    <g class="edges">
      ${placed.links.map((l) => html`<line class=${`edge ${l.kind}`} ...${ends(l)}
        marker-end=${l.kind === "updates" ? "url(#graph-arrow)" : undefined} />`)}
    </g>
    <g class="nodes">
      ${placed.nodes.map((n) => html`<${Node} key=${n.id} node=${n} hit=${highlight && n.seed}
        selected=${n.id === selected} onPick=${onPick} />`)}
    </g>
  </svg>`;
}

function Legend({ counts }) {
  const item = (key, swatch, name, count) => html`<li class=${`legend-${key}`}>
    <svg class="swatch" viewBox="-12 -8 24 16" aria-hidden="true">${swatch}</svg>
    <span>${name}</span> <b data-legend=${key}>${count}</b></li>`;
  return html`<section class="panel graph-legend" aria-label="Legend">
    <h2>Legend</h2>
    <ul>
      ${item("document", html`<g class="node document"><rect class="shape" x="-11" y="-6" width="22" height="12" rx="3" /></g>`, "documents", counts.byKind.document)}
      ${TYPES.map((t) => item(t, html`<g class=${`node ${t}`}><circle class="shape" r="5" /></g>`, `${t}s`, counts.byType[t]))}
      ${item("superseded", html`<g class="node fact superseded"><circle class="shape" r="5" /></g>`, "superseded", counts.byStatus.superseded)}
      ${item("forgotten", html`<g class="node fact forgotten"><circle class="shape" r="5" /></g>`, "forgotten", counts.byStatus.forgotten)}
    </ul>
    <ul aria-label="Entities">
      ${KINDS.map((k) => item(k, html`<g class=${`node entity ${k}`}><path class="shape" d=${markPath(k, 6)} /></g>`, KIND_NAMES[k], (counts.byEntityKind || {})[k] || 0))}
    </ul>
    <ul>
      ${EDGES.map((k) => item(k, html`<line class=${`edge ${k}`} x1="-11" y1="0" x2="11" y2="0" />`, k, counts.byEdge[k] || 0))}
    </ul>
  </section>`;
}

function Side({ node, ns }) {
  if (!node) {
    return html`<aside class="panel graph-side" aria-label="Selected node">
      <p class="muted">Pick a node (click it, or focus it and press Enter) to centre the graph on it and read it here.</p>
    </aside>`;
  }
  if (node.kind === "entity") {
    return html`<aside class="panel graph-side" aria-label="Selected node">
      <h2>Entity</h2>
      <p class="row">
        <span class=${`badge ${node.entityKind}`}>${node.entityKind}</span>
        <span class="mono muted">${node.id}</span>
      </p>
      <p class="graph-text">${node.text}</p>
      <p class="row">
        <a href=${href("memories", { ns, entity: node.id })}>Its memories</a>
      </p>
    </aside>`;
  }
  const memory = node.kind === "memory";
  return html`<aside class="panel graph-side" aria-label="Selected node">
    <h2>${memory ? "Memory" : "Document"}</h2>
    <p class="row">
      ${memory && html`<span class=${`badge ${node.type}`}>${node.type}</span>`}
      ${node.status !== "live" && html`<span class=${`badge ${node.status}`}>${node.status}</span>`}
      <span class="mono muted">${node.id}</span>
    </p>
    <p class="graph-text">${node.text}</p>
    <p class="row">
      <a href=${href(memory ? "memories" : "documents", { ns, id: node.id })}>Open in ${memory ? "Memories" : "Documents"}</a>
      ${memory && node.documentId && html`<a href=${href("graph", { ns, around: node.documentId })}>Its document</a>`}
    </p>
  </aside>`;
}

function Controls({ ns, params }) {
  const [typed, setTyped] = useState(params.q || "");
  useEffect(() => setTyped(params.q || ""), [params.q]);
  const go = (change) => navigate("graph", { ns, depth: params.depth, limit: params.limit, around: params.around, q: params.q, ...change });
  const submit = (event) => {
    event.preventDefault();
    const q = typed.trim();
    go({ q: q || undefined, around: undefined });
  };
  return html`<form class="row graph-controls" role="search" onSubmit=${submit}>
    <label>Search the graph
      <input type="search" data-search value=${typed} placeholder="centre on a search's hits"
        onInput=${(e) => setTyped(e.target.value)} maxlength="2000" />
    </label>
    <button type="submit" class="primary">Search</button>
    <label>Depth
      <select value=${params.depth || "1"} onChange=${(e) => go({ depth: e.target.value })}>
        ${DEPTHS.map((d) => html`<option value=${d}>${d}</option>`)}
      </select>
    </label>
    <label>Nodes at most
      <select value=${params.limit || "150"} onChange=${(e) => go({ limit: e.target.value })}>
        ${LIMITS.map((l) => html`<option value=${l}>${l}</option>`)}
      </select>
    </label>
    ${(params.q || params.around) && html`<a class="button" href=${href("graph", { ns, depth: params.depth, limit: params.limit })}>Newest documents</a>`}
  </form>`;
}

export default function Graph({ ns, params, namespaces }) {
  const { d3, error: d3Error } = useD3();
  // Only a namespace the list names: asking for another would be a 404, not a graph.
  const known = namespaces.some((n) => n.namespace === ns) || namespaces.length >= 100;
  const query = { around: params.around, q: params.q, depth: params.depth, limit: params.limit };
  const graph = useApi(
    () => (known ? api(`${nsPath(ns)}/graph`, { query }) : null),
    [ns, known, params.around, params.q, params.depth, params.limit],
  );
  const data = graph.data;
  const placed = useMemo(() => (d3 && data && data.nodes.length ? layout(d3, data) : null), [d3, data]);
  const selected = data && params.around ? data.nodes.find((n) => n.id === params.around) : null;
  const pick = (node) => navigate("graph", { ns, around: node.id, depth: params.depth, limit: params.limit });
  const centre = params.q ? `the hits of “${params.q}”` : selected ? `“${short(selected.label, 40)}”` : "the newest documents";

  return html`<header><h1>Graph</h1><span class="muted">${ns}: around ${centre}</span></header>
    <${Controls} ns=${ns} params=${params} />
    <${ErrorNote} error=${graph.error || d3Error} />
    ${!known && html`<p class="empty">No documents in “${ns}” yet.</p>`}
    ${data && data.truncated && html`<p class="notice" role="status">Showing ${plural(data.nodes.length, "node")}, the most the limit allows: there is more around. Search, or pick a node, to see another part.</p>`}
    ${data && !data.nodes.length && html`<p class="empty">${params.q ? "The search found nothing to centre on." : "Nothing here yet: no documents in this namespace."}</p>`}
    <div class="graph-layout">
      <div class="graph-main" aria-busy=${graph.loading ? "true" : "false"}>
        ${placed ? html`<${Canvas} placed=${placed} highlight=${Boolean(params.q)} selected=${params.around} onPick=${pick} />`
          : known && (graph.loading || !d3) && !graph.error && html`<p class="muted">Laying out…</p>`}
      </div>
      <div class="graph-aside">
        ${data && html`<${Legend} counts=${data.counts} />`}
        <${Side} node=${selected} ns=${ns} />
      </div>
    </div>`;
}
