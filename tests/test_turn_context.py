"""A conversation's turns through the real daemon: a turn is searched with the short turn before
it in its session (its context, shown in the export, never as its text), a message that goes on
its speaker's last with more of the turns before, and one document's many results follow other
documents' best rather than filling the top."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from smemd import instants
from smemd.protocol.exports import ChunkRecord, DocumentRecord
from smemd.store.records import Document
from tests.conftest import Running
from tests.postgres import store_at
from tests.test_api import call
from tests.test_export import records
from tests.test_memory_api import settle

SESSION = "2024-03-01T10:00:00Z"
OTHER_SESSION = "2024-03-08T10:00:00Z"


async def add_all(running: Running, ns: str, documents: list[dict[str, Any]]) -> None:
    status, body, _ = await call(
        running.unix, "POST", f"http://smemd/ns/{ns}/document/batch", json={"documents": documents}
    )
    assert status == 200 and not body["failed"], body
    await settle(running)


async def ranked(running: Running, ns: str, query: str, limit: int = 10) -> list[str]:
    status, body, _ = await call(
        running.unix, "POST", f"http://smemd/ns/{ns}/search",
        json={"query": query, "limit": limit, "threshold": 0},
    )  # fmt: skip
    assert status == 200, body
    return [r["metadata"]["turn"] for r in body["results"]]


def turn(name: str, text: str, date: str = SESSION) -> dict[str, Any]:
    return {"content": text, "date": date, "metadata": {"turn": name}}


def apart(texts: list[str]) -> list[dict[str, Any]]:
    """Turns `y0`, `y1`, … each in a session of its own, a day apart."""
    return [turn(f"y{i}", text, f"2024-02-{i + 1:02d}T10:00:00Z") for i, text in enumerate(texts)]


async def exported_chunks(running: Running, ns: str) -> dict[str, str]:
    """Each chunk's context, by its text."""
    async with running.unix.get(f"http://smemd/ns/{ns}/export") as response:
        assert response.status == 200
        found = records(await response.read())
    return {r.text: r.context for r in found if isinstance(r, ChunkRecord)}


async def exported_dates(running: Running, ns: str) -> dict[str, tuple[str, float | None]]:
    """Each document's id and date, by its content."""
    async with running.unix.get(f"http://smemd/ns/{ns}/export") as response:
        assert response.status == 200
        found = records(await response.read())
    return {r.content: (r.id, r.content_date) for r in found if isinstance(r, DocumentRecord)}


async def test_a_turn_is_found_by_the_question_it_answers(running: Running) -> None:
    question = "Caroline: Wow, what got you into running?"
    answer = "Melanie: A friend dragged me out one cold morning and I never stopped."
    talk = [
        turn("q", question),
        turn("a", answer),
        turn("x1", "Melanie: I painted a sunset over the lake last week."),
        turn("x2", "Melanie: My kids love the beach in summer.", OTHER_SESSION),
        turn("x3", "Melanie: Thanks, Caroline! Glad we can talk like this.", OTHER_SESSION),
        turn("x4", "Caroline: Sorry, running late today, the bus was slow.", OTHER_SESSION),
        *apart(
            [
                "Melanie: What got me into pottery was my aunt.",
                "Melanie: I got a new puppy, Oscar!",
                "Melanie: We went camping and got rained on.",
                "Melanie: Running a bakery must be hard work.",
                "Melanie: My friend got me a book about stars.",
                "Melanie: I never stopped loving the ocean.",
            ]
        ),
    ]
    await add_all(running, "talk", talk)
    contexts = await exported_chunks(running, "talk")
    assert contexts[answer] == question  # the turn before, in its session
    assert contexts[question] == ""  # the first of its session
    assert contexts["Melanie: My kids love the beach in summer."] == ""  # another session
    found = await ranked(running, "talk", "What got Melanie into running?", limit=3)
    assert "a" in found, found
    # The same turns, each dated apart (no session): the answer alone does not say running.
    await add_all(
        running, "apart",
        [{**t, "date": f"2024-04-{i + 1:02d}T10:00:00Z"} for i, t in enumerate(talk)],
    )  # fmt: skip
    assert (await exported_chunks(running, "apart"))[answer] == ""
    assert "a" not in await ranked(running, "apart", "What got Melanie into running?", limit=3)


