// The Nodes view: every node of the fleet (state, lanes, roles, calls in flight, health, the
// health ladder's last actions, the last error), the cards on a `vca2` fleet with each node's
// temperature and memory over the last hour, the pause in force, and for admins lending nodes
// (`/v1/pause`) and the card actions (`/v1/nodes/{node}/{action}`, `/v1/cards/{card}/reset`).

import { api } from "../api.js";
import { ErrorNote, html, plural, Sparkline, useApi, useState, When } from "../ui.js";

const EVERY_MS = 5000;
const HURRY_MS = 1000;
const HURRY_FOR_MS = 20000;
const TELEMETRY_EVERY_MS = 15000;
const HOUR_S = 3600;
const DURATIONS = [
  { value: "10m", label: "10 min" },
  { value: "30m", label: "30 min" },
  { value: "1h", label: "1 h" },
  { value: "2h", label: "2 h" },
  { value: "custom", label: "custom…" },
];
const DURATION = /^(?=\d)(\d+h)?(\d+m)?(\d+s)?$/; // what `POST /v1/pause` takes as `for`
// The card actions; those that stop a serving node ask first.
// `when`: the states it is offered in (a node at work, booting, takes none: the card manager
// answers 409 while one runs).
const ACTIONS = [
  { id: "boot", label: "Boot", confirm: false, when: (s) => ["off", "failed", "down"].includes(s) },
  { id: "reboot", label: "Reboot", confirm: true, when: (s) => !["off", "booting"].includes(s) },
  { id: "poweroff", label: "Power off", confirm: true, when: (s) => !["off", "booting"].includes(s) },
  { id: "reset", label: "Reset", confirm: true, when: (s) => s !== "booting" },
];
const GOOD = new Set(["up"]);
const WAITING = new Set(["lent", "booting", "degraded", "resting", "off"]);

function stateClass(state) {
  if (GOOD.has(state)) return "up";
  if (WAITING.has(state)) return "paused";
  return "down";
}

