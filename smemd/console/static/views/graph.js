// The Graph view.

import { html } from "../ui.js";

export default function Graph() {
  return html`<header><h1>Graph</h1></header><p class="muted">Not built yet.</p>`;
}
