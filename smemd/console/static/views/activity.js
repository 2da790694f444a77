// The Activity view.

import { html } from "../ui.js";

export default function Activity() {
  return html`<header><h1>Activity</h1></header><p class="muted">Not built yet.</p>`;
}
