"""A node's overlay: the files to lay over its OS image, rendered from smemd's node config.

Paths are relative to the image root. Copy the tree onto the image as root, keeping modes
(`cp -a`, or `rsync -a --chown=root:root`): `root/.ssh` must stay 0700 and root-owned for sshd.
"""

from __future__ import annotations

import os
from pathlib import Path

import asyncssh
import msgspec

from nodeimages.units import LLAMA_SERVER, ROLES, env_text, unit_text
from smemd.config import NodeConfig

UNIT_DIR = "etc/systemd/system"
WANTS_DIR = f"{UNIT_DIR}/multi-user.target.wants"
AUTHORIZED_KEYS = "root/.ssh/authorized_keys"
DIR_MODES = {"root": 0o700, "root/.ssh": 0o700}  # the rest are 0755

SSHD_DROP_IN = """\
# smemd logs in as root with its key, and nothing logs in with a password. Debian's and Ubuntu's
# sshd_config include this directory first, and sshd keeps the first value it reads for a keyword.
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthenticationMethods publickey
PasswordAuthentication no
# The spelling every OpenSSH with sshd_config.d accepts (an alias of KbdInteractiveAuthentication).
ChallengeResponseAuthentication no
# smemd multiplexes its commands over one connection per node, capped below this.
MaxSessions 16
# A connection whose client vanished (host reboot, smemd killed) is closed after 3 x 15 s.
ClientAliveInterval 15
ClientAliveCountMax 3
"""

CORETEMP = """\
# smemd reads the CPU package temperature from coretemp's hwmon (temp1_input) over ssh.
coretemp
"""


class OverlayError(Exception):
    """Input the overlay cannot be made from, worded for the command line."""


class File(msgspec.Struct, frozen=True):
    text: str
    mode: int = 0o644


class Link(msgspec.Struct, frozen=True):
    target: str  # absolute on the node, as `systemctl enable` writes it


class Overlay(msgspec.Struct, frozen=True):
    """What one node's tree holds, and what this tool owns that must not be there."""

    node: str
    roles: tuple[str, ...]  # the model servers it runs: emb, rrk, llm
    entries: dict[str, File | Link]
    absent: tuple[str, ...]  # the units and env files of roles the node does not serve


def read_public_keys(path: Path) -> str:
    """The authorized_keys text from an OpenSSH public key file, each key checked."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise OverlayError(f"{path}: cannot read: {err}") from err
    lines = [line.strip() for line in text.splitlines()]
    keys = [line for line in lines if line and not line.startswith("#")]
    if not keys:
        raise OverlayError(f"{path}: no public key in it")
    for number, line in enumerate(keys, 1):
        try:
            asyncssh.import_public_key(line)
        except (asyncssh.KeyImportError, ValueError) as err:
            raise OverlayError(f"{path}: key {number} is not an OpenSSH public key: {err}") from err
    return "".join(f"{line}\n" for line in keys)


def render(
    node: NodeConfig, *, llama_server: str = LLAMA_SERVER, authorized_keys: str | None = None
) -> Overlay:
    """The overlay of `node`: a unit and env file per role it has a port for, sshd, coretemp."""
    entries: dict[str, File | Link] = {}
    absent: list[str] = []
    roles: list[str] = []
    for role in ROLES:
        port = getattr(node, role.port_field)
        paths = (f"{UNIT_DIR}/{role.unit_name}", role.env_path[1:], f"{WANTS_DIR}/{role.unit_name}")
        if port is None:
            absent.extend(paths)
            continue
        roles.append(role.name)
        entries[paths[0]] = File(unit_text(role, binary=llama_server))
        entries[paths[1]] = File(env_text(role, node=node.id, port=port))
        entries[paths[2]] = Link(f"/{UNIT_DIR}/{role.unit_name}")
    entries["etc/ssh/sshd_config.d/smem.conf"] = File(SSHD_DROP_IN)
    entries["etc/modules-load.d/coretemp.conf"] = File(CORETEMP)
    if authorized_keys is not None:  # without a key, the image's own keys stay as they are
        entries[AUTHORIZED_KEYS] = File(authorized_keys, mode=0o600)
    return Overlay(node=node.id, roles=tuple(roles), entries=entries, absent=tuple(absent))


def write(root: Path, overlay: Overlay) -> int:
    """Make `root` hold `overlay`; returns how many paths changed (0 on a repeat)."""
    changed = 0
    for relative, entry in sorted(overlay.entries.items()):
        path = root / relative
        _make_parents(root, relative)
        if isinstance(entry, Link):
            changed += _write_link(path, entry.target)
        else:
            changed += _write_file(path, entry)
    for relative in overlay.absent:
        path = root / relative
        if path.is_symlink() or path.exists():
            path.unlink()
            changed += 1
    return changed


def _make_parents(root: Path, relative: str) -> None:
    parts = Path(relative).parts[:-1]
    for depth in range(1, len(parts) + 1):
        name = "/".join(parts[:depth])
        directory = root / name
        mode = DIR_MODES.get(name, 0o755)
        directory.mkdir(mode=mode, parents=True, exist_ok=True)
        if name in DIR_MODES:  # mkdir leaves an existing directory's mode, and the umask applies
            directory.chmod(mode)


def _write_file(path: Path, entry: File) -> int:
    data = entry.text.encode()
    if not path.is_symlink() and path.is_file() and path.read_bytes() == data:
        if (path.stat().st_mode & 0o7777) == entry.mode:
            return 0
        path.chmod(entry.mode)
        return 1
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(data)
    temporary.chmod(entry.mode)
    os.replace(temporary, path)  # readers see the old file or the new one, never half of it
    return 1


def _write_link(path: Path, target: str) -> int:
    if path.is_symlink() and os.readlink(path) == target:
        return 0
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(target)
    os.replace(temporary, path)
    return 1
