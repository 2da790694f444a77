"""The two listening sockets: the Unix control socket and the TCP API port.

Both are bound here, before aiohttp sees them, so the Unix socket has its mode and group before
it accepts anyone, and the TCP port's real number is known when port 0 was asked for.
"""

from __future__ import annotations

import contextlib
import grp
import os
import socket
import stat
from pathlib import Path

from smemd import log

SOCKET_MODE = 0o660
DIR_MODE = 0o750


class ListenerError(Exception):
    pass


def bind_unix(path: Path, group: str) -> socket.socket:
    """Bind the control socket, replacing a stale one left by a crash but never a live one."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    gid = _group_id(group) if group else -1
    _remove_if_stale(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.bind(os.fspath(path))
        # Nobody can connect before listen(), so setting the mode here leaves no window.
        os.chmod(path, SOCKET_MODE)
        if gid != -1:
            os.chown(path, -1, gid)
    except OSError as err:
        sock.close()
        raise ListenerError(f"cannot listen on {path}: {err.strerror or err}") from err
    return sock


def remove_unix(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def bind_tcp(host: str, port: int) -> socket.socket:
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        return socket.create_server(address[:2], family=family)
    except OSError as err:
        raise ListenerError(f"cannot listen on {host}:{port}: {err.strerror or err}") from err


def tcp_address(sock: socket.socket) -> str:
    """The bound address as HOST:PORT, IPv6 hosts in brackets."""
    host, port = sock.getsockname()[:2]
    return f"[{host}]:{port}" if sock.family == socket.AF_INET6 else f"{host}:{port}"


def _group_id(group: str) -> int:
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        raise ListenerError(f"socket group {group!r} does not exist") from None


def _remove_if_stale(path: Path) -> None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ListenerError(f"{path} exists and is not a socket; refusing to replace it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(os.fspath(path))
    except ConnectionRefusedError:
        log.daemon.info("replacing stale socket %s", path)
        os.unlink(path)
        return
    except TimeoutError:
        raise ListenerError(f"{path} is in use (a listener with a full backlog)") from None
    except OSError as err:
        raise ListenerError(f"cannot check {path}: {err.strerror or err}") from err
    finally:
        probe.close()
    raise ListenerError(f"{path} is in use by a running process; not taking it over")
