"""`python -m nodeimages write-overlay` renders each node's tree from a real smemd config file."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
from pathlib import Path

import asyncssh
import pytest

from nodeimages.__main__ import main
from nodeimages.units import NODE_CORES, NODE_RAM_GIB, OS_HEADROOM_GIB, ROLES
from tests.llama_tools import llama_server_binary

CONFIG = """\
[fleet]
kind = "vca2"

[[fleet.nodes]]
id = "node0"
embed = 8080
rerank = 8081
llm = 8082
card = 0
cpu = 0

[[fleet.nodes]]
id = "node4"
embed = 9080
llm = 9082
card = 1
cpu = 1
"""
UNITS = "etc/systemd/system"
PORTS = {"node0": {"emb": 8080, "rrk": 8081, "llm": 8082}, "node4": {"emb": 9080, "llm": 9082}}
ROLE_FLAGS = {
    "emb": ["--embeddings", "--pooling", "mean"],
    "rrk": ["--reranking"],
    "llm": ["--jinja"],
}
TRUE = shutil.which("true") or "/bin/true"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A config file, smemd's public key and the overlay directory."""
    config = tmp_path / "smemd.toml"
    config.write_text(CONFIG)
    key = tmp_path / "id_ed25519.pub"
    key.write_bytes(asyncssh.generate_private_key("ssh-ed25519").export_public_key())
    return config, key, tmp_path / "overlay"