async def test_turns_dated_by_message_are_a_session_until_a_long_silence(running: Running) -> None:
    """A client that dates each turn when it was said (a chat's log, an agent adding turns as
    they happen) gets what one dating them by their session does."""
    question = "Caroline: Wow, what got you into running?"
    answer = "Melanie: A friend dragged me out one cold morning and I never stopped."
    later = "Caroline: Running late, sorry! The bus was slow."
    talk = [
        turn("x0", "Melanie: I painted a sunset over the lake last week.", "2024-03-01T09:58:00Z"),
        turn("q", question, "2024-03-01T09:59:30Z"),
        # Stored before the question, dated after it: read in the order of its dates.
        turn("a", answer, "2024-03-01T10:00:10Z"),
        # Two hours on, another session: the turn before it is no context.
        turn("l", later, "2024-03-01T12:00:10Z"),
        *apart(
            [
                "Melanie: What got me into pottery was my aunt.",
                "Melanie: We went camping and got rained on.",
                "Melanie: Running a bakery must be hard work.",
                "Melanie: I never stopped loving the ocean.",
            ]
        ),
    ]
    await add_all(running, "by-message", [talk[0], talk[2]])
    painted = "Melanie: I painted a sunset over the lake last week."
    assert (await exported_chunks(running, "by-message"))[answer] == painted
    # The question, stored after its answer and dated before it: the answer is read again.
    await add_all(running, "by-message", [talk[1], *talk[3:]])
    contexts = await exported_chunks(running, "by-message")
    assert contexts[answer] == question, contexts
    assert contexts[question] == painted
    assert contexts[later] == ""
    # As if they had been sent in the order they were said.
    await add_all(running, "in-order", talk)
    assert await exported_chunks(running, "in-order") == contexts
    for ns in ("by-message", "in-order"):
        assert "a" in await ranked(running, ns, "What got Melanie into running?", limit=3), ns


async def test_undated_turns_are_read_with_the_turns_stored_before_them(running: Running) -> None:
    """An agent that adds turns as they happen, without dates: each is read with the undated
    turn stored before it. Its notes, which say no speaker, are nobody's context, and a dated
    document is not an undated one's."""
    question = "Caroline: Wow, what got you into running?"
    answer = "Melanie: A friend dragged me out one cold morning and I never stopped."
    after_note = "Melanie: Anyway, my kids love the beach in summer."
    undated = [
        {"content": question, "metadata": {"turn": "q"}},
        {"content": answer, "metadata": {"turn": "a"}},
        {"content": "Prefers dark mode in every editor.", "metadata": {"turn": "n1"}},
        {"content": "Lives in Paris with two cats.", "metadata": {"turn": "n2"}},
        {"content": after_note, "metadata": {"turn": "b"}},
    ]
    await add_all(running, "live", [turn("d", "Sam: Dated, and stored first.")])
    for document in undated:  # one at a time, as they happen
        await add_all(running, "live", [document])
    contexts = await exported_chunks(running, "live")
    assert contexts[question] == ""  # the dated turn before it is not in its session
    assert contexts[answer] == question
    assert contexts["Prefers dark mode in every editor."] == ""
    assert contexts["Lives in Paris with two cats."] == ""
    assert contexts[after_note] == ""  # a note came between
    # A dated turn is read with dated turns alone, even after undated ones.
    await add_all(running, "live", [turn("d2", "Sam: And a dated reply.")])
    assert (await exported_chunks(running, "live"))["Sam: And a dated reply."] == (
        "Sam: Dated, and stored first."
    )


