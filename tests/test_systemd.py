"""The host units pass systemd's checks; sysusers and tmpfiles build the layout they promise."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

UNITS = Path(__file__).resolve().parent.parent / "systemd"


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:  # .ci/run installs Debian's systemd package, so CI always has these
        pytest.skip(f"{tool} is not installed")
    return path


def test_service_verifies(tmp_path: Path) -> None:
    tool = need("systemd-analyze")
    unit = tmp_path / "smemd.service"
    shutil.copy(UNITS / "smemd.service", unit)
    result = subprocess.run([tool, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "smemd.service" not in result.stderr, result.stderr  # no warnings about our unit either


def test_service_keeps_the_promised_settings() -> None:
    text = (UNITS / "smemd.service").read_text()
    for line in [
        "Type=notify", "WatchdogSec=60", "RuntimeDirectory=smem", "StateDirectory=smem",
        "Group=smem", "KillMode=mixed",
    ]:  # fmt: skip
        assert f"\n{line}\n" in text, line
    # Each of these would break vcactl or the VCA stack.
    for forbidden in [
        "PrivateDevices=yes",
        "ProtectKernelTunables=yes",
        "DynamicUser=",
        "PrivateNetwork=",
    ]:
        assert forbidden not in text


def test_sysusers_and_tmpfiles_build_the_layout(tmp_path: Path) -> None:
    sysusers, tmpfiles = need("systemd-sysusers"), need("systemd-tmpfiles")
    (tmp_path / "etc").mkdir()
    for kind, name in (("sysusers.d", "smem.sysusers.conf"), ("tmpfiles.d", "smem.tmpfiles.conf")):
        target = tmp_path / "usr" / "lib" / kind
        target.mkdir(parents=True)
        shutil.copy(UNITS / name, target / "smem.conf")
    subprocess.run([sysusers, f"--root={tmp_path}"], check=True, capture_output=True, timeout=60)
    groups = dict(
        line.split(":")[:3:2] for line in (tmp_path / "etc" / "group").read_text().splitlines()
    )
    gid = int(groups["smem"])
    subprocess.run(
        [tmpfiles, f"--root={tmp_path}", "--create"], check=True, capture_output=True, timeout=60
    )
    for path, mode in (("run/smem", 0o2770), ("etc/smem", 0o750), ("var/lib/smem", 0o750)):
        info = (tmp_path / path).stat()
        assert (stat.S_IMODE(info.st_mode), info.st_gid) == (mode, gid), path


def test_service_keeps_the_card_role() -> None:
    lines = (UNITS / "smemd.service").read_text().splitlines()
    unit = {key: value for key, _, value in (line.partition("=") for line in lines) if value}
    # Stop order is the reverse of start order: smemd powers the nodes off and closes their images
    # before vcactld goes down and before the image directory is unmounted.
    assert "vcactl.service" in unit["Wants"].split()
    assert "vcactl.service" in unit["After"].split()
    assert unit["RequiresMountsFor"] == "/var/lib/vca"
    # One node's worst-case poweroff (ssh 10 + 90 + pwrbtn-long 15 s) plus six closes of <= 10 s.
    assert int(unit["TimeoutStopSec"]) >= 10 + 90 + 15 + 6 * 10
