// The Nodes view.

import { html } from "../ui.js";

export default function Nodes() {
  return html`<header><h1>Nodes</h1></header><p class="muted">Not built yet.</p>`;
}
