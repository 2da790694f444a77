"""The pause file and `POST /v1/pause` against hostile input: links, huge fields, absurd times."""

from __future__ import annotations

import asyncio
import json
import os
import re
import string
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, get_args

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import smemd.fleet.pause.disk
import smemd.fleet.pause.rules
from smemd.api.control.lanes import checked_pause
from smemd.config import NodeId
from smemd.errors import BadRequest
from smemd.fleet.pause import (
    MAX_AHEAD,
    MAX_FILE_BYTES,
    Pause,
    PauseError,
    PauseWatcher,
    clear_pause,
    decode_pause_file,
    parse_pause,
    write_pause,
)
from smemd.protocol import (
    MAX_NODE_ID_CHARS,
    MAX_PAUSE_BY_CHARS,
    MAX_PAUSE_NODES,
    MAX_PAUSE_REASON_CHARS,
    MAX_PAUSE_TIME_CHARS,
    PauseRequest,
)
from tests.conftest import Running, StartDaemon
from tests.fakes.fleet import start_hosts, started
from tests.fakes.llama_server import FakeLlamaServer
from tests.test_api import call

KNOWN = {"node0": False, "node1": True, "node2": True, "node3": True, "node4": True}
LINK_ERROR = "a symbolic link, not a regular file; smem does not follow links"
# Looks like a credential; long enough that a short excerpt of it is not the whole of it.
SECRET = "AKIA-SECRET-" + "0123456789abcdef" * 4


def iso(seconds_from_now: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds_from_now)).isoformat()


def pause_json(**fields: object) -> bytes:
    return json.dumps({"nodes": ["node1"], "until": iso(3600), **fields}).encode()


async def seen_by_watcher(path: Path) -> PauseWatcher:
    watcher = PauseWatcher(path, known=KNOWN)
    await watcher.refresh()  # one look, as the poll task would take it
    return watcher


# --- links ---------------------------------------------------------------------------------------


async def test_a_link_to_a_valid_pause_file_is_not_honoured(tmp_path: Path) -> None:
    target = tmp_path / "farm-secrets" / "elsewhere.json"
    target.parent.mkdir()
    target.write_bytes(pause_json(by="the-target", reason="content of the target"))
    path = tmp_path / "paused.json"
    path.symlink_to(target)

    watcher = await seen_by_watcher(path)
    assert watcher.active() is None and watcher.error == LINK_ERROR
    for leak in ("farm-secrets", "elsewhere", "the-target", "content of the target", "node1"):
        assert leak not in watcher.error


