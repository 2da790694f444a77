// The Connect view.

import { html } from "../ui.js";

export default function Connect() {
  return html`<header><h1>Connect</h1></header><p class="muted">Not built yet.</p>`;
}
