"""Re-deriving a namespace's memory from its evidence: every document it holds (but the
retracted) is added again, in date order, to a shadow namespace (`NS:rederive`), where today's
rules read it afresh — extraction and reconciliation, as for any add, by the fleet's model or by
a llama-server named for the shadow (smemd.engine.ingest.readers). Meanwhile the namespace
serves as it was. The diff then says what would change: memories added and gone, a memory whose
type or version chain differs, relations gained and lost, as counts and a few examples (memories
are matched by their text). `apply` swaps the shadow in, in one transaction (the supporting
context and buckets stay; documents get new ids, their custom ids kept) — refused unless the
shadow holds exactly the namespace's documents (one added or changed since it began, or a
start cut off by a crash, is refused: discard and start again) — and lists what it cannot carry
over: a person's labels on the old memories, and memories added without a document (a memory
edited by hand shows in the diff as gone). `discard` drops the shadow.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from smemd.engine.ids import now
from smemd.engine.index.per_namespace import Indexes
from smemd.engine.ingest.documents import Documents, NewDocument
from smemd.engine.ingest.readers import MODEL_SETTING, Readers
from smemd.errors import BadRequest, Conflict, NotFound, SmemError
from smemd.protocol.retraction import Rederived
from smemd.store.protocol import Reader, Store

SUFFIX = ":rederive"
EXAMPLES = 5
# Documents copied to the shadow per commit: one commit each made a start of 5,500 documents
# take 20 s, past smemctl's wait for a reply.
COPY_BATCH = 200
KINDS = ("added", "gone", "retyped", "rechained", "relationsGained", "relationsLost")


def shadow_of(namespace: str) -> str:
    if len(namespace) + len(SUFFIX) > 100:
        raise BadRequest("namespace too long", f"{namespace!r}: its shadow's name would pass 100")
    return namespace + SUFFIX


class Rederivations:
    def __init__(
        self, store: Store, indexes: Indexes, documents: Documents, readers: Readers
    ) -> None:
        self.store = store
        self.indexes = indexes
        self.documents = documents
        self.readers = readers

    async def start(self, namespace: str, model_url: str | None = None) -> Rederived:
        """Begin; with `model_url`, the llama-server that reads the shadow's documents (it
        must answer first)."""
        shadow = shadow_of(namespace)
        async with self.store.scan(namespace) as reader:
            if await reader.namespace(namespace) is None:
                raise NotFound("namespace not found", f"no namespace {namespace!r}")
            if await reader.namespace(shadow) is not None:
                raise Conflict("a re-derivation exists", f"{shadow!r}: apply or discard it first")
            dated = []
            async for rows in reader.export_rows(
                namespace, "document", ["id", "content_date", "created_at"]
            ):
                dated += [(_date(r), r["id"]) for r in rows]
        if model_url is not None:
            await self._check_model(model_url)
        async with self.store.write() as writer:
            await writer.ensure_namespace(shadow, now())
            if model_url is not None:
                await writer.set_setting(MODEL_SETTING + shadow, model_url)
            else:  # a shadow of the same name dropped by hand may have left one
                await writer.remove_setting(MODEL_SETTING + shadow)
        ordered = [doc_id for _, doc_id in sorted(dated)]
        for start in range(0, len(ordered), COPY_BATCH):
            batch = ordered[start : start + COPY_BATCH]
            async with self.store.read() as reader:
                found = await reader.documents_by_id(batch)
                retracted = await reader.retracted_documents(batch)
            docs = [found[i] for i in batch if i in found and i not in retracted]
            if not docs:
                continue
            for doc in docs:  # a limit lowered since it was added refuses it here, as `add` would
                await self.documents.check_size(doc.content)
            await self.documents.add_many([(shadow, NewDocument(
                content=doc.content, caller_id=doc.caller_id, metadata=doc.metadata,
                date=doc.content_date, task_type="superrag" if doc.task_type == "superrag" else "memory",
                type=doc.type, title=doc.title,
            )) for doc in docs])  # fmt: skip
        return await self.diff(namespace)

    async def diff(self, namespace: str) -> Rederived:
        """Its progress, then what it would change; `none` while there is no re-derivation."""
        shadow = shadow_of(namespace)
        async with self.store.scan(shadow) as reader:
            if await reader.namespace(shadow) is None:
                return Rederived(
                    namespace=namespace, shadow=shadow, state="none", documents=0, pending=0,
                    counts={}, examples={}, not_carried=[],
                )  # fmt: skip
            documents, pending = (
                await reader.document_count(shadow),
                await reader.open_job_count(shadow),
            )
            model = await reader.setting(MODEL_SETTING + shadow)
        done = Rederived(
            namespace=namespace, shadow=shadow, state="running" if pending else "ready",
            documents=documents, pending=pending, counts={}, examples={}, not_carried=[],
            model=model,
        )  # fmt: skip
        if pending:
            return done
        async with self.store.scan(namespace) as reader:
            old, old_links, lost = await _memory(reader, namespace)
        async with self.store.scan(shadow) as reader:
            new, new_links, _ = await _memory(reader, shadow)
        found = {
            "added": sorted(new.keys() - old.keys()),
            "gone": sorted(old.keys() - new.keys()),
            "retyped": sorted(t for t in old.keys() & new.keys() if old[t][0] != new[t][0]),
            "rechained": sorted(t for t in old.keys() & new.keys() if old[t][1] != new[t][1]),
            "relationsGained": sorted(new_links - old_links),
            "relationsLost": sorted(old_links - new_links),
        }
        done.counts = {kind: len(found[kind]) for kind in KINDS}
        done.examples = {kind: found[kind][:EXAMPLES] for kind in KINDS if found[kind]}
        done.not_carried = lost
        return done

    async def apply(self, namespace: str) -> Rederived:
        done = await self._existing(namespace)
        if done.state == "running":
            raise Conflict("still re-deriving", f"{done.pending} documents are not done yet")
        t = now()
        async with self.indexes.writing() as (writer, changes):
            if await _evidence(writer, done.shadow) != await _evidence(writer, namespace):
                raise Conflict(
                    "the shadow does not hold the namespace's documents",
                    f"{namespace!r} was written since the re-derivation began, or it was cut"
                    " off: discard it and start again",
                )
            kept = await writer.namespace(namespace)
            buckets = await writer.buckets(namespace)
            await writer.remove_namespace(namespace)
            await writer.ensure_namespace(namespace, t)
            if kept is not None:
                await writer.set_supporting_context(namespace, kept.supporting_context, t)
            await writer.put_buckets(namespace, buckets, t)
            await writer.move_namespace(done.shadow, namespace)
            await writer.remove_setting(MODEL_SETTING + done.shadow)
            changes.drop(namespace)
            changes.drop(done.shadow)
        done.state = "applied"
        return done

    async def discard(self, namespace: str) -> Rederived:
        done = await self._existing(namespace)
        async with self.indexes.writing() as (writer, changes):
            await writer.remove_namespace(done.shadow)
            await writer.remove_setting(MODEL_SETTING + done.shadow)
            changes.drop(done.shadow)
        done.state = "discarded"
        return done

    async def _existing(self, namespace: str) -> Rederived:
        done = await self.diff(namespace)
        if done.state == "none":
            raise NotFound("no re-derivation", f"start one: POST /ns/{namespace}/rederive")
        return done

    async def _check_model(self, url: str) -> None:
        """The llama-server answers, and has a model loaded: else a 400 saying so, before
        anything is written."""
        try:
            health = await self.readers.client(url).health()
        except SmemError as err:
            raise BadRequest("model not reached", f"{url}: {err.details or err.message}") from None
        if not health.is_ready:
            raise BadRequest("model not ready", f"{url} is still loading its model; try again")


async def _memory(
    reader: Reader, namespace: str
) -> tuple[dict[str, tuple[str, int]], set[str], list[str]]:
    """The namespace's live memories by text (type, versions in the chain), its relations as
    text, and what an apply would not carry over: a person's labels, and live memories no
    document holds (added by hand). A memory edited by hand shows in the diff as gone: the
    documents say otherwise."""
    live: dict[str, tuple[str, int]] = {}
    texts: dict[str, str] = {}
    by_hand: list[str] = []
    columns = ["id", "text", "type", "version", "is_latest", "forgotten_at", "document_id"]
    async for rows in reader.export_rows(namespace, "memory", columns):
        for row in rows:
            texts[row["id"]] = row["text"]
            if row["is_latest"] and row["forgotten_at"] is None:
                live[row["text"]] = (row["type"], row["version"])
                if row["document_id"] is None:
                    by_hand.append(f"memory added by hand: {row['text'][:80]}")
    links: set[str] = set()
    async for rows in reader.export_rows(namespace, "relation", ["from_id", "to_id", "kind"]):
        links |= {_link(texts, r["from_id"], r["to_id"], r["kind"]) for r in rows}
    labels = [
        f"label {label['kind']} {label['value']} on {texts.get(label['subject_id'], label['subject_id'])[:80]}"
        for label in await reader.export_labels(namespace)
    ]
    return live, links, _few(labels + by_hand)


async def _evidence(reader: Reader, namespace: str) -> Counter[str]:
    """The contents of the namespace's documents but the retracted (a shadow holds exactly
    those of its namespace, once whole and while the namespace is unchanged)."""
    retracted: set[str] = set()
    columns = ["subject_kind", "subject_id", "undone_at"]
    async for rows in reader.export_rows(namespace, "retraction", columns):
        retracted |= {
            r["subject_id"]
            for r in rows
            if r["subject_kind"] == "document" and r["undone_at"] is None
        }
    held: Counter[str] = Counter()
    async for rows in reader.export_rows(namespace, "document", ["id", "content_hash"]):
        held.update(r["content_hash"] for r in rows if r["id"] not in retracted)
    return held


def _date(document: dict[str, Any]) -> float:
    """When a document was said (its content date), else when it came."""
    given = document["content_date"]
    return float(given if given is not None else document["created_at"])


def _link(texts: dict[str, str], a: str, b: str, kind: str) -> str:
    return f"{texts.get(a, a)[:60]} -{kind}-> {texts.get(b, b)[:60]}"


def _few(items: Iterable[str]) -> list[str]:
    listed = list(items)
    return listed[:20] + ([f"… and {len(listed) - 20} more"] if len(listed) > 20 else [])