async def test_a_link_put_over_a_valid_file_keeps_the_last_pause(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    path.write_bytes(pause_json(by="farm"))
    watcher = await seen_by_watcher(path)
    assert watcher.paused() == {"node1"}

    (tmp_path / "other.json").write_bytes(pause_json(nodes=["node2", "node3"]))
    (tmp_path / "side").symlink_to(tmp_path / "other.json")
    os.replace(tmp_path / "side", path)
    await watcher.refresh()
    assert watcher.error == LINK_ERROR and watcher.paused() == {"node1"}


async def test_a_link_is_refused_even_if_it_appears_between_stat_and_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "paused.json"
    path.write_bytes(pause_json())
    (tmp_path / "other.json").write_bytes(pause_json(nodes=["node2"]))
    real_open = os.open

    def swap_then_open(file: Any, flags: int, *args: Any) -> int:
        # The look's lstat saw a regular file; a link takes its place before the open.
        if isinstance(file, (str, os.PathLike)) and Path(file) == path:
            (tmp_path / "side").symlink_to(tmp_path / "other.json")
            os.replace(tmp_path / "side", path)
        return real_open(file, flags, *args)

    monkeypatch.setattr(os, "open", swap_then_open)
    watcher = await seen_by_watcher(path)
    assert watcher.error == LINK_ERROR and watcher.active() is None


def test_clear_pause_neither_follows_nor_deletes_the_target_of_a_link(tmp_path: Path) -> None:
    target = tmp_path / "target.json"
    content = pause_json(nodes=["node1", "node2"])
    target.write_bytes(content)
    path = tmp_path / "paused.json"
    path.symlink_to(target)

    with pytest.raises(PauseError) as caught:
        clear_pause(path, {"node1"})
    assert LINK_ERROR in caught.value.message and "resume all nodes" in caught.value.message
    assert str(target) not in caught.value.message
    assert path.is_symlink() and target.read_bytes() == content

    assert clear_pause(path) == frozenset()
    assert not path.is_symlink() and target.read_bytes() == content


def test_clear_pause_does_not_hang_on_a_fifo(tmp_path: Path) -> None:
    path = tmp_path / "paused.json"
    os.mkfifo(path)
    with pytest.raises(PauseError, match="a special file, not a regular file"):
        clear_pause(path, {"node1"})
    assert clear_pause(path) == frozenset() and not path.exists()


# --- what an error may quote ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (pause_json(**{SECRET: 1}), "$: unknown field 'AKIA-SECRET-"),
        (pause_json(**{"a`b\n - at `$.until": 1}), "$: unknown field 'a`b\\n - at `$.until'"),
        (pause_json(nodes=[SECRET[:MAX_NODE_ID_CHARS]]), "unknown node ids 'AKIA-SECRET-"),
        (
            pause_json(nodes=[SECRET]),
            f"$.nodes[0]: Expected `str` of length <= {MAX_NODE_ID_CHARS}",
        ),
        (pause_json(until=SECRET), f"$.until: Expected `str` of length <= {MAX_PAUSE_TIME_CHARS}"),
        (pause_json(until=SECRET[:60]), "$.until: 'AKIA-SECRET-"),
        (SECRET.encode(), "not valid JSON"),
    ],
)
def test_an_error_quotes_the_file_only_in_a_short_escaped_excerpt(
    raw: bytes, expected: str
) -> None:
    with pytest.raises(PauseError) as caught:
        parse_pause(raw, known=KNOWN, now=time.time())
    message = caught.value.message
    assert expected in message and SECRET not in message and "\n" not in message


def test_a_plain_unknown_field_is_named_in_the_path() -> None:
    with pytest.raises(PauseError, match=re.escape("$.colour: unknown field")):
        parse_pause(pause_json(colour="red"), known=KNOWN, now=time.time())


json_text = st.text(st.characters(codec="utf-8"), max_size=80)
hostile = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | json_text | st.just(SECRET),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(json_text, inner, max_size=4),
    max_leaves=10,
)
hostile_files = st.fixed_dictionaries(
    {},
    optional={"nodes": hostile, "until": hostile, "by": hostile, "reason": hostile},
).flatmap(lambda d: st.dictionaries(json_text | st.just(SECRET), hostile, max_size=2).map(d.__or__))


@settings(max_examples=300, deadline=None)
@given(raw=hostile_files.map(lambda d: json.dumps(d).encode()) | st.binary(max_size=400))
def test_no_error_echoes_more_than_an_excerpt(raw: bytes) -> None:
    try:
        parse_pause(raw, known=KNOWN, now=time.time())
    except PauseError as err:
        message = err.message
        assert SECRET not in message and len(message) <= 1000, message
        assert message.isprintable(), message  # no newline or control character to forge a log line


# --- the bounds ----------------------------------------------------------------------------------


def test_the_modules_docstrings_state_the_bounds_in_force() -> None:
    docs = (smemd.fleet.pause.rules.__doc__ or "", smemd.fleet.pause.disk.__doc__ or "")
    doc = " ".join(" ".join(docs).split())
    for stated in (
        f"1 to {MAX_PAUSE_NODES} distinct",
        f"each id at most {MAX_NODE_ID_CHARS} characters",
        f"at most {MAX_AHEAD.days} days ahead",
        f"at most {MAX_AHEAD.days * 24}h",
        f"`by` has at most {MAX_PAUSE_BY_CHARS} characters",
        f"`reason` at most {MAX_PAUSE_REASON_CHARS:,}",
        f"at most {MAX_FILE_BYTES // 1024} KiB",
        "symbolic link in its place is refused, not followed",
    ):
        assert stated in doc


