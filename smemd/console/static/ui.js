// What the views share: the component library re-exported, hooks that load and poll the API,
// and the small pieces every view draws (errors, pagers, badges, times, plots).

import { html, useCallback, useEffect, useRef, useState } from "./vendor/htm-preact.js";

export { html, render, useCallback, useEffect, useMemo, useRef, useState } from "./vendor/htm-preact.js";

// Load with `load(signal)` when `deps` change and, with `everyMs`, again on that period while the
// tab is visible. A reload keeps the last data on screen; a failure keeps it too, beside the error.
export function useApi(load, deps, everyMs = 0) {
  const [state, setState] = useState({ data: undefined, error: null, loading: true });
  const latest = useRef(load);
  latest.current = load;
  const generation = useRef(0);
  const run = useCallback(async () => {
    const mine = ++generation.current;
    try {
      const data = await latest.current();
      if (mine === generation.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (mine === generation.current) setState((s) => ({ data: s.data, error, loading: false }));
    }
  }, []);
  useEffect(() => {
    setState((s) => ({ ...s, loading: true }));
    run();
    if (!everyMs) return () => { generation.current++; };
    const timer = setInterval(() => { if (!document.hidden) run(); }, everyMs);
    return () => { clearInterval(timer); generation.current++; };
  }, deps); // eslint-disable-line react-hooks/exhaustive-deps
  return { ...state, reload: run };
}

export function ErrorNote({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">${error.message || String(error)}</p>`;
}

export function Pager({ page, pages, onPage, label = "pages" }) {
  if (!pages || pages <= 1) return null;
  return html`<nav class="pager" aria-label=${label}>
    <button disabled=${page <= 1} onClick=${() => onPage(page - 1)}>Previous</button>
    <span class="muted">page ${page} of ${pages}</span>
    <button disabled=${page >= pages} onClick=${() => onPage(page + 1)}>Next</button>
  </nav>`;
}

export function Badge({ kind }) {
  return kind ? html`<span class=${`badge ${kind}`}>${kind}</span>` : null;
}

// "3 min ago", with the instant itself on hover; "—" for none.
export function When({ at }) {
  if (!at) return html`<span class="muted">—</span>`;
  const then = new Date(at);
  const seconds = (Date.now() - then.getTime()) / 1000;
  let text;
  if (Math.abs(seconds) < 60) text = "just now";
  else if (Math.abs(seconds) < 3600) text = `${Math.round(seconds / 60)} min ago`;
  else if (Math.abs(seconds) < 86400) text = `${Math.round(seconds / 3600)} h ago`;
  else text = then.toLocaleDateString();
  return html`<time datetime=${at} title=${then.toLocaleString()}>${text}</time>`;
}

// A line of `values` (nulls are gaps) in a small SVG, scaled to its own range.
export function Sparkline({ values, width = 120, height = 28, label }) {
  const known = values.filter((v) => v !== null && v !== undefined);
  if (!known.length) return html`<span class="muted">no samples</span>`;
  const low = Math.min(...known);
  const high = Math.max(...known);
  const span = high - low || 1;
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  const points = values
    .map((v, i) => (v === null || v === undefined ? null : `${(i * step).toFixed(1)},${(height - 2 - ((v - low) / span) * (height - 4)).toFixed(1)}`))
    .filter(Boolean)
    .join(" ");
  return html`<svg class="spark" width=${width} height=${height} role="img" aria-label=${label}>
    <polyline points=${points} /></svg>`;
}

// One bar per value, for counts over time.
export function Bars({ values, width = 240, height = 40, label }) {
  const high = Math.max(1, ...values);
  const w = width / Math.max(values.length, 1);
  return html`<svg class="spark" width=${width} height=${height} role="img" aria-label=${label}>
    ${values.map((v, i) => {
      const h = (v / high) * (height - 2);
      return html`<rect x=${(i * w).toFixed(1)} y=${(height - h).toFixed(1)} width=${Math.max(w - 1, 1).toFixed(1)} height=${h.toFixed(1)} />`;
    })}
  </svg>`;
}

export const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
