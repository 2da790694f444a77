"""The pause file: its checks, the watcher on real files, and smemd's atomic writes."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smemd.fleet.pause import (
    MAX_FILE_BYTES,
    Pause,
    PauseError,
    PauseWatcher,
    clear_pause,
    decode_pause_file,
    parse_pause,
    write_pause,
)
from tests.pace import scaled

KNOWN = {"node0": False, "node1": True, "node2": True, "node3": True, "node4": True}
PERIOD = 0.05


def iso(seconds_from_now: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds_from_now)).isoformat()


def body(nodes: object = ("node3",), until: object = None, **extra: object) -> bytes:
    doc: dict[str, object] = {"nodes": list(nodes) if isinstance(nodes, tuple) else nodes}
    doc["until"] = iso(3600) if until is None else until
    doc.update(extra)
    return json.dumps(doc).encode()


def put(path: Path, data: bytes) -> None:
    """Swap in new content as a new inode, as a careful writer would."""
    tmp = path.with_name(".put.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


async def until_true(check: Callable[[], bool], within: float = 2.0) -> None:
    deadline = time.monotonic() + scaled(within)
    while not check():
        assert time.monotonic() < deadline, "timed out waiting for the watcher"
        await asyncio.sleep(0.01)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def warnings(self) -> list[str]:
        return [r.getMessage() for r in self.records if r.levelno == logging.WARNING]


@pytest.fixture
def fleet_log() -> Iterator[Records]:
    # Attached to the logger itself: smemd.log.setup turns propagation off for in-process daemons.
    handler = Records()
    logger = logging.getLogger("smemd.fleet")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old_level)


# --- the checks ---------------------------------------------------------------------------------


def test_a_valid_file_parses() -> None:
    raw = body(("node3", "node4"), until="2030-01-01T12:00:00+01:00", by="farm", reason="frame 12")
    now = datetime(2030, 1, 1, tzinfo=UTC).timestamp()
    pause = parse_pause(raw, known=KNOWN, now=now)
    assert pause.nodes == frozenset({"node3", "node4"})
    assert pause.until == datetime(2030, 1, 1, 11, tzinfo=UTC)
    assert (pause.by, pause.reason) == ("farm", "frame 12")
    assert pause.is_active(now) and not pause.is_active(pause.expires_at)


def test_z_suffix_and_utf8_bom_are_accepted() -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC).timestamp()
    raw = b"\xef\xbb\xbf" + body(until="2030-01-01T01:00:00Z")
    assert parse_pause(raw, known=KNOWN, now=now).expires_at == now + 3600


def test_every_unknown_and_every_kept_node_is_named() -> None:
    with pytest.raises(PauseError) as caught:
        parse_pause(body(("node9", "node0", "gpu1")), known=KNOWN, now=time.time())
    message = caught.value.message
    assert "unknown node ids 'gpu1', 'node9'" in message
    assert "not lendable (lendable = false in config): 'node0'" in message
    assert caught.value.status == 400


# name, what to put at the path, words the error must hold. A function makes the thing at a side
# path, which then replaces the file in one rename: the watcher never sees "no file" in between.
BAD_FILES: list[tuple[str, bytes | Callable[[Path], None], str]] = [
    ("truncated", body()[:20], "truncated JSON"),
    ("empty", b"", "empty file"),
    ("blank", b"  \n\t", "empty file"),
    ("null", b"null", "$: Expected `object`, got `null`"),
    ("a list", b'["node3"]', "$: Expected `object`, got `array`"),
    ("a string", b'"node3"', "$: Expected `object`, got `str`"),
    ("nodes a string", body(nodes="node3"), "$.nodes: Expected `array`, got `str`"),
    ("node a number", body(nodes=[3]), "$.nodes[0]: Expected `str`, got `int`"),
    ("nested junk", body(nodes=[[["node3"]], {"a": None}]), "$.nodes[0]: Expected `str`"),
    ("deep nesting", b"[" * 30000, "$: Expected `object`, got `array`"),
    ("until a number", body(until=1893456000), "$.until: Expected `str`, got `int`"),
    ("by a number", body(by=7), "$.by: Expected `str`, got `int`"),
    ("no until", b'{"nodes": ["node3"]}', "$.until: missing"),
    ("no nodes", json.dumps({"until": iso(60)}).encode(), "$.nodes: missing"),
    ("empty nodes", body(nodes=[]), "$.nodes: empty"),
    ("until words", body(until="tomorrow"), "'tomorrow' is not an ISO-8601 time"),
    ("until no such day", body(until="2030-02-30T00:00:00Z"), "is not an ISO-8601 time"),
    ("until naive", body(until="2030-01-01T00:00:00"), "has no UTC offset"),
    ("until past", body(until=iso(-60)), "has already passed"),
    ("until in 10 years", body(until=iso(3650 * 86400)), "more than 30 days ahead"),
    ("unknown node", body(nodes=["node3", "node9"]), "unknown node ids 'node9'"),
    ("not lendable", body(nodes=["node0"]), "not lendable (lendable = false in config): 'node0'"),
    ("duplicate nodes", body(nodes=["node3", "node3"]), "listed more than once: 'node3'"),
    ("unknown field", body(color="red"), "$.color: unknown field"),
    ("NaN", body()[:-1] + b', "by": NaN}', "not valid JSON"),
    ("trailing junk", body() + b"}", "not valid JSON"),
    ("huge", body(reason="x" * MAX_FILE_BYTES), f"larger than {MAX_FILE_BYTES} bytes"),
    ("binary garbage", bytes(range(256)) * 4, "not UTF-8 text: byte 0x80 at offset 128"),
    ("UTF-16 with BOM", body().decode().encode("utf-16"), "UTF-16 text"),
    # A link is refused, not followed: a real directory in the file's place has its own test.
    ("a link to a directory", lambda side: side.symlink_to(side.parent / "d"), "a symbolic link"),
    ("a FIFO", lambda side: os.mkfifo(side), "a special file, not a regular file"),
    (
        "a symlink loop",
        lambda side: side.symlink_to("paused.json"),
        "a symbolic link, not a regular",
    ),
]


@pytest.mark.parametrize(
    ("content", "error"),
    [pytest.param(c, e, id=name) for name, c, e in BAD_FILES if isinstance(c, bytes)],
)
def test_parse_pause_names_the_problem(content: bytes, error: str) -> None:
    with pytest.raises(PauseError) as caught:
        parse_pause(content, known=KNOWN, now=time.time())
    assert error in caught.value.message


# --- the watcher --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "error"), [pytest.param(c, e, id=name) for name, c, e in BAD_FILES]
)
async def test_a_bad_file_keeps_the_last_pause_and_says_why(
    tmp_path: Path, fleet_log: Records, content: bytes | Callable[[Path], None], error: str
) -> None:
    path = tmp_path / "paused.json"
    put(path, body(("node1", "node2")))
    async with PauseWatcher(path, known=KNOWN, period=PERIOD) as watcher:
        assert watcher.paused() == {"node1", "node2"} and watcher.error is None

        if isinstance(content, bytes):
            put(path, content)
        else:
            (tmp_path / "d").mkdir()
            content(tmp_path / "side")
            os.replace(tmp_path / "side", path)
        await until_true(lambda: watcher.error is not None)
        assert error in (watcher.error or "")
        assert watcher.paused() == {"node1", "node2"}
        [warning] = fleet_log.warnings()
        assert error in warning and "still in force: node1, node2 lent until" in warning

        put(path, body(("node4",)))
        await until_true(lambda: watcher.error is None)
        assert watcher.paused() == {"node4"}


async def test_a_directory_in_place_of_the_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    path.mkdir()
    async with PauseWatcher(path, known=KNOWN, period=PERIOD) as watcher:
        assert watcher.error == "a directory, not a regular file" and watcher.active() is None
        path.rmdir()
        await until_true(lambda: watcher.error is None)


async def test_each_distinct_error_is_logged_once(tmp_path: Path, fleet_log: Records) -> None:
    path = tmp_path / "paused.json"
    async with PauseWatcher(path, known=KNOWN, period=PERIOD) as watcher:
        for content in [b"null", b"null ", b"null  ", b"[]", b"[] "]:
            put(path, content)  # a new inode each time: each is a new version to read
            await watcher.refresh()
        assert fleet_log.warnings() == [
            f"pause file {path} rejected: $: Expected `object`, got `null`; still in force: no nodes lent",
            f"pause file {path} rejected: $: Expected `object`, got `array`; still in force: no nodes lent",
        ]


async def test_a_half_written_file_is_an_error_not_a_resume(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    put(path, body(("node1",)))
    async with PauseWatcher(path, known=KNOWN, period=PERIOD) as watcher:
        new = body(("node2", "node3"), by="farm")
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)  # truncate, then write in two parts
        try:
            os.write(fd, new[:15])
            await until_true(lambda: watcher.error is not None)
            assert watcher.error in {"truncated JSON (a writer may be part-way through it)"} | {
                "empty file (a writer may be part-way through it)"
            }
            assert watcher.paused() == {"node1"}
            os.write(fd, new[15:])
        finally:
            os.close(fd)
        await until_true(lambda: watcher.error is None)
        assert watcher.paused() == {"node2", "node3"}


async def test_no_file_is_no_pause_and_removing_it_resumes(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    async with PauseWatcher(path, known=KNOWN, period=PERIOD) as watcher:
        assert watcher.active() is None and watcher.error is None
        changed = asyncio.create_task(watcher.changed())
        put(path, body(("node3",), by="farm", reason="frame 12"))
        await asyncio.wait_for(changed, 2)
        pause = watcher.active()
        assert pause is not None and (pause.nodes, pause.by) == ({"node3"}, "farm")

        changed = asyncio.create_task(watcher.changed())
        path.unlink()
        await asyncio.wait_for(changed, 2)
        assert watcher.paused() == frozenset() and watcher.error is None


async def test_expiry_lifts_the_pause_at_until_and_notifies(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    put(path, body(("node3",), until=iso(0.3)))
    # A period longer than the pause: the watcher must wake at `until`, not at its next poll.
    async with PauseWatcher(path, known=KNOWN, period=1.0) as watcher:
        pause = watcher.active()
        assert pause is not None and watcher.paused() == {"node3"}
        await asyncio.wait_for(watcher.changed(), 2)
        now = time.time()
        assert pause.expires_at <= now < pause.expires_at + 0.3
        assert watcher.paused() == frozenset() and watcher.error is None
        assert watcher.pause == pause  # still the last valid pause, only no longer active


async def test_a_pause_that_ran_out_is_no_error_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    put(path, body(("node3",), until=iso(0.1)))
    await asyncio.sleep(0.2)
    async with PauseWatcher(path, known=KNOWN, period=PERIOD) as watcher:
        assert watcher.error is None and watcher.paused() == frozenset()


async def test_refresh_takes_smemds_own_write_at_once(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    async with PauseWatcher(path, known=KNOWN, period=1.0) as watcher:
        now = time.time()
        write_pause(path, parse_pause(body(("node2",)), known=KNOWN, now=now))
        await watcher.refresh()
        assert watcher.paused() == {"node2"}


# --- smemd's writes -----------------------------------------------------------------------------


def a_pause(*nodes: str, seconds: float = 3600, reason: str = "") -> Pause:
    return parse_pause(body(nodes, until=iso(seconds), reason=reason), known=KNOWN, now=time.time())


def test_writes_are_atomic_and_leave_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    write_pause(path, a_pause("node1"))
    stop = threading.Event()
    reads: list[int] = []
    failures: list[str] = []

    def read_hard() -> None:
        while not stop.is_set():
            try:
                decode_pause_file(path.read_bytes())
            except (PauseError, OSError) as err:
                failures.append(repr(err))
            reads.append(1)

    reader = threading.Thread(target=read_hard)
    reader.start()
    try:
        for i in range(200):
            nodes = ("node1", "node2", "node3", "node4")[: i % 4 + 1]
            write_pause(path, a_pause(*nodes, reason="r" * (i * 37 % 500)))
    finally:
        stop.set()
        reader.join()
    assert failures == [] and len(reads) > 200
    assert os.listdir(tmp_path) == ["paused.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o660


def test_a_failed_write_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    path.mkdir()
    (path / "inside").touch()  # a non-empty directory cannot be renamed over
    with pytest.raises(OSError):
        write_pause(path, a_pause("node1"))
    assert os.listdir(tmp_path) == ["paused.json"]


def test_clear_pause_some_then_all(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    pause = a_pause("node1", "node2", "node3", reason="render")
    write_pause(path, pause)
    assert clear_pause(path, {"node2", "node4"}) == {"node1", "node3"}
    left = parse_pause(path.read_bytes(), known=KNOWN, now=time.time())
    assert left.nodes == {"node1", "node3"}
    assert (left.until, left.reason) == (pause.until, "render")
    assert stat.S_IMODE(path.stat().st_mode) == 0o660

    assert clear_pause(path, {"node1", "node3"}) == frozenset()
    assert os.listdir(tmp_path) == []
    assert clear_pause(path, {"node1"}) == frozenset()  # nothing to resume is fine
    write_pause(path, pause)
    assert clear_pause(path) == frozenset() and not path.exists()
    assert clear_pause(path) == frozenset()


def test_clear_pause_deletes_an_expired_file(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    write_pause(path, a_pause("node1", "node2", seconds=0.05))
    time.sleep(0.1)
    assert clear_pause(path, {"node1"}) == frozenset() and not path.exists()


def test_clear_some_nodes_of_a_bad_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    path.write_bytes(b'{"nodes": ["node1"')
    with pytest.raises(PauseError, match="resume all nodes to remove it"):
        clear_pause(path, {"node1"})
    assert path.exists()
    assert clear_pause(path) == frozenset() and not path.exists()


# --- no input crashes the checks ----------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
offsets = st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23)).map(timezone)
near_files = st.fixed_dictionaries(
    {},
    optional={
        "nodes": st.lists(st.sampled_from([*KNOWN, "node9"]), max_size=4) | json_values,
        "until": st.floats(-1e6, 4e6).map(iso)
        | st.datetimes(timezones=st.none() | offsets).map(datetime.isoformat)
        | json_values,
        "by": st.text(max_size=10) | json_values,
        "reason": st.text(max_size=10),
        "extra": json_values,
    },
)


good_files = st.fixed_dictionaries(
    {
        "nodes": st.lists(st.sampled_from(["node1", "node2", "node3"]), min_size=1, unique=True),
        "until": st.floats(1, 2e6).map(iso),
    },
    optional={"by": st.text(max_size=10), "reason": st.text(max_size=10)},
)


@settings(max_examples=200, deadline=None)
@given(
    raw=st.binary(max_size=300) | (near_files | good_files).map(lambda d: json.dumps(d).encode())
)
def test_any_bytes_give_a_pause_or_a_pause_error(raw: bytes) -> None:
    try:
        pause = parse_pause(raw, known=KNOWN, now=time.time())
    except PauseError as err:
        assert err.message
    else:
        assert pause.nodes and pause.nodes <= KNOWN.keys()