def test_every_node_a_fleet_can_have_can_be_lent_at_once() -> None:
    pattern = get_args(NodeId)[1].pattern
    ids = [f"node{i}" for i in range(10)] + [f"node{i:02d}" for i in range(100)]
    assert all(re.fullmatch(pattern, node) for node in ids)
    assert not re.fullmatch(pattern, "node100") and not re.fullmatch(pattern, "node")
    assert len(set(ids)) <= MAX_PAUSE_NODES
    assert max(map(len, ids)) <= MAX_NODE_ID_CHARS


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"reason": "r" * (MAX_PAUSE_REASON_CHARS + 1)}, "$.reason: Expected `str` of length"),
        ({"by": "b" * (MAX_PAUSE_BY_CHARS + 1)}, "$.by: Expected `str` of length <= 200"),
        ({"nodes": [f"n{i}" for i in range(MAX_PAUSE_NODES + 1)]}, "$.nodes: Expected `array`"),
        ({"until": iso(MAX_AHEAD.total_seconds() + 86400)}, "more than 30 days ahead"),
    ],
)
def test_the_file_is_held_to_the_bounds(fields: dict[str, object], error: str) -> None:
    with pytest.raises(PauseError) as caught:
        parse_pause(pause_json(**fields), known=KNOWN, now=time.time())
    assert error in caught.value.message


def test_fields_at_their_bounds_are_accepted() -> None:
    raw = pause_json(by="b" * MAX_PAUSE_BY_CHARS, reason="é" * MAX_PAUSE_REASON_CHARS)
    pause = parse_pause(raw, known=KNOWN, now=time.time())
    assert len(pause.reason) == MAX_PAUSE_REASON_CHARS and len(pause.by) == MAX_PAUSE_BY_CHARS


def test_the_largest_pause_the_bounds_allow_fits_in_a_file(tmp_path: Path) -> None:
    # Control characters take six bytes each once escaped (\u0001): the worst case per character.
    ctrl = "".join(map(chr, range(1, 32)))
    nodes = frozenset(
        (f"{i:03d}" + ctrl)[:MAX_NODE_ID_CHARS].ljust(MAX_NODE_ID_CHARS, "\x01")
        for i in range(MAX_PAUSE_NODES)
    )
    largest = Pause(
        nodes=nodes,
        until=datetime.now(UTC) + MAX_AHEAD,
        by="\x01" * MAX_PAUSE_BY_CHARS,
        reason="\x01" * MAX_PAUSE_REASON_CHARS,
    )
    path = tmp_path / "paused.json"
    write_pause(path, largest)
    assert path.stat().st_size <= MAX_FILE_BYTES
    assert set(decode_pause_file(path.read_bytes()).nodes) == nodes


async def test_the_watcher_allows_a_file_time_that_trails_the_clock(tmp_path: Path) -> None:
    # smemd's `for: "720h"` sets `until` from the clock; the kernel may stamp the file a tick earlier.
    now = time.time()
    path = tmp_path / "paused.json"
    for ahead, accepted in (
        (MAX_AHEAD.total_seconds(), True),
        (MAX_AHEAD.total_seconds() + 5, False),
    ):
        until = datetime.fromtimestamp(now + ahead, UTC).isoformat()
        path.write_bytes(pause_json(until=until))
        written = int((now - 0.005) * 1e9)
        os.utime(path, ns=(written, written))
        watcher = await seen_by_watcher(path)
        assert (watcher.active() is not None) == accepted, watcher.error


# --- what the API accepts, its reader accepts ----------------------------------------------------


def sized_text(bound: int) -> st.SearchStrategy[str]:
    """Text of any length up to a little past `bound`, often right at it."""
    lengths = st.integers(0, 20) | st.integers(bound - 2, bound + 2)
    return lengths.flatmap(lambda n: st.text(st.characters(codec="utf-8"), min_size=n, max_size=n))


