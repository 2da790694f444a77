"""A fake VCA node: an asyncssh server that answers like the node image, and its three llama-servers."""

from __future__ import annotations

import asyncio
import inspect
import random
import shlex
from collections.abc import Callable, Coroutine
from typing import Any, Literal

import asyncssh

from tests.fakes.llama_server import FakeLlamaServer, Rules

Role = Literal["embed", "rerank", "llm"]
UNITS: dict[str, Role] = {"sm-emb": "embed", "sm-rrk": "rerank", "sm-llm": "llm"}
MEM_TOTAL_KB = 32_617_844  # two 16 GB SO-DIMMs, less what the firmware keeps
_MEM_USED_KB = {"os": 420_000, "embed": 900_000, "rerank": 1_300_000, "llm": 9_800_000}


class _Server(asyncssh.SSHServer):
    """sshd on the node image: no authentication, as the images are reachable only over PCIe."""

    def __init__(self, node: FakeNode) -> None:
        self._node = node
        self._conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._conn = conn
        self._node.connections.add(conn)
        self._node.connections_accepted += 1

    def connection_lost(self, exc: Exception | None) -> None:
        if self._conn is not None:
            self._node.connections.discard(self._conn)

    def begin_auth(self, username: str) -> bool:
        return False


class FakeNode:
    """`async with FakeNode("127.0.31.1") as node:` ssh on `node.ssh_port`; restartable on its ports.

    Ports given as 0 are picked at the first start and kept. The host key is made once and kept
    across restarts until new_host_key() (a rebuilt image), which takes effect at the next start.
    """

    def __init__(
        self, host: str = "127.0.31.1", *, ssh_port: int = 0, embed_port: int = 0,
        rerank_port: int = 0, llm_port: int = 0, chat: Rules = (),
        on_poweroff: Callable[[], object] | None = None, poweroff_delay: float = 0.05,
    ) -> None:  # fmt: skip
        self.host, self.ssh_port = host, ssh_port
        self.servers: dict[Role, FakeLlamaServer] = {
            "embed": FakeLlamaServer(host, embed_port, roles=("embed",), model="/models/emb.gguf"),
            "rerank": FakeLlamaServer(
                host, rerank_port, roles=("rerank",), model="/models/rerank.gguf"
            ),
            "llm": FakeLlamaServer(host, llm_port, roles=(), chat=chat, model="/models/llm.gguf"),
        }
        self.on_poweroff = on_poweroff  # may return an awaitable; it is awaited
        self.poweroff_delay = (
            poweroff_delay  # between answering `systemctl poweroff` and going down
        )
        self.no_coretemp = False  # a fault: the sample answers `pkg_temp_mc -1`
        self.commands: list[str] = []  # every exec request, in order
        self.connections: set[asyncssh.SSHServerConnection] = set()
        self.connections_accepted = 0
        self.units: dict[Role, str] = dict.fromkeys(self.servers, "inactive")
        self.temperature_mc = 45_000
        self._key = asyncssh.generate_private_key("ssh-ed25519")
        self._acceptor: asyncssh.SSHAcceptor | None = None
        self._hung = False
        self._released = asyncio.Event()  # set unless hung; also set by stop() to free the hung
        self._released.set()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def running(self) -> bool:
        return self._acceptor is not None

    @property
    def embed_port(self) -> int:
        return self.servers["embed"].port

    @property
    def rerank_port(self) -> int:
        return self.servers["rerank"].port

    @property
    def llm_port(self) -> int:
        return self.servers["llm"].port

    def url(self, role: Role) -> str:
        return self.servers[role].url

    def known_hosts_line(self) -> str:
        """This node's key as smemd's known_hosts would hold it."""
        key = self._key.export_public_key("openssh").decode().split()[:2]
        name = self.host if self.ssh_port == 22 else f"[{self.host}]:{self.ssh_port}"
        return f"{name} {' '.join(key)}\n"

    async def start(self) -> None:
        """Boot: the model servers and sshd come up (at once; the real ones load for a while)."""
        if self.running:
            return
        for role, server in self.servers.items():
            await server.start()
            self.units[role] = "active"
        if self._hung:
            self._released.clear()
        self._acceptor = await asyncssh.listen(
            self.host, self.ssh_port, server_host_keys=[self._key], reuse_address=True,
            server_factory=lambda: _Server(self), process_factory=self._handle,
        )  # fmt: skip
        self.ssh_port = self._acceptor.get_port()

    async def stop(self) -> None:
        """Power off: sshd and the model servers go away, open connections are cut."""
        if self._acceptor is not None:
            self._acceptor.close()
            await self._acceptor.wait_closed()
            self._acceptor = None
        self.drop_ssh()
        self._released.set()  # hung handlers end with their connections
        for role, server in self.servers.items():
            await server.stop()
            self.units[role] = "inactive"

    async def __aenter__(self) -> FakeNode:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.stop()

    def new_host_key(self) -> None:
        """A rebuilt image: a different host key from the next start on."""
        self._key = asyncssh.generate_private_key("ssh-ed25519")

    async def kill_model(self, role: Role) -> None:
        """The model server crashes: /health refuses until `systemctl restart` brings it back."""
        await self.servers[role].stop()
        self.units[role] = "failed"

    def hang_ssh(self, hung: bool) -> None:
        """While hung, exec requests are accepted and never answered."""
        self._hung = hung
        if hung:
            self._released.clear()
        else:
            self._released.set()

    def drop_ssh(self) -> None:
        """Abort every open ssh connection; the listener stays, so a client can reconnect."""
        for conn in list(self.connections):
            conn.abort()
        self.connections.clear()

    async def _handle(self, process: asyncssh.SSHServerProcess[str]) -> None:
        command = process.command or ""
        self.commands.append(command)
        await self._released.wait()
        if not self.running or process.is_closing():
            return  # the client gave up while it hung, or the node stopped
        out, err, status = await self._answer(command)
        process.stdout.write(out)
        process.stderr.write(err)
        process.exit(status)

    async def _answer(self, command: str) -> tuple[str, str, int]:
        if "/proc/meminfo" in command:
            return self._sample(), "", 0
        try:
            words = shlex.split(command)
        except ValueError:
            words = [command]
        if len(words) >= 2 and words[0] == "systemctl":
            return await self._systemctl(words[1], [w.removesuffix(".service") for w in words[2:]])
        name = words[0] if words else ""
        return "", f"sh: 1: {name}: not found\n", 127

    async def _systemctl(self, verb: str, units: list[str]) -> tuple[str, str, int]:
        if verb == "poweroff":
            self._spawn(self._power_off())
            return "", "", 0
        if verb == "is-active":  # prints a state per unit; exit 3 unless all are active
            states = [self.units[UNITS[u]] if u in UNITS else "inactive" for u in units]
            return "".join(s + "\n" for s in states), "", 0 if set(states) == {"active"} else 3
        if verb not in ("start", "stop", "restart"):
            return "", f"Unknown command verb {verb}.\n", 1
        for unit in units:
            if unit not in UNITS:
                return "", f"Failed to {verb} {unit}.service: Unit {unit}.service not found.\n", 5
        for unit in units:
            role = UNITS[unit]
            if verb != "start":
                await self.servers[role].stop()
                self.units[role] = "inactive"
            if verb != "stop":
                await self.servers[role].start()
                self.units[role] = "active"
        return "", "", 0

    def _sample(self) -> str:
        """hardware.md §C's output: a package temperature that wanders around 45 °C, and memory."""
        step = random.choice((-750, -500, -250, 250, 500, 750))  # never still
        self.temperature_mc += step + (45_000 - self.temperature_mc) // 8
        used = _MEM_USED_KB["os"] + sum(
            _MEM_USED_KB[role] for role, state in self.units.items() if state == "active"
        )
        available = MEM_TOTAL_KB - used - random.randint(0, 40_000)
        lines = {
            "pkg_temp_mc": -1 if self.no_coretemp else self.temperature_mc,
            "MemTotal": MEM_TOTAL_KB,
            "MemFree": available - 2_500_000,  # the rest of "available" is page cache
            "MemAvailable": available,
            "SwapTotal": 0,
            "SwapFree": 0,
        }
        return "".join(f"{key} {value}\n" for key, value in lines.items())

    async def _power_off(self) -> None:
        if self.on_poweroff is not None:
            result = self.on_poweroff()
            if inspect.isawaitable(result):
                await result
        await asyncio.sleep(self.poweroff_delay)  # the reply gets out before sshd goes
        await self.stop()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
