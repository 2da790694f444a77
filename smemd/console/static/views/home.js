// The Home view.

import { html } from "../ui.js";

export default function Home() {
  return html`<header><h1>Home</h1></header><p class="muted">Not built yet.</p>`;
}
