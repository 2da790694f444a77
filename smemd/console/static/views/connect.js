// The Connect view: the tab's token and who it makes the caller, how an agent reaches smem over
// MCP (`smemctl mcp`), add and search with curl and the Supermemory SDKs pointed at this daemon,
// and every route of the API from its OpenAPI document. Snippets name the token by a placeholder
// (`$SMEM_TOKEN`), never by its value.

import { api, token } from "../api.js";
import { ErrorNote, html, plural, useApi, useMemo, useRef, useState } from "../ui.js";

const METHODS = ["get", "post", "put", "patch", "delete"];
// The "Who:" sentence `smemd/api/openapi.py` writes into each route's description, as a role.
const WHO = [
  ["anyone, without a token", "public"],
  ["the Unix socket, or a token with role admin", "admin"],
  ["a token with role write or admin", "write"],
  ["any token", "read"],
];

function who(description) {
  const found = WHO.find(([sentence]) => (description || "").includes(`Who: ${sentence}.`));
  return found ? found[1] : "";
}

// The clipboard exists only in a secure context (https, or http on localhost) and may be refused:
// then the snippet is selected, for the keyboard's copy.
function Copy({ text, what, code }) {
  const [said, setSaid] = useState("");
  const copy = async () => {
    try {
      if (!navigator.clipboard) throw new Error("no clipboard here");
      await navigator.clipboard.writeText(text);
      setSaid("Copied");
    } catch {
      if (code.current) getSelection().selectAllChildren(code.current);
      setSaid("Not copied: the text is selected, press Ctrl+C");
    }
  };
  return html`<span class="copy row">
    <button onClick=${copy} aria-label=${`Copy ${what}`}>Copy</button>
    <span class="muted" role="status">${said}</span>
  </span>`;
}

function Snippet({ title, text, what }) {
  const code = useRef(null);
  return html`<figure class="snippet">
    <figcaption class="row"><span>${title}</span><${Copy} text=${text} what=${what} code=${code} /></figcaption>
    <pre><code ref=${code}>${text}</code></pre>
  </figure>`;
}

function TokenPanel({ session, onToken }) {
  const [typed, setTyped] = useState("");
  const held = token();
  const refused = session.role === null;
  const submit = (event) => {
    event.preventDefault();
    if (typed.trim()) onToken(typed.trim());
    setTyped("");
  };
  return html`<section class="panel" aria-label="Caller">
    <h2>Who you are</h2>
    ${refused && held && html`<p class="error" role="alert">That token was not accepted: smemd knows no such token. Check it and enter it again.</p>`}
    ${refused && !held && html`<p class="notice">This smemd asks for a token over TCP. Enter one to use the console; it is kept in this tab only (session storage).</p>`}
    ${!session.tokenRequired && !held && html`<p class="muted">This smemd asks for no token over TCP; an admin token, if one is configured, unlocks the admin controls.</p>`}
    <form class="row token-form" onSubmit=${submit}>
      <label>Token
        <input type="password" autocomplete="off" value=${typed} onInput=${(e) => setTyped(e.target.value)} />
      </label>
      <button class="primary" type="submit" disabled=${!typed.trim()}>Use token</button>
      ${held && html`<button type="button" onClick=${() => onToken("")}>Forget token</button>`}
    </form>
    <dl class="caller">
      <dt>caller</dt><dd>${session.name}${held && !refused ? html` <span class="muted">(the token of this tab)</span>` : ""}</dd>
      <dt>role</dt><dd>${session.role ? html`<span class=${`badge role ${session.role}`}>${session.role}</span>` : html`<span class="muted">none</span>`}</dd>
      <dt>namespaces</dt><dd>${session.namespaces.length ? session.namespaces.join(", ") : html`<span class="muted">none</span>`}</dd>
    </dl>
  </section>`;
}

function snippets(origin, ns, tokenRequired) {
  const tokenEnv = tokenRequired ? `,\n        "SMEM_TOKEN": "\${SMEM_TOKEN}"` : "";
  const auth = `  -H "Authorization: Bearer $SMEM_TOKEN" \\\n`;
  return {
    claude: `claude mcp add smem -e SMEM_URL=${origin} \\
${tokenRequired ? "  -e SMEM_TOKEN=$SMEM_TOKEN \\\n" : ""}  -- smemctl mcp -n ${ns}`,
    mcp: `{
  "mcpServers": {
    "smem": {
      "command": "smemctl",
      "args": ["mcp", "-n", "${ns}"],
      "env": {
        "SMEM_URL": "${origin}"${tokenEnv}
      }
    }
  }
}`,
    curl: `# add a document (its memories are made in the background)
curl -X POST ${origin}/ns/${ns}/document \\
${auth}  -H "Content-Type: application/json" \\
  -d '{"content": "Alex prefers morning meetings."}'

# search
curl -X POST ${origin}/ns/${ns}/search \\
${auth}  -H "Content-Type: application/json" \\
  -d '{"query": "when does Alex like to meet?", "limit": 5}'`,
    python: `# pip install "supermemory>=5,<6"
import os
from supermemory import Supermemory

client = Supermemory(api_key=os.environ["SMEM_TOKEN"], base_url="${origin}")
client.add("${ns}", content="Alex prefers morning meetings.")
response = client.search("${ns}", query="when does Alex like to meet?", limit=5)
for result in response.results:
    print(result.memory or result.chunk)`,
    typescript: `// npm install supermemory
import Supermemory from "supermemory";

const client = new Supermemory({ apiKey: process.env.SMEM_TOKEN, baseURL: "${origin}" });
await client.add("${ns}", { content: "Alex prefers morning meetings." });
const { results } = await client.search("${ns}", { query: "when does Alex like to meet?", limit: 5 });
for (const result of results) console.log(result.memory ?? result.chunk);`,
    origins: `[api]
# the origins (scheme://host:port) whose pages may call smemd
allow-origins = ["${location.protocol}//localhost:3000"]
# only if smemd is reached by a name other than localhost or its address
allow-hosts = ["memory.example.lan"]`,
  };
}

