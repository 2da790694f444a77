"""What the store hands out: plain Structs, never rows or cursors. Times are Unix seconds."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

MemoryType = Literal["fact", "preference", "episode"]
# Every version of a memory has one: the latest alive, an older one replaced, or forgotten/expired.
MemoryStatus = Literal["live", "superseded", "forgotten"]
# `contradicts`: the newer of two memories about one thing that neither supersedes (both stay
# latest until a person resolves the pair; see smemd/engine/review.py).
RelationKind = Literal["updates", "extends", "derives", "contradicts"]
# Who gave a memory its type; None is the heuristic's guess, which dreaming may put to the judge.
TypedBy = Literal["extraction", "judge", "label"]
JudgeKind = Literal["reconcile", "type", "link", "derives", "alias"]
# A person's word on: a memory's type, a judge's call, a contradiction (see Label).
LabelKind = Literal["type", "judgement", "contradiction"]
# The phases a document's job advances through, each committed before the next starts.
# `fetching` comes only to a document given as a URL.
Phase = Literal[
    "queued", "fetching", "chunking", "embedding", "extracting", "reconciling", "done", "failed"
]
OPEN_PHASES: tuple[Phase, ...] = (
    "queued", "fetching", "chunking", "embedding", "extracting", "reconciling",
)  # fmt: skip


class Record(msgspec.Struct, kw_only=True):
    pass


class Namespace(Record):
    name: str
    supporting_context: str
    created_at: float
    updated_at: float
    document_count: int = 0
    memory_count: int = 0


class Document(Record):
    seq: int
    id: str
    namespace: str
    caller_id: str | None
    title: str | None
    type: str
    content: str
    url: str | None
    metadata: dict[str, Any]
    content_date: float | None
    content_hash: str
    task_type: str
    status: Phase
    error: str | None
    revision: int
    created_at: float
    updated_at: float
    ingest_id: str | None = None  # the add that brought it (smemd.engine.ingest.ingest_ids)


class Chunk(Record):
    seq: int
    id: str
    document_id: str
    namespace: str
    position: int
    heading: str
    text: str
    created_at: float
    # What came just before its document, which the reader of it had in mind (the short turns
    # before, in a conversation): searched with it, never shown as its text.
    context: str = ""
    # When its message was sent, as its chat log states it (None: when its document was).
    said_at: float | None = None


# A chunk as a document's chunking writes it: id, position, heading, text, context, said_at.
ChunkRow = tuple[str, int, str, str, str, float | None]


class Memory(Record):
    seq: int
    id: str
    namespace: str
    text: str
    type: MemoryType
    version: int
    is_latest: bool
    root_id: str
    parent_id: str | None
    document_id: str | None
    chunk_id: str | None
    created_at: float  # record time: when smem stored it
    updated_at: float
    event_at: float | None
    # Valid time: from the fact's event date, else its document's date, else when it was stored;
    # until the next version's valid_from (None while nothing later is known).
    valid_from: float
    valid_until: float | None
    # Record time when another version became the latest (None while this one is, or never was
    # believed: a version placed in the past is superseded as it is stored).
    superseded_at: float | None
    forgotten_at: float | None
    forget_reason: str | None
    expires_at: float | None
    is_static: bool
    is_inference: bool
    metadata: dict[str, Any]
    typed_by: TypedBy | None = None
    entities: list[str] = msgspec.field(default_factory=list)

    def is_forgotten(self, now: float) -> bool:
        return self.forgotten_at is not None or (
            self.expires_at is not None and self.expires_at <= now
        )


class MemoryCensus(Record):
    """A namespace's memories counted in one pass each: every version by status (`live`,
    `superseded`, `forgotten`), the live ones by type, those stored in each hour of a window,
    and the documents by how many live memories cite them."""

    by_status: dict[str, int]
    live_by_type: dict[str, int]
    per_hour: dict[int, int]  # hours since the window's start -> memories stored in it
    per_document: dict[int, int]  # live memories citing a document (capped) -> documents


class Relation(Record):
    from_id: str
    to_id: str
    kind: RelationKind
    score: float
    created_at: float


class Contradiction(Record):
    """A `contradicts` relation with both its memories: `memory` (the newer) contradicts
    `contradicts`; `label` is the pair's last resolution, if any (see Label)."""

    memory: Memory
    contradicts: Memory
    score: float
    created_at: float
    label: str | None = None


class Job(Record):
    seq: int
    id: str
    namespace: str
    document_id: str
    revision: int
    phase: Phase
    attempts: int
    error: str | None
    created_at: float
    updated_at: float


class Peer(Record):
    """A daemon on the store, as its heartbeat last said (smemd.store.sql.leases)."""

    id: str  # host and state dir: the same across its restarts
    host: str
    pid: int
    version: str
    started_at: float
    seen_at: float


class NamespaceSize(Record):
    """What a namespace holds in a snapshot of the store (a backup's manifest counts it)."""

    namespace: str
    documents: int
    memories: int  # every version, forgotten ones too


class Candidate(Record):
    """A fact extracted from a chunk, waiting for reconciliation (persisted between phases)."""

    job_id: str
    position: int
    chunk_id: str
    text: str
    type: MemoryType
    event_at: float | None = None
    typed_by: TypedBy | None = None
    entities: list[str] = msgspec.field(default_factory=list)


