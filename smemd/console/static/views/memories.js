// The Memories view.

import { html } from "../ui.js";

export default function Memories() {
  return html`<header><h1>Memories</h1></header><p class="muted">Not built yet.</p>`;
}