@pytest.fixture
def overlay(setup: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> Path:
    config, key, out = setup
    args = ["write-overlay", str(out), "--config", str(config), "--ssh-public-key", str(key)]
    code, stdout, stderr = run(capsys, *args, "--llama-server", TRUE)
    assert (code, stderr) == (0, "")
    assert "node0:" in stdout and "node4:" in stdout
    return out


def env_of(path: Path) -> dict[str, str]:
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def exec_argv(node_dir: Path, role: str) -> list[str]:
    """ExecStart as systemd expands it: ${X} stays one word, $X splits at whitespace."""
    unit = (node_dir / UNITS / f"sm-{role}.service").read_text()
    env_file = re.search(r"^EnvironmentFile=/(.*)$", unit, re.M)
    exec_start = re.search(r"^ExecStart=(.*)$", unit, re.M)
    assert env_file and exec_start
    env = env_of(node_dir / env_file.group(1))
    argv: list[str] = []
    for word in exec_start.group(1).split():
        if braced := re.fullmatch(r"\$\{(\w+)\}", word):
            assert braced.group(1) in env, f"{role}: {word} is not in its env file"
            argv.append(env[braced.group(1)])
        elif bare := re.fullmatch(r"\$(\w+)", word):
            assert bare.group(1) in env, f"{role}: {word} is not in its env file"
            argv += shlex.split(env[bare.group(1)])
        else:
            assert "$" not in word, word
            argv.append(word)
    return argv


def test_each_node_gets_a_unit_per_role_it_has_a_port_for(overlay: Path) -> None:
    for node, ports in PORTS.items():
        units = sorted(p.name for p in (overlay / node / UNITS).glob("sm-*.service"))
        assert units == sorted(f"sm-{role}.service" for role in ports), node
        envs = sorted(p.name for p in (overlay / node / "etc/smem").iterdir())
        assert envs == sorted(f"sm-{role}.env" for role in ports), node
        enabled = overlay / node / UNITS / "multi-user.target.wants"
        assert {p.name: os.readlink(p) for p in enabled.iterdir()} == {
            f"sm-{role}.service": f"/etc/systemd/system/sm-{role}.service" for role in ports
        }
        for role, port in ports.items():
            argv = exec_argv(overlay / node, role)
            assert argv[0] == TRUE
            assert argv[argv.index("--port") + 1] == str(port)
            assert argv[argv.index("--host") + 1] == "0.0.0.0"
            flags = ROLE_FLAGS[role]
            assert any(argv[i : i + len(flags)] == flags for i in range(len(argv))), (role, argv)
            others = {"--embeddings", "--reranking"} - set(flags)
            assert not others & set(argv), (role, argv)


def test_units_verify_with_systemd(overlay: Path) -> None:
    tool = shutil.which("systemd-analyze")
    if tool is None:  # .ci/run installs Debian's systemd package, so CI always has it
        pytest.skip("systemd-analyze is not installed")
    units = sorted(overlay.glob(f"*/{UNITS}/sm-*.service"))
    assert len(units) == 5
    result = subprocess.run(
        [tool, "verify", *map(str, units)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "sm-" not in result.stderr, result.stderr  # not even a warning about an unknown key


def test_units_keep_restart_memory_and_user_promises(overlay: Path) -> None:
    for unit in overlay.glob(f"*/{UNITS}/sm-*.service"):
        lines = set(unit.read_text().splitlines())
        role = unit.stem.removeprefix("sm-")
        assert {
            "Restart=always",
            "DynamicUser=yes",
            "After=network-online.target",
            "WantedBy=multi-user.target",
            f"EnvironmentFile=/etc/smem/sm-{role}.env",
        } <= lines, unit


def test_threads_and_memory_fit_the_node(overlay: Path) -> None:
    threads = sum(int(env_of(p)["THREADS"]) for p in (overlay / "node0/etc/smem").iterdir())
    assert threads == sum(role.threads for role in ROLES) <= NODE_CORES
    for node in PORTS:
        argvs = [exec_argv(overlay / node, role) for role in PORTS[node]]
        used = sum(int(a[a.index("-t") + 1]) for a in argvs)
        assert used <= NODE_CORES and all(
            a[a.index("-tb") + 1] == a[a.index("-t") + 1] for a in argvs
        )
    units = (overlay / "node0" / UNITS).glob("sm-*.service")
    caps = [int(m) for u in units for m in re.findall(r"^MemoryMax=(\d+)G$", u.read_text(), re.M)]
    assert len(caps) == 3 and sum(caps) + OS_HEADROOM_GIB <= NODE_RAM_GIB


def test_ssh_and_coretemp(overlay: Path, setup: tuple[Path, Path, Path]) -> None:
    for node in PORTS:
        root = overlay / node
        sshd = root.joinpath("etc/ssh/sshd_config.d/smem.conf").read_text().splitlines()
        settings = dict(line.split(" ", 1) for line in sshd if line and not line.startswith("#"))
        assert settings["PermitRootLogin"] == "prohibit-password"
        assert settings["PasswordAuthentication"] == "no"
        assert int(settings["MaxSessions"]) >= 10 and int(settings["ClientAliveInterval"]) > 0
        modules = root.joinpath("etc/modules-load.d/coretemp.conf").read_text().splitlines()
        assert "coretemp" in modules
        keys = root / "root/.ssh/authorized_keys"
        assert keys.read_text() == setup[1].read_text()
        for path, mode in ((keys, 0o600), (keys.parent, 0o700), (keys.parent.parent, 0o700)):
            assert stat.S_IMODE(path.stat().st_mode) == mode, path


def snapshot(root: Path) -> dict[str, tuple[int, int, str | bytes]]:
    found: dict[str, tuple[int, int, str | bytes]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        content = (
            os.readlink(path) if path.is_symlink() else b"" if path.is_dir() else path.read_bytes()
        )
        found[str(path.relative_to(root))] = (info.st_mode, info.st_mtime_ns, content)
    return found


def test_rendering_twice_changes_nothing(
    overlay: Path, setup: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, key, _ = setup
    before = snapshot(overlay)
    code, out, _ = run(
        capsys, "write-overlay", str(overlay), "--config", str(config), "--ssh-public-key", str(key),
        "--llama-server", TRUE,
    )  # fmt: skip
    assert code == 0 and out.count("; 0 paths changed") == 2, out
    assert snapshot(overlay) == before


def test_a_role_dropped_from_the_config_leaves_the_overlay(
    overlay: Path, setup: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config = setup[0]
    config.write_text(CONFIG.replace("rerank = 8081\n", ""))
    code, out, _ = run(
        capsys, "write-overlay", str(overlay), "--config", str(config), "--node", "node0"
    )
    assert code == 0 and "node4" not in out
    assert not list(overlay.glob("node0/**/sm-rrk*"))
    assert (overlay / "node0/etc/smem/sm-emb.env").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("rerank = 8081", "rerank = 70000"), "$.fleet.nodes[0].rerank"),
        (('id = "node4"', 'id = "vca4"'), "$.fleet.nodes[1].id"),
        (("llm = 9082", "llm = 9082\nmodel = 'x'"), "$.fleet.nodes[1]"),
    ],
)
def test_bad_config_exits_2_with_the_field(
    setup: tuple[Path, Path, Path],
    capsys: pytest.CaptureFixture[str],
    change: tuple[str, str],
    message: str,
) -> None:
    config, _, out = setup
    config.write_text(CONFIG.replace(*change))
    code, stdout, stderr = run(capsys, "write-overlay", str(out), "--config", str(config))
    assert code == 2 and stdout == ""
    assert stderr.startswith("nodeimages: bad config: ") and message in stderr, stderr
    assert not out.exists()


def test_bad_arguments_exit_2(
    setup: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, key, out = setup
    code, _, err = run(
        capsys, "write-overlay", str(out), "--config", str(config), "--node", "node9"
    )
    assert code == 2 and "--node: no node 'node9'" in err
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n")
    code, _, err = run(
        capsys, "write-overlay", str(out), "--config", str(config), "--ssh-public-key", str(key)
    )
    assert code == 2 and "not an OpenSSH public key" in err
    code, _, err = run(
        capsys, "write-overlay", str(out), "--config", str(config), "--llama-server", "llama-server"
    )
    assert code == 2 and "absolute path" in err
    assert not out.exists()


@pytest.mark.llama
def test_every_flag_is_one_llama_server_has(overlay: Path) -> None:
    help_text = subprocess.run(
        [str(llama_server_binary()), "--help"], capture_output=True, text=True, timeout=30
    ).stdout
    known = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", help_text))
    for role in PORTS["node0"]:
        flags = {word for word in exec_argv(overlay / "node0", role) if word.startswith("-")}
        assert flags <= known, (role, flags - known)