function Routes() {
  const doc = useApi(() => api("/v1/openapi.json"), []);
  const [filter, setFilter] = useState("");
  const routes = useMemo(() => {
    if (!doc.data) return [];
    return Object.entries(doc.data.paths).flatMap(([path, operations]) =>
      METHODS.filter((m) => operations[m]).map((m) => ({
        method: m.toUpperCase(), path, summary: operations[m].summary || "", role: who(operations[m].description),
      })));
  }, [doc.data]);
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const shown = routes.filter((r) => {
    const text = `${r.method} ${r.path} ${r.summary} ${r.role}`.toLowerCase();
    return words.every((w) => text.includes(w));
  });
  return html`<section class="panel routes" aria-label="Routes">
    <div class="row">
      <h2>Routes</h2>
      <label>Filter routes
        <input type="search" data-search value=${filter} placeholder="memories, POST, admin…" onInput=${(e) => setFilter(e.target.value)} />
      </label>
      <span class="muted" role="status">${doc.data ? `${shown.length} of ${plural(routes.length, "route")}` : ""}</span>
      <a href="/v1/openapi.json">OpenAPI document</a>
    </div>
    <${ErrorNote} error=${doc.error} />
    ${doc.data && html`<table>
      <thead><tr><th scope="col">Method</th><th scope="col">Path</th><th scope="col">What it does</th><th scope="col">Who</th></tr></thead>
      <tbody>${shown.map((r) => html`<tr key=${`${r.method} ${r.path}`}>
        <td><span class=${`method ${r.method.toLowerCase()}`}>${r.method}</span></td>
        <td class="mono">${r.path}</td>
        <td>${r.summary}</td>
        <td>${r.role && html`<span class=${`badge role ${r.role}`}>${r.role}</span>`}</td>
      </tr>`)}</tbody>
    </table>`}
  </section>`;
}

export default function Connect({ ns, session, onToken }) {
  const origin = location.origin;
  const code = snippets(origin, ns, session.tokenRequired);
  const placeholder = session.tokenRequired
    ? html`<p class="muted">Set <code>SMEM_TOKEN</code> in your shell to your token first; the examples never show it.</p>`
    : html`<p class="muted">This smemd asks for no token: any <code>SMEM_TOKEN</code> value will do for the SDKs.</p>`;
  return html`<header><h1>Connect</h1><span class="muted">${origin} · namespace ${ns}</span></header>
    <div class="connect">
      <${TokenPanel} session=${session} onToken=${onToken} />
      <section class="panel" aria-label="MCP">
        <h2>From an agent (MCP)</h2>
        <p><code>smemctl mcp</code> is an MCP server on stdio that forwards each tool call to this
          smemd: over the Unix socket when it runs on this machine without <code>--url</code>, else over
          TCP with <code>--url</code> and <code>SMEM_TOKEN</code>. Its <code>-n</code> is the namespace its
          tools use unless a call names another.</p>
        <p class="muted"><code>smemctl mcp --http HOST:PORT --url ${origin}</code> serves the same over
          streamable HTTP at <code>/mcp</code>, forwarding each request's bearer token to smemd.</p>
        <${Snippet} title="Claude Code" text=${code.claude} what="the Claude Code command" />
        <${Snippet} title="Any MCP client's JSON configuration" text=${code.mcp} what="the MCP configuration" />
      </section>
      <section class="panel wide" aria-label="HTTP">
        <h2>Over HTTP</h2>
        ${placeholder}
        <${Snippet} title="curl" text=${code.curl} what="the curl example" />
        <${Snippet} title="Python: the supermemory SDK 5" text=${code.python} what="the Python example" />
        <${Snippet} title="TypeScript: the supermemory SDK" text=${code.typescript} what="the TypeScript example" />
      </section>
      <section class="panel wide" aria-label="Web pages">
        <h2>From a web page</h2>
        <p>Pages of other origins cannot call smemd: a request a page of another origin sends is
          refused (403), and so is one whose <code>Host</code> names neither this smemd's address nor
          <code>localhost</code> (421), so no website can read or change this memory. This console is of
          smemd's own origin, ${origin}. To let a web app of yours call smemd from the browser, list
          its origin in <code>smemd.toml</code> and restart smemd:</p>
        <${Snippet} title="smemd.toml" text=${code.origins} what="the allow-origins setting" />
      </section>
    </div>
    <${Routes} />`;
}
