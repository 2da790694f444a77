"""Replies as an agent reads them: short lines, ids to act on, and `[n]` to cite."""

from __future__ import annotations

from smemd.protocol.answers import AskReply, CompressReply
from smemd.protocol.entities import EntityOut, EntityProfile
from smemd.protocol.memory import (
    DocumentOut,
    DocumentRef,
    ForgetResult,
    History,
    ListResponse,
    MemoryOut,
    NamespaceList,
    ProfileResponse,
    SearchResponse,
)


def results(reply: SearchResponse) -> str:
    if not reply.results:
        return "Nothing found."
    lines = []
    for n, result in enumerate(reply.results, start=1):
        text = result.memory if result.memory is not None else result.chunk or ""
        held = f", held from {result.valid_from[:10]}" if result.valid_from else ""
        lines.append(f"[{n}] {text} (id {result.id}, similarity {result.similarity:.2f}{held})")
    return "\n".join(lines)


def profile(reply: ProfileResponse) -> str:
    body = reply.profile
    parts = [
        "Static:", *([f"- {f.memory} (id {f.id})" for f in body.static] or ["(none)"]),
        "Dynamic:", *([f"- {f.memory} (id {f.id})" for f in body.dynamic] or ["(none)"]),
    ]  # fmt: skip
    for name, facts in body.buckets.items():
        parts += [f"{name}:", *([f"- {f.memory} (id {f.id})" for f in facts] or ["(none)"])]
    return "\n".join(parts)


def queued(reply: DocumentRef) -> str:
    return f"Document {reply.id}: {reply.status}."


def added(doc: DocumentOut) -> str:
    status = doc.system.status or "?"
    memories = doc.memories or []
    if status != "done":
        return f"Document {doc.id}: {status}; its facts are not stored yet."
    if not memories:
        return f"Document {doc.id}: done, and no fact found in it."
    return "\n".join([f"Remembered (document {doc.id}):", *(_line(m) for m in memories)])


def answer(reply: AskReply) -> str:
    sources = [f"[{s.n}] {s.text} (id {s.id})" for s in reply.sources]
    head = reply.answer if reply.answer is not None else f"No answer: {reply.note or 'no model'}."
    return "\n".join([head, "", "Sources:", *(sources or ["(none)"])])


def context(reply: CompressReply) -> str:
    return reply.context


def listed(reply: ListResponse) -> str:
    page = reply.pagination
    lines = [_line(m) for m in reply.memories] or ["(none)"]
    return "\n".join([*lines, f"(page {page.current_page} of {page.total_pages})"])


def history(reply: History) -> str:
    return "\n".join(
        f"v{m.version} {m.memory} (id {m.id}; held {_span(m)}"
        f"{'; latest' if m.is_latest else ''}{'; forgotten' if m.is_forgotten else ''})"
        for m in reply.memories
    )


def entity_profile(reply: EntityProfile) -> str:
    """The entity, then its current facts and its history numbered on from one list to the
    other, each with when it held, then who or what is named beside it."""
    e = reply.entity
    lines = [f"{_entity(e)}: id {e.id}, in {_count(e.memories, 'live memory', 'live memories')}"]
    n = 0
    for title, memories in (("Now:", reply.current), ("Before:", reply.history)):
        lines.append(title)
        for m in memories:
            n += 1
            lines.append(f"[{n}] {m.memory} (id {m.id}; held {_span(m)})")
        if not memories:
            lines.append("(none)")
    related = [f"{_entity(r)}, {_count(r.memories, 'memory', 'memories')}" for r in reply.related]
    lines += ["Named with it:", *(f"- {r}" for r in related)] if related else []
    return "\n".join(lines)


def _entity(e: EntityOut) -> str:
    also = f"; also {', '.join(e.aliases)}" if e.aliases else ""
    return f"{e.name} ({e.kind}{also})"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def memory(reply: MemoryOut) -> str:
    return _line(reply)


def forgotten(reply: ForgetResult) -> str:
    lines = [f"Forgot {reply.count}."]
    lines += [f"{e.id}: {e.error}" for e in reply.errors]
    return "\n".join(lines)


def namespaces(reply: NamespaceList) -> str:
    return (
        "\n".join(
            f"{n.namespace}: {n.memory_count} memories, {n.document_count} documents"
            for n in reply.namespaces
        )
        or "(none)"
    )


def _line(m: MemoryOut) -> str:
    state = (
        ""
        if m.is_latest and not m.is_forgotten
        else " (forgotten)"
        if m.is_forgotten
        else " (old version)"
    )
    return f"- {m.memory} (id {m.id}, version {m.version}){state}"


def _span(m: MemoryOut) -> str:
    start = m.valid_from[:10] if m.valid_from else "?"
    return f"{start} to {m.valid_until[:10]}" if m.valid_until else f"from {start}"
