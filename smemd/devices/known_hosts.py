"""The nodes' pinned host keys: one known_hosts file in smemd's state dir, trusted on first use.

The nodes are reachable only over the PCIe link, but their images get rebuilt: a key is
pinned the first time a node answers, required after that, and forgotten on request.
"""

from __future__ import annotations

from pathlib import Path

import asyncssh


def pattern(host: str, port: int) -> str:
    """How known_hosts names a host: bare on port 22, `[host]:port` otherwise."""
    return host if port == 22 else f"[{host}]:{port}"


class KnownHosts:
    def __init__(self, path: Path) -> None:
        self.path = path

    def pinned(self, host: str, port: int) -> asyncssh.SSHKnownHosts | None:
        """The known hosts to check the host against; None when none names a key for it yet."""
        try:
            known = asyncssh.import_known_hosts(self.path.read_text())
        except FileNotFoundError:
            return None
        keys, cas, _, certs, _, subjects, _ = known.match(host, host, port)
        return known if keys or cas or certs or subjects else None

    def remember(self, host: str, port: int, key: asyncssh.SSHKey) -> None:
        algorithm, data = key.export_public_key("openssh").decode().split()[:2]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a+") as file:
            file.seek(0)
            missing_newline = (text := file.read()) != "" and not text.endswith("\n")
            file.write(
                ("\n" if missing_newline else "") + f"{pattern(host, port)} {algorithm} {data}\n"
            )

    def forget(self, host: str, port: int) -> bool:
        """Remove the host's lines; whether there were any."""
        name = pattern(host, port)
        try:
            lines = self.path.read_text().splitlines(keepends=True)
        except FileNotFoundError:
            return False
        kept = [ln for ln in lines if name not in (ln.split(maxsplit=1) or [""])[0].split(",")]
        self.path.write_text("".join(kept))
        return len(kept) != len(lines)
