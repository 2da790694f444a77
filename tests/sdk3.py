"""The official Python SDK 3.x (`supermemory==3.62.0`, the last to speak v3/v4), driven in a child
process: it cannot share a venv with SDK 5.0.1, so it is installed into a directory of its own
(`.ci/run` does it; by hand: `pip install --target tests/.sdk/supermemory3 supermemory==3.62.0`)
that only the child puts first on its path.

Without it the SDK 3 tests skip, unless SMEM_REQUIRE_SDKS=1 (CI sets it), where they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

SDK3_DIR = Path(os.environ.get("SMEM_SDK3_DIR") or Path(__file__).parent / ".sdk" / "supermemory3")
VERSION = "3.62.0"


def require_sdk3() -> None:
    if not (SDK3_DIR / f"supermemory-{VERSION}.dist-info").is_dir():
        reason = f"no supermemory {VERSION} in {SDK3_DIR}"
        if os.environ.get("SMEM_REQUIRE_SDKS") == "1":
            pytest.fail(f"{reason}, and SMEM_REQUIRE_SDKS=1")
        pytest.skip(reason)


def run_sdk3(
    base_url: str, script: str, api_key: str = "sdk3-test-key", timeout: float = 60
) -> Any:
    """Run `script` with `client` bound to an SDK 3 `Supermemory` for `base_url`; it sets `result`,
    which comes back decoded from JSON. An exception in the script fails the call with its trace."""
    require_sdk3()
    program = (
        "import json, supermemory\n"
        f"assert supermemory.__version__ == {VERSION!r}, supermemory.__version__\n"
        f"client = supermemory.Supermemory(api_key={api_key!r}, base_url={base_url!r}, max_retries=0)\n"
        "result = None\n" + textwrap.dedent(script) + "\nprint(json.dumps(result, default=str))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUPERMEMORY_")}
    env["PYTHONPATH"] = str(SDK3_DIR)
    done = subprocess.run(
        [sys.executable, "-s", "-c", program],
        env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
