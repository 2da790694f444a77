// The Chat view.

import { html } from "../ui.js";

export default function Chat() {
  return html`<header><h1>Chat</h1></header><p class="muted">Not built yet.</p>`;
}
