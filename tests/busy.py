"""The test suite on a busy machine: `python3 -m tests.busy [--hogs N] [pytest arguments]`
starts N processes (2 by default) that each keep a core busy, as other jobs on the host would,
runs `python3 -m pytest` with the arguments, stops them however pytest ends, and prints the
run's wall time and the pace the suite measured (tests/pace.py). Its exit status is pytest's."""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import time


def _spin() -> None:
    total = 0
    while True:  # CPU-bound, as a render or a compile is: nothing to wait on
        total = (total * 31 + 7) % 1_000_003


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tests.busy", description=__doc__)
    parser.add_argument("--hogs", type=int, default=2, help="busy processes beside the suite")
    args, pytest_args = parser.parse_known_args(argv)
    hogs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.hogs)]
    for hog in hogs:
        hog.start()
    started = time.monotonic()
    try:
        code = subprocess.call([sys.executable, "-m", "pytest", *pytest_args])
    finally:
        for hog in hogs:
            hog.terminate()
        for hog in hogs:
            hog.join()
    minutes, seconds = divmod(time.monotonic() - started, 60)
    print(f"busy run: {args.hogs} hogs, pytest exit {code}, {int(minutes)} min {seconds:.0f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