EntityKind = Literal["person", "place", "organisation", "thing"]


class Mention(Record):
    """An entity a new memory names: linked to the namespace's entity of that name (any case),
    which is made with this kind when it does not exist yet."""

    name: str
    kind: EntityKind = "thing"


class Entity(Record):
    """An entity as read: its own row's name and kind, with what its merged names bring (their
    names as `aliases`, their times, their memories)."""

    id: str
    namespace: str
    name: str
    kind: EntityKind
    first_seen: float
    last_seen: float
    created_at: float
    aliases: list[str] = msgspec.field(default_factory=list)
    memories: int = 0  # live memories that mention it, where counted


class AliasDecision(Record):
    """A decision on a pair of entities: `same` (the alias merged into the entity) or not. A
    merge lists the rows it pointed at the entity (`rows`: the alias and what had been merged
    into it), so a split points them back; `undone_at` is set by that split."""

    id: str
    namespace: str
    entity_id: str
    alias_id: str
    same: bool
    by: Literal["person", "judge"]
    probability: float | None
    judgement_id: str | None
    rows: list[str]
    created_at: float
    undone_at: float | None


class NewMemory(Record):
    """What the engine asks the store to insert; the store assigns seq and times."""

    id: str
    namespace: str
    text: str
    type: MemoryType
    root_id: str
    version: int = 1
    parent_id: str | None = None
    document_id: str | None = None
    chunk_id: str | None = None
    event_at: float | None = None
    valid_from: float | None = None  # None: event_at, else the time it is stored
    expires_at: float | None = None
    is_static: bool = False
    is_inference: bool = False
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    typed_by: TypedBy | None = None
    entities: list[str] = msgspec.field(default_factory=list)
    mentions: list[Mention] = msgspec.field(default_factory=list)  # linked as entity rows


IndexKind = Literal["memories", "chunks"]  # the two kinds of row recall's indexes hold


class IndexRows(msgspec.Struct, kw_only=True):
    """What recall's in-memory indexes hold of a page of rows: vector, text and visibility."""

    seqs: list[int]
    vectors: list[bytes]
    texts: list[str]
    live: list[bool]  # what normal recall sees: latest and not forgotten (every chunk)

    @classmethod
    def of(cls, rows: list[Any]) -> IndexRows:
        """From (seq, vector, text, live) rows."""
        return cls(
            seqs=[r[0] for r in rows], vectors=[r[1] for r in rows], texts=[r[2] for r in rows],
            live=[bool(r[3]) for r in rows],
        )  # fmt: skip


class Judged(Record):
    """One judge call as stored: `options[i]` is the outcome letter i stood for ("fact",
    "updates:mem_…", "none", …) and `probabilities[i]` its probability; `proposal` is the judge's
    pick whatever the threshold (None when the letters held no probability), `applied` what
    was done, `fallback` what the heuristic would have done."""

    id: str
    namespace: str
    kind: JudgeKind
    subject_id: str
    text: str
    options: list[str]
    probabilities: list[float]
    proposal: str | None
    applied: str
    fallback: str
    seq: int = 0  # the store's, once logged
    created_at: float = 0.0

    @property
    def best(self) -> float:
        return max(self.probabilities, default=0.0)

    def decided_at(self, threshold: float) -> bool:
        """Would the judge's pick stand at `threshold`? (Sure enough, and no tie.)"""
        ranked = sorted(self.probabilities, reverse=True)
        return (
            self.proposal is not None
            and ranked[0] >= threshold
            and (len(ranked) < 2 or ranked[0] > ranked[1])
        )


class Label(Record):
    """`type`: a memory's (subject the memory's id, value the type); `judgement`: a call graded
    (the judgement's id; `correct` or `wrong`); `contradiction`: a pair resolved (the two ids in
    order joined by `|`, see pair_subject; the id kept, or `both`)."""

    kind: LabelKind
    subject_id: str
    value: str
    created_at: float


LinkKind = Literal["source", "updates", "extends", "derives", "contradicts", "mentions"]


class DocumentHead(Record):
    id: str
    title: str | None
    caller_id: str | None
    url: str | None
    opening: str


class Link(Record):
    """A document a memory was read from (`source`, document → memory), a relation between two
    memories as the relations table keeps it, or an entity a memory names (`mentions`, memory →
    entity)."""

    source: str
    target: str
    kind: LinkKind


class Version(Record):
    """A memory's place in its chain: what `rechain` reads and settles."""

    seq: int
    id: str
    version: int
    is_latest: bool
    root_id: str
    parent_id: str | None
    created_at: float
    valid_from: float
    valid_until: float | None
    superseded_at: float | None
    forgotten_at: float | None


class Removed(Record):
    documents: int
    memories: int


def pair_subject(a: str, b: str) -> str:
    """The label subject of a pair of memories, whichever way it is named."""
    low, high = sorted((a, b))
    return f"{low}|{high}"


def entity_key(name: str) -> str:
    """What makes two entity names one in a namespace: the same name in any ASCII case, as the
    store's lower() compares them (both backends fold ASCII alone)."""
    return "".join(c.lower() if c.isascii() else c for c in name)
