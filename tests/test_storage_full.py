"""A full disk under the store: writes answer 507 having written nothing, the ingest worker waits
it out and resumes by itself, and SIGTERM still stops the daemon. On a real (tmpfs) file system
of a few MiB that the test mounts; without the right to mount, it is skipped."""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from smemctl.client import Client, UnixConnection
from tests.daemon_process import DaemonProcess
from tests.pace import scaled

SIZE_MB = 24


@pytest.fixture
def small_disk() -> Iterator[Path]:
    where = Path(tempfile.mkdtemp(prefix="smem-disk-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m,mode=0700", "tmpfs", str(where)],
        capture_output=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        shutil.rmtree(where, ignore_errors=True)
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        shutil.rmtree(where, ignore_errors=True)


def fill(disk: Path, leave: int = 0) -> Path:
    """Take every free byte of the file system but `leave`; the file to delete to give them back."""
    filler, spare = disk / "filler", disk / "spare"
    spare.write_bytes(b"\0" * leave)
    with filler.open("wb", buffering=0) as f:
        for block in (65536, 4096, 512, 1):  # down to the last partial block
            with contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * block)
    spare.unlink()
    return filler


def call(client: Client, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    conn = UnixConnection(client.socket_path, client.timeout)
    try:
        payload = msgspec.json.encode(body) if body is not None else None
        conn.request(method, path, body=payload, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, msgspec.json.decode(response.read())
    finally:
        conn.close()


def jobs(client: Client) -> dict[str, int]:
    counts: dict[str, int] = msgspec.json.decode(client.call("GET", "/v1/jobs"))["counts"]
    return counts


def on_small_disk(disk: Path, logs: Path) -> DaemonProcess:
    """The daemon with its state on `disk`, its log beside the test (a full disk eats logs)."""
    (disk / "state").mkdir()
    daemon = DaemonProcess(disk / "state")
    daemon.log_file = logs / "smemd.log"
    return daemon.start(["--log-level", "info"], env={"SMEM_DREAMING": "0"})


def test_a_full_disk_answers_507_loses_nothing_and_the_worker_resumes(
    small_disk: Path, tmp_path: Path
) -> None:
    daemon = on_small_disk(small_disk, tmp_path)
    client = Client(daemon.socket, timeout=30)
    try:
        status, _ = call(
            client, "POST", "/ns/d/document", {"content": "Alex keeps bees.", "id": "first"}
        )
        assert status == 200
        deadline = time.monotonic() + scaled(30)
        while jobs(client) != {"done": 1}:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        filler = fill(small_disk, leave=512 * 1024)  # room for the first few, not for the work

        acknowledged: list[str] = []
        refused: list[str] = []
        statuses: list[int] = []
        for i in range(40):  # long documents: they need room the disk no longer has
            status, body = call(
                client, "POST", "/ns/d/document",
                {"content": f"Note {i}: " + "the hive was calm today. " * 400, "id": f"n{i}"},
            )  # fmt: skip
            statuses.append(status)
            (acknowledged if status == 200 else refused).append(f"n{i}")
            if status != 200:
                assert status == 507, body
                assert body["error"] == "storage full" and "nothing was written" in body["details"]
        assert acknowledged and refused, statuses
        time.sleep(1)  # the worker meets the full disk with acknowledged jobs still open
        assert set(jobs(client)) - {"done"}, jobs(client)
        status, body = call(
            client, "POST", "/ns/d/document/batch",
            {"documents": [{"content": "x " * 4000, "id": f"b{i}"} for i in range(20)]},
        )  # fmt: skip
        assert status in (200, 507), body
        if status == 200:  # some were stored before the disk ran out: those first, in order
            acknowledged += [f"b{i}" for i in range(body["count"])]
            refused += [r["id"] for r in body["results"] if r["status"] == "error"]
            assert all(
                r["error"] == "storage full" for r in body["results"] if r["status"] == "error"
            )
        for method, path, payload in (
            ("PATCH", "/ns/d/document/first", {"content": "Alex keeps wasps. " * 300}),
            ("DELETE", "/ns/d/document", {"ids": ["first"]}),
        ):
            status, body = call(client, method, path, payload)
            assert status in (200, 507), (method, status, body)

        filler.unlink()  # the space comes back: the worker resumes with no restart
        deadline = time.monotonic() + scaled(30)
        while set(jobs(client)) - {"done"}:
            assert time.monotonic() < deadline, jobs(client)
            time.sleep(0.1)
        status, listed = call(client, "POST", "/ns/d/list/documents?limit=100")
        stored = {d["customId"] for d in listed["documents"]}
        assert set(acknowledged) <= stored  # nothing acknowledged was lost
        assert not set(refused) & stored  # nothing refused was half-written
        status, _ = call(
            client, "POST", "/ns/d/document", {"content": "After the space came back."}
        )
        assert status == 200
        assert "Traceback" not in daemon.log() and "unhandled error" not in daemon.log()
    finally:
        daemon.kill()


@pytest.mark.parametrize("space", ["still full", "freed"])
def test_sigterm_stops_a_daemon_whose_disk_filled_under_the_worker(
    small_disk: Path, tmp_path: Path, space: str
) -> None:
    daemon = on_small_disk(small_disk, tmp_path)
    try:
        client = Client(daemon.socket, timeout=30)
        filler = fill(small_disk, leave=512 * 1024)
        for i in range(30):
            call(client, "POST", "/ns/d/document", {"content": f"Fact {i}. " * 400})
        time.sleep(1)  # the worker has met the full disk
        if space == "freed":
            filler.unlink()
        started = time.monotonic()
        assert daemon.stop(signal.SIGTERM, timeout=30) == 0
        assert time.monotonic() - started < scaled(15)
    finally:
        daemon.kill()
    assert "Traceback" not in daemon.log(), daemon.log()[-3000:]


def test_a_backup_or_an_export_onto_a_full_disk_says_so_and_the_daemon_goes_on(
    small_disk: Path, short_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from smemctl.cli import main

    daemon = DaemonProcess(short_dir).start(env={"SMEM_DREAMING": "0"})
    try:
        client = Client(daemon.socket, timeout=60)
        batch = [{"content": f"Note {i}: " + "the hive was calm today. " * 40} for i in range(60)]
        status, _ = call(client, "POST", "/ns/d/document/batch", {"documents": batch})
        assert status == 200
        deadline = time.monotonic() + scaled(60)
        while jobs(client) != {"done": 60}:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        fill(small_disk, leave=4 * 1024)  # less than the store or its export takes
        status, body = call(client, "POST", "/v1/backup", {"to": str(small_disk / "b")})
        assert status == 507, body
        assert body["error"] == "no space for the backup", body
        assert not list(small_disk.glob("b*")), list(small_disk.iterdir())
        for name in ("e.jsonl", "e.jsonl.gz"):
            target = small_disk / name
            code = main(["--socket", str(daemon.socket), "export", "-n", "d", str(target)])
            err = capsys.readouterr().err
            assert code == 1 and "No space left on device" in err, err
            assert "Traceback" not in err
            assert not target.exists() and not target.with_name(name + ".partial").exists()
        # The daemon is none the worse: it reads, writes, and backs up where there is room.
        status, body = call(client, "POST", "/ns/d/search", {"query": "hive"})
        assert status == 200 and body["results"], body
        status, _ = call(client, "POST", "/ns/d/document", {"content": "After the full disk."})
        assert status == 200
        status, body = call(client, "POST", "/v1/backup", {"to": str(short_dir / "room")})
        assert status == 200, body
        assert "Traceback" not in daemon.log()
    finally:
        daemon.kill()
