"""Online backup and restore (smemd.backup) through the real daemon, its socket and real files."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

import msgspec
import pytest

from smemd.backup.restoring import BackupRefused, check
from smemd.main import main as smemd_main
from smemd.protocol.backups import MANIFEST
from tests import postgres
from tests.conftest import StartDaemon, make_config
from tests.test_api import assert_error, call
from tests.test_memory_api import NS, add, search, settle


def short_socket() -> str:
    """A socket path short enough for sun_path, apart from the first daemon's."""
    return str(Path(tempfile.mkdtemp(prefix="smb-")) / "s.sock")


async def test_a_backup_taken_under_writes_restores_to_a_daemon_that_answers_the_same(
    start_daemon: StartDaemon, tmp_path: Path
) -> None:
    running = await start_daemon()
    await add(running, "Alex lives in Seattle.")
    await settle(running)
    writes_done: list[int] = []

    async def keep_writing() -> None:
        for i in range(30):
            status, _, _ = await call(
                running.unix, "POST", f"{NS}/document", json={"content": f"Note {i} on bridges."}
            )
            writes_done.append(status)

    writing = asyncio.create_task(keep_writing())
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/v1/backup", json={"to": str(tmp_path / "b1")}
    )
    await writing
    assert status == 200, body
    assert set(writes_done) == {200}  # writes went on meanwhile
    manifest = json.loads((tmp_path / "b1" / MANIFEST).read_text())
    assert manifest["format"] == "smem-backup" and manifest["version"] == 1
    assert manifest["namespaces"]["people"]["documents"] >= 1
    assert "smem.sqlite3" in manifest["files"] and "config.toml" in manifest["files"]
    assert not (tmp_path / "b1.partial").exists()
    # The same place again is refused: a backup is never written over.
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/v1/backup", json={"to": str(tmp_path / "b1")}
    )
    assert_error(status, body, 409)
    for bad in ("relative/dir", str(tmp_path / "no" / "such" / "dir"), "/a\u0000b"):
        status, body, _ = await call(
            running.unix, "POST", "http://smemd/v1/backup", json={"to": bad}
        )
        assert_error(status, body, 400)
    shapes: list[object] = [{"to": 5}, {}, {"to": "/x", "extra": 1}, []]
    for shape in shapes:
        status, body, _ = await call(running.unix, "POST", "http://smemd/v1/backup", json=shape)
        assert status in (400, 422), (shape, status, body)

    restored = tmp_path / "restored"
    assert smemd_main(["--state-dir", str(restored), "--restore", str(tmp_path / "b1")]) == 0
    again = await start_daemon(paths__state_dir=str(restored), paths__socket=short_socket())
    await settle(again)
    found = await search(again, "where does Alex live?")
    assert found and "Seattle" in msgspec.json.encode(found[0]).decode()


async def test_a_damaged_or_newer_backup_and_a_full_state_dir_are_refused(
    start_daemon: StartDaemon, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    running = await start_daemon()
    await add(running, "Sam lives in Lisbon.")
    await settle(running)
    backup = tmp_path / "b"
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/v1/backup", json={"to": str(backup)}
    )
    assert status == 200, body
    # Into a state dir that holds a store: refused unless --replace says so.
    occupied = tmp_path / "occupied"
    assert smemd_main(["--state-dir", str(occupied), "--restore", str(backup)]) == 0
    assert smemd_main(["--state-dir", str(occupied), "--restore", str(backup)]) == 2
    assert "holds a store already" in capsys.readouterr().err
    assert smemd_main(
        ["--state-dir", str(occupied), "--restore", str(backup), "--replace"]
    ) == 0  # fmt: skip
    # A newer format, then a flipped byte: refused, and the state dir is left as it was.
    manifest = json.loads((backup / MANIFEST).read_text())
    newer = tmp_path / "newer"
    newer.mkdir()
    for name in manifest["files"]:
        (newer / name).parent.mkdir(parents=True, exist_ok=True)
        (newer / name).write_bytes((backup / name).read_bytes())
    (newer / MANIFEST).write_text(json.dumps({**manifest, "version": 99}))
    empty = tmp_path / "empty"
    assert smemd_main(["--state-dir", str(empty), "--restore", str(newer)]) == 2
    assert "newer than this smemd reads" in capsys.readouterr().err
    database = backup / "smem.sqlite3"
    data = bytearray(database.read_bytes())
    data[len(data) // 2] ^= 0xFF
    database.write_bytes(bytes(data))
    assert smemd_main(["--state-dir", str(empty), "--restore", str(backup)]) == 2
    assert "is damaged" in capsys.readouterr().err
    assert not (empty / "smem.sqlite3").exists()
    assert smemd_main(["--state-dir", str(empty), "--restore", str(tmp_path / "nothing")]) == 2


async def test_a_backup_cut_off_by_a_kill_is_gone_after_the_restart(
    start_daemon: StartDaemon, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    partial = tmp_path / "cut.partial"
    partial.mkdir()
    (partial / "smem.sqlite3").write_bytes(b"half a database")
    (state / "backup.partial").write_text(str(partial))  # as a killed backup leaves it
    running = await start_daemon(paths__state_dir=str(state), paths__socket=short_socket())
    assert not partial.exists() and not (state / "backup.partial").exists()
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/v1/backup", json={"to": str(tmp_path / "cut")}
    )
    assert status == 200, body


async def test_a_postgresql_store_s_backup_is_its_namespaces_exports(
    start_daemon: StartDaemon, postgres_server: postgres.Server, tmp_path: Path,
    short_dir: Path,
) -> None:  # fmt: skip
    dsn = postgres_server.database()
    try:
        running = await start_daemon(store__kind="postgres", store__dsn=dsn)
        await add(running, "Alex lives in Seattle.")
        await settle(running)
        status, body, _ = await call(
            running.unix, "POST", "http://smemd/v1/backup", json={"to": str(tmp_path / "b")}
        )
        assert status == 200, body
        manifest = body["manifest"]
        assert manifest["store"] == "postgres"
        assert manifest["namespaces"]["people"]["memories"] >= 1
        assert set(manifest["files"]) == {"exports/people.jsonl.gz", "config.toml"}
        # The export goes into any store: here a SQLite daemon's.
        packed = (tmp_path / "b" / "exports" / "people.jsonl.gz").read_bytes()
        (short_dir / "s").mkdir()
        other = await start_daemon(make_config(short_dir / "s", store__kind="sqlite"))
        async with other.unix.post(
            "http://smemd/ns/people/import", data=packed,
            headers={"Content-Type": "application/x-ndjson"},
        ) as response:  # fmt: skip
            assert response.status == 200, await response.text()
        # It is not a database to restore: said so.
        with pytest.raises(BackupRefused, match="smemctl import"):
            check(tmp_path / "b")
    finally:
        postgres_server.drop(dsn)