async def test_a_date_the_metadata_states_dates_a_turn(running: Running) -> None:
    """memorybench's Supermemory provider sends no `documentDate`: each session's date is in its
    metadata. Such a turn is dated by it, and read with the turn before it in its session; a date
    the request gives wins, and metadata that says no date for certain dates nothing."""
    question = "Caroline: Wow, what got you into running?"
    answer = "Melanie: A friend dragged me out one cold morning and I never stopped."
    later = "Caroline: I painted a sunset over the lake."
    camping = "Melanie: We went camping and got rained on."
    note = "Sam: Remind me about the dentist."
    other_ms = int(instants.parse(OTHER_SESSION) * 1000)
    for content, metadata in [
        (question, {"sessionId": "s1", "date": SESSION}),
        (answer, {"sessionId": "s1", "date": SESSION}),
        (later, {"sessionId": "s2", "timestamp": other_ms}),  # a Unix time in milliseconds
    ]:
        status, body, _ = await call(
            running.unix, "POST", "http://smemd/v3/documents",
            json={"content": content, "containerTag": "stated", "metadata": metadata},
        )  # fmt: skip
        assert status == 200, body
    await add_all(running, "stated", [
        {"content": camping, "date": OTHER_SESSION, "metadata": {"date": SESSION}},
        {"content": note, "metadata": {"date": "next week", "timestamp": "soon"}},
    ])  # fmt: skip
    contexts = await exported_chunks(running, "stated")
    assert contexts[answer] == question
    assert contexts[later] == ""  # a week on: another session
    assert contexts[camping] == later  # the request's date, not its metadata's
    assert contexts[note] == ""  # undated: no undated turn before it
    found = await exported_dates(running, "stated")
    dates = {text: date for text, (_, date) in found.items()}
    assert dates[question] == dates[answer] == instants.parse(SESSION)
    assert dates[later] == dates[camping] == instants.parse(OTHER_SESSION)
    assert dates[note] is None
    # A change of metadata that states a date moves the document to it.
    status, body, _ = await call(
        running.unix, "PATCH", f"http://smemd/ns/stated/document/{found[note][0]}",
        json={"metadata": {"date": "2024-03-09"}},
    )  # fmt: skip
    assert status == 200, body
    assert (await exported_dates(running, "stated"))[note][1] == instants.parse("2024-03-09")


async def test_a_message_that_goes_on_its_speaker_s_last_is_read_with_more(
    running: Running,
) -> None:
    talk = [
        turn("q", "Ana: Anything new with you?"),
        turn("m1", "Ben: Guess what!"),
        turn("m2", "Ben: We adopted a puppy last week."),
        turn("m3", "Ben: His name is Toby."),
        turn("r", "Ana: Aww, I love that name!"),
        turn("o", "Ben: I walked past a pet shop today.", OTHER_SESSION),
    ]
    await add_all(running, "burst", talk)
    contexts = await exported_chunks(running, "burst")
    said = [t["content"] for t in talk]
    # The session's turns before it, in order, as far as they and it fit CONTEXT_MAX_CHARS.
    assert contexts["Ben: His name is Toby."] == "\n".join(said[:3])
    assert contexts["Ben: Guess what!"] == said[0]
    # Another speaker's turn is read with the turn before it alone.
    assert contexts["Ana: Aww, I love that name!"] == said[3]
    assert contexts["Ben: I walked past a pet shop today."] == ""  # a session of its own
    # Speakers named in metadata, as a client that keeps them apart from the text sends them.
    tagged = [
        {**t, "content": t["content"].partition(": ")[2],
         "metadata": {**t["metadata"], "speaker": t["content"].partition(":")[0]}}
        for t in talk
    ]  # fmt: skip
    await add_all(running, "tagged", tagged)
    contexts = await exported_chunks(running, "tagged")
    said = [t["content"] for t in tagged]
    assert contexts["His name is Toby."] == "\n".join(said[:3])
    assert contexts["Aww, I love that name!"] == said[3]


