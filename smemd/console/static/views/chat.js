// The Chat view: questions to the namespace (`POST /v1/ask`), each answer with its citations as
// buttons that open the sources under it. Without a model serving the llm role smemd answers with
// the sources alone and a note saying so; the view shows exactly that. The thread is the tab's,
// one per namespace, kept in session storage so a reload keeps it.

import { api } from "../api.js";
import { href } from "../route.js";
import { html, useEffect, useRef, useState } from "../ui.js";

const KEEP = 40; // turns kept per namespace: session storage is small, and so is a reader's patience
const key = (ns) => `smem.chat.${ns}`;

function loadThread(ns) {
  try {
    const turns = JSON.parse(sessionStorage.getItem(key(ns)) || "[]");
    return Array.isArray(turns) ? turns : [];
  } catch {
    return [];
  }
}

function saveThread(ns, turns) {
  const kept = turns.filter((t) => !t.pending).slice(-KEEP);
  if (kept.length) sessionStorage.setItem(key(ns), JSON.stringify(kept));
  else sessionStorage.removeItem(key(ns));
}

// What a turn keeps of a reply: the answer and its sources, not the context sent to the model.
const keep = (reply) => ({
  answer: reply.answer, citations: reply.citations, sources: reply.sources,
  answeredBy: reply.answeredBy, note: reply.note || null,
});

function Cite({ n, onCite }) {
  return html`<button type="button" class="cite" aria-label=${`Source ${n}`} onClick=${() => onCite(n)}>[${n}]</button>`;
}

// The answer's text with each `[n]` that names a source made a button; other brackets stay text.
function AnswerText({ text, numbers, onCite }) {
  const parts = text.split(/(\[\d+\])/);
  return html`<p class="answer-text">${parts.map((part) => {
    const cited = /^\[(\d+)\]$/.exec(part);
    return cited && numbers.has(Number(cited[1])) ? html`<${Cite} n=${Number(cited[1])} onCite=${onCite} />` : part;
  })}</p>`;
}

function Source({ ns, source, lit }) {
  const place = source.kind === "memory"
    ? html`<a href=${href("memories", { ns, id: source.id })}>Open in Memories</a>`
    : source.documentId && html`<a href=${href("documents", { ns, id: source.documentId })}>Open its document</a>`;
  return html`<li class=${lit ? "lit" : undefined} data-n=${source.n}>
    <div class="row source-head">
      <span class="n">[${source.n}]</span>
      <span class="badge">${source.kind}</span>
      ${source.title && html`<span class="title">${source.title}</span>`}
      ${source.date && html`<time class="muted" datetime=${source.date}>${source.date}</time>`}
      ${place}
    </div>
    <p class="source-text">${source.text}</p>
  </li>`;
}

function Reply({ ns, turn, index }) {
  const [open, setOpen] = useState(false);
  const [lit, setLit] = useState(null);
  const list = useRef(null);
  const reply = turn.reply;
  const sources = reply.sources || [];
  const numbers = new Set(sources.map((s) => s.n));
  const listId = `sources-${index}`;
  const cite = (n) => {
    setOpen(true);
    setLit(n);
  };
  useEffect(() => {
    if (!open || lit === null || !list.current) return;
    const item = list.current.querySelector(`[data-n="${lit}"]`);
    if (item) item.scrollIntoView({ block: "nearest" });
  }, [open, lit]);
  return html`<div class="reply">
    ${reply.answer !== null && reply.answer !== undefined
      ? html`<${AnswerText} text=${reply.answer} numbers=${numbers} onCite=${cite} />`
      : html`<p class="notice">${reply.note ? `${reply.note[0].toUpperCase()}${reply.note.slice(1)}` : "No answer."}${sources.length ? ":" : "."}
          ${sources.length ? html` ${sources.map((s) => html`<${Cite} n=${s.n} onCite=${cite} />`)}` : ""}</p>`}
    ${sources.length ? html`<div class="sources">
      <button type="button" class="link" aria-expanded=${open} aria-controls=${listId} onClick=${() => setOpen(!open)}>
        ${open ? "Hide" : "Show"} ${sources.length === 1 ? "1 source" : `${sources.length} sources`}
      </button>
      <ol id=${listId} ref=${list} hidden=${!open} aria-label="Sources">
        ${sources.map((s) => html`<${Source} key=${s.n} ns=${ns} source=${s} lit=${s.n === lit} />`)}
      </ol>
    </div>` : html`<p class="muted">Nothing in ${ns} matched.</p>`}
    ${reply.answeredBy && html`<p class="muted by">answered by ${reply.answeredBy}</p>`}
  </div>`;
}

function Turn({ ns, turn, index }) {
  return html`<li class="turn">
    <div class="question"><span class="sr-only">You asked: </span>${turn.q}</div>
    ${turn.pending && html`<p class="pending muted" role="status">Recalling and answering…</p>`}
    ${turn.error && html`<p class="error" role="alert">No answer: ${turn.error}</p>`}
    ${turn.reply && html`<${Reply} ns=${ns} turn=${turn} index=${index} />`}
  </li>`;
}

export default function Chat({ ns }) {
  const [turns, setTurns] = useState(() => loadThread(ns));
  const [question, setQuestion] = useState("");
  const pending = turns.some((t) => t.pending);
  const end = useRef(null);
  const asking = useRef(ns); // the namespace an answer in flight belongs to

  useEffect(() => {
    asking.current = ns;
    setTurns(loadThread(ns));
  }, [ns]);
  useEffect(() => {
    if (end.current) end.current.scrollIntoView({ block: "end" });
  }, [turns.length, pending]);

  const update = (change) => setTurns((current) => {
    const next = change(current);
    saveThread(ns, next);
    return next;
  });

  const ask = async () => {
    const q = question.trim();
    if (!q || pending) return;
    setQuestion("");
    update((t) => [...t, { q, pending: true }]);
    let done;
    try {
      const reply = await api("/v1/ask", { method: "POST", body: { q, namespace: ns } });
      done = { q, reply: keep(reply) };
    } catch (err) {
      done = { q, error: err.message || String(err) };
    }
    if (asking.current !== ns) return; // the view moved to another namespace meanwhile
    update((t) => [...t.filter((turn) => !turn.pending), done]);
  };

  const onKey = (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      ask();
    }
  };
  const submit = (event) => {
    event.preventDefault();
    ask();
  };
  const clear = () => update(() => []);

  return html`<header><h1>Chat</h1><span class="muted">with ${ns}</span>
      <button type="button" class="new-thread" onClick=${clear} disabled=${!turns.length || pending}>New thread</button>
    </header>
    <div class="chat">
      ${turns.length
        ? html`<ol class="thread" aria-label="Thread" aria-busy=${pending}>${turns.map((t, i) => html`<${Turn} key=${i} ns=${ns} turn=${t} index=${i} />`)}</ol>`
        : html`<p class="empty">Ask ${ns} anything its memories could answer. The answer cites them; the sources open under it.</p>`}
      <div ref=${end}></div>
      <form class="ask panel" onSubmit=${submit}>
        <label>Ask
          <textarea data-search value=${question} onInput=${(e) => setQuestion(e.target.value)} onKeyDown=${onKey}
            rows="2" placeholder="A question for the memories" aria-describedby="ask-help"></textarea>
        </label>
        <div class="row">
          <span id="ask-help" class="muted">Enter sends, Shift+Enter starts a new line</span>
          <button class="primary" type="submit" disabled=${!question.trim() || pending}>${pending ? "Asking…" : "Send"}</button>
        </div>
      </form>
    </div>`;
}
