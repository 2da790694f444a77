"""`POST /ns/{ns}/import` through the real daemon: an export put back into an empty daemon gives
the same records and the same answers; a file that is not a whole, sound export is refused
naming its line and leaves nothing behind. Run on both stores (tests/conftest.py
BACKEND_SUITES); one test crosses them, SQLite to PostgreSQL and back. Generated histories:
tests/test_import_histories.py."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from smemd.protocol.exports import (
    Header,
    MemoryRecord,
)
from tests import postgres
from tests.conftest import Running, StartDaemon, config_with_tokens, make_config, token_table
from tests.test_api import assert_error, call
from tests.test_export import export, records
from tests.test_memory_api import NS, add, settle

IMPORT = "http://smemd/ns/{ns}/import"
NDJSON = {"Content-Type": "application/x-ndjson"}


@pytest.fixture(autouse=True)
def databases(request: pytest.FixtureRequest) -> Iterator[Callable[[], str]]:
    """New PostgreSQL databases, dropped once the test's daemons have stopped (autouse: made
    before `start_daemon`, so torn down after it)."""
    made: list[str] = []

    def make() -> str:
        server: postgres.Server = request.getfixturevalue("postgres_server")
        made.append(server.database())
        return made[-1]

    yield make
    for dsn in made:
        request.getfixturevalue("postgres_server").drop(dsn)


@pytest.fixture
async def other(
    databases: Callable[[], str], start_daemon: StartDaemon, short_dir: Path, store_backend: str
) -> Running:
    """A second, empty daemon (its own state dir; its own database on PostgreSQL)."""
    settings = {"store__dsn": databases()} if store_backend == "postgres" else {}
    (short_dir / "b").mkdir()
    return await start_daemon(make_config(short_dir / "b", **settings))


async def post_import(
    running: Running, body: bytes | AsyncIterator[bytes], ns: str = "people"
) -> tuple[int, Any]:
    async with running.unix.post(IMPORT.format(ns=ns), data=body, headers=NDJSON) as response:
        return response.status, await response.json()


async def history(running: Running) -> None:
    """Versions, a forgotten memory, a retracted document, a bucket and a context."""
    await add(running, "Alex lives in Seattle.", id="a", metadata={"source": "chat", "n": 3})
    await settle(running)
    await add(running, "Alex moved to Portland.", id="b", date="2024-03-01T00:00:00Z")
    await add(running, "Sam owns a red kite. Mia plays the cello.", id="c")
    await add(running, "Jo drinks green tea every morning.", id="d")
    await settle(running)
    found = await answers(running, "kite")
    status, _, _ = await call(
        running.unix, "DELETE", f"{NS}/memories", json={"ids": [found["ids"][0]]}
    )
    assert status == 200
    status, _, _ = await call(running.unix, "POST", f"{NS}/document/d/retract")
    assert status == 200
    status, _, _ = await call(
        running.unix, "PATCH", NS, json={"supportingContext": "Notes about friends."}
    )
    assert status in (200, 404)  # not every generation names it the same; a context is a nicety


async def answers(running: Running, query: str, **options: Any) -> dict[str, Any]:
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/search", json={"query": query, "limit": 10, **options}
    )
    assert status == 200, body
    return {
        "ids": [r["id"] for r in body["results"]],
        "texts": [r.get("memory") or r.get("chunk") for r in body["results"]],
    }


async def same_answers(one: Running, two: Running) -> None:
    for query in ("Where does Alex live?", "kite", "tea", "cello"):
        assert await answers(one, query) == await answers(two, query), query
    asked = {"asOf": "2024-01-01T00:00:00Z"}
    assert await answers(one, "Alex", **asked) == await answers(two, "Alex", **asked)
    status, body, _ = await call(one.unix, "POST", f"{NS}/profile", json={})
    status_two, body_two, _ = await call(two.unix, "POST", f"{NS}/profile", json={})
    assert status == status_two == 200
    assert body["profile"] == body_two["profile"]


async def test_an_export_imported_into_an_empty_daemon_is_the_same_memory(
    running: Running, other: Running
) -> None:
    await history(running)
    status, body, _ = await export(running)
    assert status == 200
    status, reply = await post_import(other, body)
    assert status == 200, reply
    exported = records(body)
    assert reply["namespace"] == "people" and reply["requeued"] == 0
    assert sum(reply["records"].values()) == len(exported) - 2
    status, again, _ = await export(other)
    assert status == 200
    # Every record as it was (but the header's moment): versions, times, states, links.
    assert records(again)[1:] == exported[1:]
    chains = [m for m in exported if isinstance(m, MemoryRecord)]
    assert any(m.forgotten_at for m in chains) and any(m.version > 1 for m in chains)
    await same_answers(running, other)
    latest = next(m for m in chains if m.version > 1)
    for daemon in (running, other):
        status, versions, _ = await call(daemon.unix, "GET", f"{NS}/memories/{latest.id}/history")
        assert status == 200, versions
    one = (await call(running.unix, "GET", f"{NS}/memories/{latest.id}/history"))[1]
    two = (await call(other.unix, "GET", f"{NS}/memories/{latest.id}/history"))[1]
    assert one == two


async def test_an_import_under_another_name_gzipd_and_into_a_namespace_with_data(
    running: Running, other: Running
) -> None:
    await add(running, "Alex lives in Seattle.", id="a")
    await settle(running)
    _, body, _ = await export(running)
    status, reply = await post_import(other, gzip.compress(body), ns="friends")
    assert status == 200, reply
    status, listed, _ = await call(
        other.unix, "POST", "http://smemd/ns/friends/list/memories", json={}
    )
    assert status == 200 and listed["pagination"]["totalItems"] >= 1
    # Into a namespace that holds data: refused, and it keeps what it had.
    status, reply = await post_import(other, body, ns="friends")
    assert_error(status, reply, 409)
    assert "holds data" in reply["details"]
    # Into an empty namespace of a store that holds those ids (a copy on one daemon): refused.
    status, reply = await post_import(running, body, ns="copy")
    assert_error(status, reply, 409)
    assert "line 3" in reply["details"] or "already" in reply["details"], reply
    status, _, _ = await call(running.unix, "GET", "http://smemd/ns/copy/export")
    assert status == 404  # nothing was made


async def exported(running: Running, ns: str) -> bytes:
    async with running.unix.get(f"http://smemd/ns/{ns}/export") as response:
        assert response.status == 200
        return await response.read()


async def merge_into(
    running: Running, body: bytes, rule: str, ns: str = "people"
) -> tuple[int, Any]:
    url = IMPORT.format(ns=ns) + f"?merge={rule}"
    async with running.unix.post(url, data=body, headers=NDJSON) as response:
        return response.status, await response.json()


async def test_a_newer_export_merged_by_replace_brings_the_namespace_up_to_it(
    running: Running, other: Running
) -> None:
    await add(running, "Alex lives in Seattle.", id="a")
    await settle(running)
    _, older, _ = await export(running)
    assert (await post_import(other, older))[0] == 200
    await add(running, "Alex moved to Portland.", id="b")
    await add(running, "Sam owns a red kite.", id="c")
    await settle(running)
    _, newer, _ = await export(running)
    # Without a rule the namespace must be empty; with `skip` the chain the file carried on
    # would have two latest versions (the namespace's and the file's): refused, whole.
    assert_error(*(await post_import(other, newer)), 409)
    status, reply = await merge_into(other, newer, "skip")
    assert_error(status, reply, 409)
    assert "two latest versions" in reply["details"] or "2 latest versions" in reply["details"]
    assert records((await export(other))[1])[1:] == records(older)[1:]  # nothing written
    status, reply = await merge_into(other, newer, "replace")
    assert status == 200, reply
    assert reply["merge"] == "replace" and reply["held"]["document"] == 1, reply
    assert records((await export(other))[1])[1:] == records(newer)[1:]
    await same_answers(running, other)
    # The same file once more, either way: everything is held, nothing changes (but when the
    # namespace was last written).
    for rule in ("skip", "replace"):
        status, reply = await merge_into(other, newer, rule)
        assert status == 200, reply
        assert reply["held"]["memory"] == reply["records"]["memory"], reply
        assert records((await export(other))[1])[2:] == records(newer)[2:]


async def test_a_merge_of_another_namespace_shares_its_entities_and_refuses_a_clash(
    running: Running, other: Running
) -> None:
    await add(running, "Alex lives in Seattle.", id="a")
    await settle(running)
    status, _, _ = await call(
        other.unix, "POST", "http://smemd/ns/people/document",
        json={"content": "Alex plays the cello on Sundays.", "id": "x"},
    )  # fmt: skip
    assert status == 200
    await settle(other)
    _, body, _ = await export(running)
    # A custom id another document of the namespace holds: refused naming the line.
    status, _, _ = await call(
        other.unix, "POST", "http://smemd/ns/clash/document",
        json={"content": "Alex sings in a choir.", "id": "a"},
    )  # fmt: skip
    assert status == 200
    await settle(other)
    before = await exported(other, "clash")
    status, reply = await merge_into(other, body, "replace", ns="clash")
    assert_error(status, reply, 409)
    line = [msgspec.json.decode(x)["record"] for x in _lines(body)].index("document") + 1
    assert f"line {line}: $.callerId" in reply["details"], reply
    assert records(await exported(other, "clash"))[1:] == records(before)[1:]
    status, reply = await merge_into(other, body, "skip")
    assert status == 200, reply
    status, listed, _ = await call(other.unix, "GET", f"{NS}/entities")
    assert status == 200, listed
    alex = [e for e in listed["entities"] if e["name"] == "Alex"]
    assert len(alex) == 1 and alex[0]["memories"] == 2, listed  # the file's Alex is the one held
    assert {m for m in (await answers(other, "Alex"))["texts"] if m} >= {
        "Alex lives in Seattle.", "Alex plays the cello on Sundays."
    }  # fmt: skip
    # An id another namespace of the store holds: refused, as without a rule.
    status, reply = await merge_into(running, body, "skip", ns="elsewhere")
    assert_error(status, reply, 409)
    assert "ids taken" in reply["error"] or "already" in reply["details"], reply
    # Not a rule: 400.
    assert_error(*(await merge_into(other, body, "union")), 400)


def _lines(body: bytes) -> list[bytes]:
    return body.rstrip(b"\n").split(b"\n")


def _edited(body: bytes, index: int, **changes: Any) -> bytes:
    lines = _lines(body)
    record = msgspec.json.decode(lines[index])
    record.update(changes)
    lines[index] = msgspec.json.encode(record)
    return b"\n".join(lines) + b"\n"


async def test_a_file_that_is_not_a_sound_export_is_refused_naming_the_line(
    running: Running, other: Running
) -> None:
    await add(running, "Alex lives in Seattle.", id="a")
    await settle(running)
    _, body, _ = await export(running)
    lines = _lines(body)
    kinds = [msgspec.json.decode(line)["record"] for line in lines]
    memory, chunk = kinds.index("memory"), kinds.index("chunk")
    newer = msgspec.json.encode(msgspec.structs.replace(records(body)[0], version=2))
    assert isinstance(records(body)[0], Header)
    cases: list[tuple[bytes, str]] = [
        (b"\n".join(lines[:-1]) + b"\n", "cut off"),  # no trailer
        (b"\n".join(lines[:-3]) + b"\n", "cut off"),
        (b"\n".join([newer, *lines[1:]]) + b"\n", "line 1: $.version"),
        (b'{"format": "other"}\n' + body, "line 1:"),
        (b"", "empty"),
        (b"not json\n", "line 1:"),
        (_edited(body, memory, text=7), f"line {memory + 1}:"),
        (_edited(body, memory, type="rumour"), f"line {memory + 1}:"),
        (_edited(body, memory, validFrom=1e300), f"line {memory + 1}:"),
        (_edited(body, memory, documentId="doc_nowhere"), f"line {memory + 1}: $.documentId"),
        (_edited(body, chunk, documentId="doc_nowhere"), f"line {chunk + 1}: $.documentId"),
        (_edited(body, memory, record="ghost"), f"line {memory + 1}:"),
        (b"\n".join([*lines[: memory + 1], *lines[memory:]]) + b"\n", f"line {memory + 2}: $.id"),
        (_edited(body, len(lines) - 1, records={"memory": 99}), "$.records"),
        (b"\n".join([*lines, lines[-1]]) + b"\n", "after the trailer"),
        (gzip.compress(body)[:-20], "gzip"),
    ]
    for bad, named in cases:
        status, reply = await post_import(other, bad)
        assert_error(status, reply, 400)
        assert named in reply["details"], (named, reply)

    # A line past the format's limit, sent without building it whole on either side.
    async def long_line() -> AsyncIterator[bytes]:
        yield lines[0] + b"\n"
        for _ in range(65):
            yield b"x" * (1024 * 1024)

    status, reply = await post_import(other, long_line())
    assert_error(status, reply, 400)
    assert "line 2: longer than" in reply["details"]
    # Nothing of any of them was written, nor left in the scratch space; the good file goes in.
    status, _, _ = await call(other.unix, "GET", f"{NS}/export")
    assert status == 404
    assert not list((other.daemon.config.state_dir / "imports").iterdir())
    # Blank lines (and CRLF endings) are no records, and count as lines.
    spaced = b"\r\n".join([lines[0], b"", *lines[1:]]) + b"\r\n\r\n"
    status, reply = await post_import(other, spaced)
    assert status == 200, reply
    # Not JSON Lines at all: 415; a write route: a read token may not import (tests/test_tokens).
    status, reply, _ = await call(other.unix, "POST", IMPORT.format(ns="x"), json={"a": 1})
    assert_error(status, reply, 415)


async def test_sqlite_to_postgresql_and_back_keeps_every_record(
    databases: Callable[[], str], start_daemon: StartDaemon, short_dir: Path, store_backend: str
) -> None:
    if store_backend == "postgres":
        pytest.skip("crosses both stores itself: once is enough")
    first = await start_daemon()
    await history(first)
    (short_dir / "pg").mkdir()
    middle = await start_daemon(
        make_config(short_dir / "pg", store__kind="postgres", store__dsn=databases())
    )
    (short_dir / "back").mkdir()
    last = await start_daemon(make_config(short_dir / "back"))
    _, body, _ = await export(first)
    for into, came in ((middle, first), (last, middle)):
        _, sent, _ = await export(came)
        status, reply = await post_import(into, sent)
        assert status == 200, reply
    _, again, _ = await export(last)
    assert records(again)[1:] == records(body)[1:]
    await same_answers(first, last)


async def test_an_import_takes_a_write_token_of_its_namespace(
    start_daemon: StartDaemon, short_dir: Path
) -> None:
    tokens = token_table("reader", "import-reader-secret-1", "read") + token_table(
        "writer", "import-writer-secret-1", "write", ["people"]
    )
    guarded = await start_daemon(config_with_tokens(short_dir, tokens))
    await add(guarded, "Alex lives in Seattle.")
    await settle(guarded)
    _, body, _ = await export(guarded)
    status, _, _ = await call(guarded.unix, "DELETE", NS)  # the socket needs no token
    assert status == 200

    async def post(ns: str, secret: str) -> tuple[int, Any]:
        headers = {**NDJSON, "Authorization": f"Bearer {secret}"}
        url = guarded.url(f"/ns/{ns}/import")
        async with guarded.tcp.post(url, data=body, headers=headers) as response:
            return response.status, await response.json()

    assert_error(*(await post("people", "import-reader-secret-1")), 403)
    assert_error(*(await post("others", "import-writer-secret-1")), 403)
    status, reply = await post("people", "import-writer-secret-1")
    assert status == 200, reply
