"""Any history of a namespace, generated (hypothesis): exported, imported into an empty
namespace and exported again, it is the same, and merged into itself by either rule it holds
every record and changes nothing. Run on both stores (tests/conftest.py BACKEND_SUITES)."""

from __future__ import annotations

import itertools

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smemd.protocol.exports import (
    RECORD_TYPES,
    ChunkRecord,
    DocumentRecord,
    EntityRecord,
    ExportRecord,
    Header,
    JudgementRecord,
    LabelRecord,
    MemoryRecord,
    MentionRecord,
    NamespaceRecord,
    ProfileBucketRecord,
    RelationRecord,
    RetractionRecord,
    SourceRecord,
    Trailer,
    record_name,
)
from tests.conftest import Running
from tests.test_api import call
from tests.test_export import records
from tests.test_import import merge_into, post_import

_examples = itertools.count()
TEXT = st.text(st.characters(min_codepoint=1, max_codepoint=0xD7FF), max_size=40)
TIME = st.floats(-1e10, 4e10, allow_nan=False)
MAYBE_TIME = st.none() | TIME
METADATA = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=5),
    TEXT | st.integers(-99, 99) | st.booleans(),
    max_size=3,
)


@st.composite
def histories(draw: st.DrawFn, namespace: str) -> list[ExportRecord]:
    """A namespace's records as an export gives them: documents and chunks, memory chains of a
    few versions (some forgotten, some from a document), their sources and update relations,
    entities (one merged into another) and mentions, buckets, judgements, labels, a retraction;
    each kind in the order an export reads it in."""
    p = namespace
    out: list[ExportRecord] = [
        NamespaceRecord(
            supporting_context=draw(TEXT), created_at=draw(TIME), updated_at=draw(TIME),
            created_by=None,
        ),
    ]  # fmt: skip
    out += [
        ProfileBucketRecord(name=name, description=draw(TEXT), created_at=draw(TIME))
        for name in sorted(draw(st.sets(st.text("xyz", min_size=1, max_size=3), max_size=2)))
    ]
    documents: list[DocumentRecord] = []
    chunks: dict[str, list[str]] = {}
    for i in range(draw(st.integers(0, 3))):
        doc = DocumentRecord(
            id=f"doc_{p}_{i}", caller_id=draw(st.none() | st.just(f"c{i}")), title=draw(st.none() | TEXT),
            type="text", content=draw(TEXT), url=None, metadata=draw(METADATA),
            content_date=draw(MAYBE_TIME), content_hash="h", task_type="memory",
            status=draw(st.sampled_from(["done", "failed"])), error=None,
            revision=draw(st.integers(1, 3)), created_at=draw(TIME), updated_at=draw(TIME),
        )  # fmt: skip
        documents.append(doc)
        chunks[doc.id] = [f"chk_{p}_{i}_{j}" for j in range(draw(st.integers(0, 2)))]
    out += documents
    out += [
        ChunkRecord(
            id=chunk,
            document_id=doc_id,
            position=j,
            heading=draw(TEXT),
            text=draw(TEXT),
            created_at=draw(TIME),
        )
        for doc_id, ids in chunks.items()
        for j, chunk in enumerate(ids)
    ]
    memories: list[MemoryRecord] = []
    relations: list[RelationRecord] = []
    for c in range(draw(st.integers(0, 4))):
        versions = draw(st.integers(1, 3))
        for v in range(1, versions + 1):
            doc_id = (
                draw(st.none() | st.sampled_from([d.id for d in documents])) if documents else None
            )
            chunk = (
                draw(st.none() | st.sampled_from(chunks[doc_id]))
                if doc_id and chunks[doc_id]
                else None
            )
            latest = v == versions
            memories.append(MemoryRecord(
                id=f"mem_{p}_{c}_{v}", text=draw(TEXT), type=draw(st.sampled_from(["fact", "preference", "episode"])),
                version=v, is_latest=latest, root_id=f"mem_{p}_{c}_1",
                parent_id=f"mem_{p}_{c}_{v - 1}" if v > 1 else None, document_id=doc_id,
                chunk_id=chunk, created_at=draw(TIME), updated_at=draw(TIME), event_at=draw(MAYBE_TIME),
                valid_from=draw(MAYBE_TIME), valid_until=draw(MAYBE_TIME),
                superseded_at=None if latest else draw(TIME), forgotten_at=draw(MAYBE_TIME),
                forget_reason=draw(st.none() | TEXT), expires_at=draw(MAYBE_TIME),
                is_static=draw(st.booleans()), is_inference=draw(st.booleans()), metadata=draw(METADATA),
                typed_by=draw(st.sampled_from([None, "extraction", "judge", "label"])),
                entities=draw(st.lists(TEXT, max_size=2)), linked_at=draw(MAYBE_TIME),
                inferred_at=draw(MAYBE_TIME), retraction_id=None,
            ))  # fmt: skip
            if v > 1:
                relations.append(RelationRecord(
                    from_id=f"mem_{p}_{c}_{v}", to_id=f"mem_{p}_{c}_{v - 1}", kind="updates",
                    score=draw(st.floats(0, 1)), created_at=draw(TIME),
                ))  # fmt: skip
    retractions: list[RetractionRecord] = []
    if len(memories) > 0 and draw(st.booleans()):
        gone = draw(st.sampled_from(memories))
        retractions.append(RetractionRecord(
            id=f"ret_{p}", subject_kind="memory", subject_id=gone.id, created_at=draw(TIME),
            undone_at=draw(MAYBE_TIME), effects={"withdrawn": [gone.id]},
        ))  # fmt: skip
        memories[memories.index(gone)] = msgspec.structs.replace(gone, retraction_id=f"ret_{p}")
    out += memories
    sources = sorted(
        (
            SourceRecord(memory_id=m.id, document_id=m.document_id, chunk_id=m.chunk_id or "", created_at=m.created_at)
            for m in memories
            if m.document_id
        ),
        key=lambda s: (s.memory_id, s.document_id, s.chunk_id),
    )  # fmt: skip
    out += sources
    relations.sort(key=lambda r: (r.from_id, r.to_id, r.kind))
    out += relations
    entities = [
        EntityRecord(
            id=f"ent_{p}_{i}", name=f"Name{i}", kind=draw(st.sampled_from(["person", "place", "organisation", "thing"])),
            first_seen=draw(TIME), last_seen=draw(TIME), created_at=draw(TIME), merged_into=None,
        )
        for i in range(draw(st.integers(0, 3)))
    ]  # fmt: skip
    if len(entities) > 1 and draw(st.booleans()):
        entities[0] = msgspec.structs.replace(entities[0], merged_into=entities[-1].id)
    out += entities
    if memories and entities:
        pairs = draw(
            st.sets(
                st.tuples(
                    st.sampled_from([m.id for m in memories]),
                    st.sampled_from([e.id for e in entities]),
                ),
                max_size=4,
            )
        )
        out += [MentionRecord(memory_id=m, entity_id=e) for m, e in sorted(pairs)]
    judgements = [
        JudgementRecord(
            id=f"jdg_{p}_{i}", kind=draw(st.sampled_from(["reconcile", "type", "link"])), subject_id=f"mem_{p}_{i}",
            text=draw(TEXT), options=["a", "b"], probabilities=draw(st.lists(st.floats(0, 1), min_size=2, max_size=2)),
            proposal=draw(st.none() | st.just("a")), applied="a", fallback="b", created_at=draw(TIME),
        )
        for i in range(draw(st.integers(0, 2)))
    ]  # fmt: skip
    out += judgements
    labels = [
        LabelRecord(kind="type", subject_id=m.id, value="fact", created_at=draw(TIME))
        for m in memories
        if draw(st.booleans())
    ]
    labels += [
        LabelRecord(kind="judgement", subject_id=j.id, value="right", created_at=draw(TIME))
        for j in judgements
        if draw(st.booleans())
    ]
    labels.sort(key=lambda label: (label.kind, label.subject_id))
    out += labels
    out += retractions
    counts = {record_name(kind): 0 for kind in RECORD_TYPES}
    for record in out:
        counts[record_name(type(record))] += 1
    header = Header(
        format="smem-export",
        version=1,
        smem_version="0",
        exported_at="2026-01-01T00:00:00+00:00",
        namespace=p,
    )
    return [header, *out, Trailer(records=counts)]


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
async def test_any_history_exported_imported_and_exported_again_is_the_same(
    running: Running, data: st.DataObject
) -> None:
    namespace = f"h{next(_examples)}"
    history = data.draw(histories(namespace))
    body = b"".join(msgspec.json.encode(record) + b"\n" for record in history)
    status, reply = await post_import(running, body, ns=namespace)
    assert status == 200, reply
    status, again, _ = await call(running.unix, "GET", f"http://smemd/ns/{namespace}/export")
    assert status == 200
    assert records(again.encode())[1:] == history[1:]
    # Merged into itself again, by either rule: every record is held, and nothing changes but
    # when the namespace was last written.
    rule = data.draw(st.sampled_from(["skip", "replace"]))
    status, reply = await merge_into(running, body, rule, ns=namespace)
    assert status == 200, reply
    identified = ("document", "chunk", "memory", "judgement", "retraction", "aliasDecision")
    assert all(reply["held"].get(k, 0) == reply["records"].get(k, 0) for k in identified), reply
    status, merged, _ = await call(running.unix, "GET", f"http://smemd/ns/{namespace}/export")
    assert records(merged.encode())[2:] == history[2:]