async def test_a_reaction_is_not_read_with_the_turn_before(running: Running) -> None:
    """A message of small talk alone ("omg", "so cute!!") says nothing of its own: read with the
    turn before, it would be found as that turn is, and fill results with nothing to tell."""
    talk = [
        turn("q", "Ana: Anything new with you?"),
        turn("m", "Ben: We adopted a puppy last week, his name is Toby."),
        turn("r1", "Ana: omg"),
        turn("r2", "Ana: so cute!!"),
        turn("a", "Ana: What breed is he?"),
        *apart(
            [
                "Ben: My sister has a cat called Whiskers.",
                "Ana: We walked the dog of our neighbour last weekend.",
                "Ben: I named my bike Rocket, silly I know.",
                "Ana: The shelter down the road is looking for volunteers.",
            ]
        ),
    ]
    await add_all(running, "reactions", talk)
    contexts = await exported_chunks(running, "reactions")
    assert contexts["Ana: omg"] == "" and contexts["Ana: so cute!!"] == "", contexts
    # A question of its own is read with the turns before it, as ever.
    assert "Ben: We adopted a puppy last week" in contexts["Ana: What breed is he?"]
    found = await ranked(running, "reactions", "What is the name of Ben's puppy?", limit=3)
    assert found[0] == "m" and not {"r1", "r2"} & set(found), found


async def test_a_long_turn_before_is_no_context(running: Running) -> None:
    long_answer = "Assistant: " + " ".join(
        f"Point {i}: keep the soil moist and give the seedlings light." for i in range(12)
    )
    await add_all(running, "garden", [
        turn("u1", "User: How do I grow tomatoes?"),
        turn("a1", long_answer),
        turn("u2", "User: Thanks, I will try the greenhouse first."),
    ])  # fmt: skip
    contexts = await exported_chunks(running, "garden")
    assert contexts["User: Thanks, I will try the greenhouse first."] == ""
    assert all(
        context == "User: How do I grow tomatoes?"
        for text, context in contexts.items()
        if text.startswith("Assistant:") or text.startswith("Point")
    ), contexts


async def test_one_long_document_does_not_fill_the_top(running: Running) -> None:
    manual = "\n\n".join(
        f"## Kites part {i}\n\n"
        + f"Kites fly best in steady wind; kite line {i} holds the kite. " * 12
        for i in range(8)
    )
    await add_all(running, "kites", [
        {"content": manual, "metadata": {"turn": "manual"}},
        {"content": "Sam flies a red kite at the beach.", "metadata": {"turn": "sam"}},
        {"content": "Mia built a box kite from bamboo.", "metadata": {"turn": "mia"}},
        {"content": "Jo lost a kite in a tree.", "metadata": {"turn": "jo"}},
    ])  # fmt: skip
    found = await ranked(running, "kites", "kite", limit=6)
    assert {"sam", "mia", "jo"} <= set(found), found  # the others' best before its tail
    assert found.count("manual") <= 3, found


async def test_a_vector_read_with_a_context_since_replaced_is_not_written(tmp_path: Path) -> None:
    """A turn's chunks are embedded as they were read; meanwhile the commit of a turn stored
    late may have given one a new context and its vector (turn_contexts.py), and the older
    vector is not written over them."""
    store = store_at(tmp_path / "s.sqlite3")
    await store.open()
    try:
        async with store.write() as writer:
            await writer.ensure_namespace("n", 1.0)
            doc = await writer.insert_document(
                Document(
                    seq=0, id="doc_a", namespace="n", caller_id=None, title=None, type="text",
                    content="Melanie: A friend dragged me out.", url=None, metadata={},
                    content_date=1.0, content_hash="h", task_type="memory", status="embedding",
                    error=None, revision=1, created_at=1.0, updated_at=1.0,
                )
            )  # fmt: skip
            await writer.replace_chunks(doc, [("chk_a", 0, "", doc.content, "painted", None)], 1.0)
            # The late turn's commit: a new context, with its vector.
            await writer.set_chunk_vectors([("chk_a", "painted", "running?")], np.ones((1, 4)))
            # The worker's step, which read the chunk before it.
            await writer.set_chunk_vectors([("chk_a", "painted", "painted")], np.zeros((1, 4)))
        async with store.read() as reader:
            (chunk,) = await reader.chunks_of("doc_a")
            rows = await reader.chunk_index_rows_of("doc_a")
        assert chunk.context == "running?"
        assert np.frombuffer(rows.vectors[0], dtype=np.float32).tolist() == [1.0] * 4
        assert rows.texts == [f"{doc.content} running?"]
    finally:
        await store.close()