// "14:05 (in 10 min)": an instant ahead, in local time and from now.
function ahead(at) {
  const then = new Date(at);
  const minutes = Math.round((then.getTime() - Date.now()) / 60000);
  const clock = then.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  const rest = minutes <= 0 ? "now" : minutes < 60 ? `in ${minutes} min`
    : `in ${Math.floor(minutes / 60)} h${minutes % 60 ? ` ${minutes % 60} min` : ""}`;
  return html`<time datetime=${at} title=${then.toLocaleString()}>${clock} (${rest})</time>`;
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} days`;
}

async function load() {
  const [nodes, lanes] = await Promise.all([api("/v1/nodes"), api("/v1/lanes")]);
  // Only a `vca2` fleet has cards: asking another is a 409.
  const cards = nodes.fleetKind === "vca2" ? await api("/v1/cards") : null;
  return { nodes, lanes, cards };
}

// The lending controls every Pause button shares: how long, and why.
function LendControls({ lend, setLend }) {
  const custom = lend.choice === "custom";
  return html`<div class="row lend-controls">
    <label>Lend for
      <select value=${lend.choice} onChange=${(e) => setLend({ ...lend, choice: e.target.value })}>
        ${DURATIONS.map((d) => html`<option value=${d.value}>${d.label}</option>`)}
      </select>
    </label>
    ${custom && html`<label>Custom duration
      <input value=${lend.custom} placeholder="1h30m" size="8" aria-describedby="lend-help"
        onInput=${(e) => setLend({ ...lend, custom: e.target.value.trim() })} />
    </label>`}
    <label class="grow">Reason
      <input value=${lend.reason} maxlength="1000" placeholder="render job"
        onInput=${(e) => setLend({ ...lend, reason: e.target.value })} />
    </label>
    <span id="lend-help" class="muted">Hours, minutes, seconds: 45m, 1h30m. Lent nodes share one end.</span>
  </div>`;
}

function PausePanel({ lanes, isAdmin, busy, onResume }) {
  const pause = lanes.pause;
  return html`<section class="panel pause-panel" aria-label="Pause">
    <h2>Pause</h2>
    ${lanes.pauseError && html`<p class="error" role="alert">The pause file is not read: ${lanes.pauseError}</p>`}
    ${pause
      ? html`<p><span class="dot paused" aria-hidden="true"></span>
          ${plural(pause.nodes.length, "node")} lent (${pause.nodes.join(", ")}) until ${ahead(pause.until)}
          ${pause.by && html` by <strong>${pause.by}</strong>`}
          ${pause.reason && html`: <span class="muted">${pause.reason}</span>`}</p>
        ${isAdmin && html`<button disabled=${busy} onClick=${() => onResume(null)}>Resume all</button>`}`
      : html`<p class="muted">No node is lent: all serve smem.</p>`}
  </section>`;
}

// "44–47 °C": the span a plot is scaled to, since it has no axis.
function range(values, unit) {
  const known = values.filter((v) => v !== null && v !== undefined);
  if (!known.length) return "";
  return `${Math.round(Math.min(...known))}–${Math.round(Math.max(...known))}${unit}`;
}

function Telemetry({ node }) {
  const samples = useApi(
    () => api("/v1/telemetry", { query: { node, since: String(Math.floor(Date.now() / 1000) - HOUR_S) } }),
    [node],
    TELEMETRY_EVERY_MS,
  );
  if (samples.error) return html`<p class="muted">no telemetry: ${samples.error.message}</p>`;
  const list = samples.data ? samples.data.samples : [];
  if (!list.length) return html`<p class="muted">no telemetry yet</p>`;
  const temperatures = list.map((s) => s.temperatureC);
  const used = list.map((s) => (s.memTotalKb && s.memAvailableKb !== null ? (100 * (s.memTotalKb - s.memAvailableKb)) / s.memTotalKb : null));
  return html`<div class="telemetry">
    <div><span class="muted">temperature, last hour ${range(temperatures, " °C")}</span>
      <${Sparkline} values=${temperatures} width=${140} label=${`${node} package temperature over the last hour`} /></div>
    <div><span class="muted">memory used, last hour ${range(used, "%")}</span>
      <${Sparkline} values=${used} width=${140} label=${`${node} memory used over the last hour`} /></div>
  </div>`;
}

function Actions({ node, busy, onAction }) {
  const [asking, setAsking] = useState(null);
  if (asking) {
    return html`<div class="row confirm" role="group" aria-label=${`Confirm ${asking.label.toLowerCase()}`}>
      <span>${asking.label} ${node.id}? It stops what the node serves.</span>
      <button class="danger" disabled=${busy} onClick=${() => { setAsking(null); onAction(node.id, asking.id); }}>Yes, ${asking.label.toLowerCase()}</button>
      <button onClick=${() => setAsking(null)}>Cancel</button>
    </div>`;
  }
  const offered = ACTIONS.filter((a) => a.when(node.state));
  if (!offered.length) return html`<p class="muted">${node.id} is at work: its actions wait.</p>`;
  return html`<div class="row" role="group" aria-label=${`Actions on ${node.id}`}>
    ${offered.map((a) => html`<button class=${a.confirm ? "danger" : ""} disabled=${busy}
      aria-label=${`${a.label} ${node.id}`}
      onClick=${() => (a.confirm ? setAsking(a) : onAction(node.id, a.id))}>${a.label}</button>`)}
  </div>`;
}

function NodeCard({ node, lentUntil, isAdmin, busy, selected, onSelect, onPause, onResume, onAction }) {
  const calls = Object.entries(node.inFlight || {});
  const isCard = node.card !== null && node.card !== undefined;
  const lent = node.state === "lent";
  const health = Object.entries(node.modelHealth || {});
  const memory = node.memTotalKb && node.memAvailableKb !== null && node.memAvailableKb !== undefined
    ? `${Math.round((100 * (node.memTotalKb - node.memAvailableKb)) / node.memTotalKb)}% of ${(node.memTotalKb / 1048576).toFixed(1)} GiB` : null;
  return html`<article class="panel node" aria-label=${`Node ${node.id}`}>
    <header class="row">
      <span class=${`dot ${stateClass(node.state)}`} aria-hidden="true"></span>
      <h3>${node.id}</h3>
      <span class=${`badge state ${stateClass(node.state)}`} data-state=${node.state}>${node.state}</span>
      ${isCard && html`<span class="muted">card ${node.card} · cpu ${node.cpu}</span>`}
      ${node.address && html`<span class="muted mono">${node.address}</span>`}
      ${isAdmin && node.lendable && !lent && html`<label class="select">
        <input type="checkbox" checked=${selected} onChange=${(e) => onSelect(node.id, e.target.checked)} />
        <span class="sr-only">Select ${node.id}</span></label>`}
    </header>
    ${lent && lentUntil && html`<p class="lent">Lent until ${ahead(lentUntil)}</p>`}
    <dl class="facts">
      <dt>lanes</dt><dd>${node.lanes.length ? node.lanes.map((l) => html`<span class="badge lane">${l}</span> `) : html`<span class="muted">none</span>`}</dd>
      <dt>roles</dt><dd>${node.roles.join(", ") || html`<span class="muted">none</span>`}</dd>
      <dt>in flight</dt><dd>${calls.length ? calls.map(([lane, n]) => `${n} ${lane}`).join(", ") : html`<span class="muted">idle</span>`}</dd>
      <dt>health</dt><dd>${node.healthy ? html`<span class="good">takes calls</span>` : html`<span class="error">no calls</span>`}
        ${health.map(([role, ok]) => html` · ${role} <span class=${ok ? "good" : "error"}>${ok ? "ok" : "failing"}</span>`)}</dd>
      ${isCard && html`
        <dt>since</dt><dd><${When} at=${node.since} /> · serving ${duration(node.uptimeS)}</dd>
        <dt>ladder</dt><dd>${plural(node.restarts, "restart")} · ${plural(node.reboots, "reboot")}</dd>
        <dt>now</dt><dd>${node.temperatureC !== null && node.temperatureC !== undefined ? `${node.temperatureC.toFixed(1)} °C` : "—"}${memory ? ` · ${memory}` : ""}
          ${node.sampledAt && html` <span class="muted">(<${When} at=${node.sampledAt} />)</span>`}</dd>`}
      ${!node.lendable && html`<dt>lending</dt><dd class="muted">kept (lendable = false)</dd>`}
    </dl>
    ${node.lastError && html`<p class="last-error"><span class="muted">last error</span> <span class="mono">${node.lastError}</span></p>`}
    ${isCard && html`<${Telemetry} node=${node.id} />`}
    ${isAdmin && html`<div class="row admin">
      ${lent
        ? html`<button disabled=${busy} aria-label=${`Resume ${node.id}`} onClick=${() => onResume([node.id])}>Resume</button>`
        : node.lendable && html`<button disabled=${busy} aria-label=${`Pause ${node.id}`} onClick=${() => onPause([node.id])}>Pause</button>`}
    </div>
    ${isCard && html`<${Actions} node=${node} busy=${busy} onAction=${onAction} />`}`}
  </article>`;
}

function CardReset({ card, busy, onReset }) {
  const [asking, setAsking] = useState(false);
  if (!asking) return html`<button class="danger" disabled=${busy} onClick=${() => setAsking(true)}>Reset card ${card}</button>`;
  return html`<span class="row confirm" role="group" aria-label=${`Confirm reset of card ${card}`}>
    Reset every node of card ${card}?
    <button class="danger" disabled=${busy} onClick=${() => { setAsking(false); onReset(card); }}>Yes, reset card ${card}</button>
    <button onClick=${() => setAsking(false)}>Cancel</button>
  </span>`;
}

export default function Nodes({ isAdmin }) {
  // Quicker while an action this tab started plays out, or a node boots: states change in seconds.
  const [hurryUntil, setHurryUntil] = useState(0);
  const [booting, setBooting] = useState(false);
  const every = booting || Date.now() < hurryUntil ? HURRY_MS : EVERY_MS;
  const state = useApi(load, [every], every);
  const seen = state.data ? state.data.nodes.nodes.some((n) => n.state === "booting") : false;
  if (seen !== booting) setBooting(seen);
  const [lend, setLend] = useState({ choice: "10m", custom: "", reason: "" });
  const [selected, setSelected] = useState(new Set());
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState(null); // { error } or { note }

  const act = async (what, call) => {
    setBusy(true);
    setOutcome(null);
    try {
      await call();
      setOutcome({ note: what });
      setHurryUntil(Date.now() + HURRY_FOR_MS);
      await state.reload();
    } catch (error) {
      setOutcome({ error });
    } finally {
      setBusy(false);
    }
  };
  const pause = (nodes) => {
    const length = lend.choice === "custom" ? lend.custom : lend.choice;
    if (!DURATION.test(length)) {
      setOutcome({ error: new Error(`Lend for how long? "${length}" is not a duration like 45m or 1h30m`) });
      return;
    }
    act(`${nodes.join(", ")} lent for ${length}`, () =>
      api("/v1/pause", { method: "POST", body: { nodes, for: length, by: "console", reason: lend.reason } }));
    setSelected(new Set());
  };
  const resume = (nodes) =>
    act(`${nodes ? nodes.join(", ") : "every node"} back`, () =>
      api("/v1/pause", { method: "DELETE", body: nodes ? { nodes } : undefined }));
  const action = (node, name) =>
    act(`${name} of ${node} started`, () => api(`/v1/nodes/${encodeURIComponent(node)}/${name}`, { method: "POST" }));
  const resetCard = (card) => act(`reset of card ${card} started`, () => api(`/v1/cards/${card}/reset`, { method: "POST" }));
  const select = (id, on) => {
    const next = new Set(selected);
    if (on) next.add(id); else next.delete(id);
    setSelected(next);
  };

  const data = state.data;
  const header = html`<header><h1>Nodes</h1>
    ${data && html`<span class="muted">${data.nodes.fleetKind} fleet · ${plural(data.nodes.nodes.length, "node")}</span>`}
  </header>`;
  if (!data) return html`${header}${state.error ? html`<${ErrorNote} error=${state.error} />` : html`<p class="muted">Loading…</p>`}`;
  const nodes = data.nodes.nodes;
  if (!nodes.length) {
    return html`${header}<p class="empty">This daemon runs its models in-process (the ${data.nodes.fleetKind} fleet): there are no nodes to show, lend or restart.</p>`;
  }
  const until = data.lanes.pause ? data.lanes.pause.until : null;
  const picked = nodes.filter((n) => selected.has(n.id) && n.state !== "lent").map((n) => n.id);
  const card = (n) => html`<${NodeCard} key=${n.id} node=${n} lentUntil=${until} isAdmin=${isAdmin} busy=${busy}
    selected=${selected.has(n.id)} onSelect=${select} onPause=${pause} onResume=${resume} onAction=${action} />`;
  const groups = data.cards
    ? data.cards.cards.map((c) => ({ card: c.card, nodes: nodes.filter((n) => n.card === c.card) }))
    : [{ card: null, nodes }];
  const grouped = new Set(groups.flatMap((g) => g.nodes.map((n) => n.id)));
  const loose = nodes.filter((n) => !grouped.has(n.id));

  return html`${header}
    <${ErrorNote} error=${state.error} />
    <div class="nodes-top">
      <${PausePanel} lanes=${data.lanes} isAdmin=${isAdmin} busy=${busy} onResume=${resume} />
      ${isAdmin && html`<section class="panel" aria-label="Lend nodes">
        <h2>Lend nodes</h2>
        <${LendControls} lend=${lend} setLend=${setLend} />
        <div class="row">
          <button class="primary" disabled=${busy || !picked.length} onClick=${() => pause(picked)}>
            Pause selected${picked.length ? ` (${picked.length})` : ""}</button>
          <span class="muted">or use a node's own Pause button</span>
        </div>
      </section>`}
    </div>
    ${outcome && (outcome.error
      ? html`<${ErrorNote} error=${outcome.error} />`
      : html`<p class="good" role="status">${outcome.note}</p>`)}
    ${groups.map((g) => html`<section class="node-group" aria-label=${g.card === null ? "Nodes" : `Card ${g.card}`}>
      ${g.card !== null && html`<div class="row card-head"><h2>Card ${g.card}</h2>
        ${isAdmin && html`<${CardReset} card=${g.card} busy=${busy} onReset=${resetCard} />`}</div>`}
      <div class="grid">${g.nodes.map(card)}</div>
    </section>`)}
    ${loose.length > 0 && html`<section class="node-group" aria-label="Other nodes"><div class="grid">${loose.map(card)}</div></section>`}`;
}
