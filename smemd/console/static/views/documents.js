// The Documents view.

import { html } from "../ui.js";

export default function Documents() {
  return html`<header><h1>Documents</h1></header><p class="muted">Not built yet.</p>`;
}