durations = st.one_of(
    st.builds(
        lambda h, m, s: f"{h}h{m}m{s}s",
        st.integers(0, 800),
        st.integers(0, 100),
        st.integers(0, 100),
    ),
    st.integers(0, 50_000).map(lambda m: f"{m}m"),
    st.integers(0, 3_000_000).map(lambda s: f"{s}s"),
    st.sampled_from(["720h", "719h59m59s", "720h0m1s", "721h", "99999999h", "0h", "9" * 70 + "h"]),
    st.text(string.digits + "hms", max_size=12),
)
times = st.builds(
    lambda ahead, offset: (
        (datetime.now(UTC) + timedelta(seconds=ahead)).astimezone(offset).isoformat()
    ),
    # Never within 2 s of now: an `until` the API took a moment ago may have passed by the time
    # the reader looks (seen on a slow machine), and that is the clock, not a disagreement.
    st.floats(-60, MAX_AHEAD.total_seconds() + 60).filter(lambda ahead: abs(ahead) > 2),
    st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23)).map(timezone),
)
untils = st.one_of(times, times, st.text(max_size=70))
lendable = st.lists(st.sampled_from(["node1", "node2", "node3", "node4"]), min_size=1, max_size=5)
# Mostly nodes that can be lent, so that most requests get as far as the file.
any_nodes = st.lists(st.sampled_from(sorted(KNOWN)) | sized_text(MAX_NODE_ID_CHARS), max_size=3)
requests = st.fixed_dictionaries(
    {"nodes": st.one_of(lendable, lendable, lendable, any_nodes)},
    optional={"by": sized_text(MAX_PAUSE_BY_CHARS), "reason": sized_text(MAX_PAUSE_REASON_CHARS)},
).flatmap(
    lambda d: (
        st.fixed_dictionaries({"for": durations}) | st.fixed_dictionaries({"until": untils})
    ).map(d.__or__)
)
active_pauses = st.none() | st.lists(
    st.sampled_from(["node1", "node2", "node3", "node4"]), min_size=1, unique=True
).map(lambda nodes: Pause(nodes=frozenset(nodes), until=datetime.now(UTC) + timedelta(hours=1)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=requests, active=active_pauses)
def test_what_the_api_accepts_its_reader_accepts(
    tmp_path_factory: pytest.TempPathFactory, doc: dict[str, Any], active: Pause | None
) -> None:
    raw = json.dumps(doc).encode()
    try:
        body = msgspec.json.decode(raw, type=PauseRequest)  # as the route decodes it
        pause = checked_pause(body, active=active, known=KNOWN, now=datetime.now(UTC))
    except msgspec.ValidationError as err:
        assert str(err).endswith("`"), err  # names the field: "… - at `$.reason`"
        event("refused by the decoder")
        return
    except BadRequest as err:
        assert f"{err.message} {err.details}".count("$"), err
        event("refused by the checks")
        return
    event("accepted")
    path = tmp_path_factory.mktemp("api") / "paused.json"
    write_pause(path, pause)
    watcher = asyncio.run(seen_by_watcher(path))
    # The pause taken, whether or not it is still in force: one a second ahead may have run out.
    assert watcher.error is None and watcher.pause == pause


# --- through the daemon --------------------------------------------------------------------------


@pytest.fixture
async def running(short_dir: Path, start_daemon: StartDaemon) -> AsyncIterator[Running]:
    servers = {
        "node0": FakeLlamaServer(host="127.0.31.1"),
        "node1": FakeLlamaServer(host="127.0.31.2"),
    }
    async with started(servers):
        yield await start_hosts(
            start_daemon,
            short_dir,
            [
                ("node0", servers["node0"], ["interactive"], "embed"),
                ("node1", servers["node1"], ["background"], "embed"),
            ],
        )


async def lanes(running: Running) -> tuple[dict[str, Any], str]:
    """`GET /v1/lanes` as a token holder sees it over TCP, decoded and as text."""
    fleet = running.daemon.state.fleet
    assert fleet is not None and fleet.pauses is not None
    await fleet.pauses.refresh()
    status, body, _ = await call(running.tcp, "GET", running.url("/v1/lanes"))
    assert status == 200
    return body, json.dumps(body)


@pytest.mark.parametrize(
    "secret",
    [
        f"password = {SECRET}\n".encode(),
        pause_json(nodes=[SECRET]),
        pause_json(nodes=[SECRET[:MAX_NODE_ID_CHARS]], reason=SECRET),
        pause_json(**{SECRET: SECRET}),
        json.dumps({"nodes": ["node1"], "until": iso(3600), "by": SECRET}).encode(),
    ],
)
async def test_a_link_to_secret_content_never_shows_in_lanes(
    running: Running, short_dir: Path, secret: bytes
) -> None:
    target = short_dir / "secret.txt"
    target.write_bytes(secret)
    (short_dir / "paused.json").symlink_to(target)
    body, text = await lanes(running)
    assert body["pauseError"] == LINK_ERROR and body["pause"] is None
    assert SECRET[:16] not in text and str(target) not in text
    assert target.read_bytes() == secret


async def test_secret_looking_content_in_the_file_itself_shows_only_as_an_excerpt(
    running: Running, short_dir: Path
) -> None:
    (short_dir / "paused.json").write_bytes(pause_json(**{SECRET + "\nforged log line": 1}))
    body, text = await lanes(running)
    assert body["pauseError"].startswith("$: unknown field 'AKIA-SECRET-")
    assert SECRET not in text and "\n" not in body["pauseError"]


async def post_pause(running: Running, doc: dict[str, object]) -> tuple[int, Any]:
    status, reply, _ = await call(running.unix, "POST", "http://smemd/v1/pause", json=doc)
    return status, reply


REFUSED = [
    pytest.param(
        {"nodes": ["node1"], "for": "1h", "reason": "r" * 70_000}, "$.reason", id="reason"
    ),
    pytest.param({"nodes": ["node1"], "for": "1h", "by": "b" * 201}, "$.by", id="by"),
    pytest.param({"nodes": ["node1"] * 129, "for": "1h"}, "$.nodes", id="nodes"),
    pytest.param({"nodes": ["n" * 33], "for": "1h"}, "$.nodes[0]", id="node-id"),
    pytest.param({"nodes": ["node1"], "for": "99999999h"}, "$.for", id="for-absurd"),
    pytest.param({"nodes": ["node1"], "for": "9" * 30 + "s"}, "$.for", id="for-30-digits"),
    pytest.param({"nodes": ["node1"], "for": "9" * 70 + "h"}, "$.for", id="for-too-long"),
    pytest.param({"nodes": ["node1"], "for": "721h"}, "$.for", id="for-721h"),
    pytest.param({"nodes": ["node1"], "for": "43201m"}, "$.for", id="for-43201m"),
    pytest.param({"nodes": ["node1"], "for": "0h"}, "$.for", id="for-zero"),
    pytest.param({"nodes": ["node1"], "for": "\u0661h"}, "$.for", id="for-arabic-digit"),
    pytest.param({"nodes": ["node1"], "until": iso(31 * 86400)}, "$.until", id="until-31-days"),
    pytest.param({"nodes": ["node1"], "until": "9999-12-31T23:59:59+00:00"}, "$.until", id="y9999"),
]


@pytest.mark.parametrize(("doc", "names"), REFUSED)
async def test_a_refused_pause_is_a_400_naming_the_field_and_writes_nothing(
    running: Running, short_dir: Path, doc: dict[str, object], names: str
) -> None:
    status, reply = await post_pause(running, doc)
    assert status == 400 and names in f"{reply['error']} {reply['details']}", reply
    assert not (short_dir / "paused.json").exists()


@pytest.mark.parametrize(
    ("doc", "names"), [p for p in REFUSED if p.id in {"reason", "for-absurd", "for-721h"}]
)
async def test_a_refused_pause_leaves_the_pause_in_force_as_it_was(
    running: Running, short_dir: Path, doc: dict[str, object], names: str
) -> None:
    assert (await post_pause(running, {"nodes": ["node0"], "for": "1h", "by": "farm"}))[0] == 200
    path = short_dir / "paused.json"
    before = path.read_bytes()
    status, reply = await post_pause(running, doc)
    assert status == 400 and names in f"{reply['error']} {reply['details']}", reply
    assert path.read_bytes() == before
    body, _ = await lanes(running)
    assert body["pause"]["nodes"] == ["node0"] and body["pauseError"] is None


async def test_the_longest_pause_the_api_allows_is_honoured(
    running: Running, short_dir: Path
) -> None:
    status, reply = await post_pause(
        running, {"nodes": ["node1"], "for": "720h", "reason": "r" * MAX_PAUSE_REASON_CHARS}
    )
    assert status == 200 and reply["pause"]["nodes"] == ["node1"], reply
    body, _ = await lanes(running)
    assert body["pauseError"] is None and body["pause"]["nodes"] == ["node1"]
    assert len(body["pause"]["reason"]) == MAX_PAUSE_REASON_CHARS
