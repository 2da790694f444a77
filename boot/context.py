"""What a run of the sequence shares: vcactl, an ssh link per node, an HTTP session, the timeouts."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp

from boot.target import Target
from smemd.config import CardTimeouts, Config
from smemd.devices.sshlink import SshLink
from smemd.devices.vcactl import Vcactl
from smemd.devices.vcactl_output import BlockDevice

log = logging.getLogger("smemd.boot")
DEVICE = "vcablk0"  # the only block device a node can boot from (hardware.md §A.1)
# The timeouts are config (`[cards.timeouts]`), so that smemd and `python -m boot` agree.
Timeouts = CardTimeouts


class Context:
    """`async with Context(vcactl, state_dir=...) as ctx:` links and session are closed at the end."""

    def __init__(
        self, vcactl: Vcactl, *, state_dir: Path, timeouts: Timeouts | None = None,
        client_keys: list[str] | None = None, username: str = "root",
        sys_net: Path = Path("/sys/class/net"), sys_vca: Path = Path("/sys/class/vca"),
    ) -> None:  # fmt: skip
        self.vcactl = vcactl
        self.state_dir = Path(state_dir)
        self.timeouts = timeouts or Timeouts()
        self.client_keys = client_keys  # None: asyncssh's defaults (~/.ssh/id_*)
        self.username = username
        self.sys_net = sys_net  # where the host's netdevs are listed; a test may point elsewhere
        self.sys_vca = sys_vca  # the VCA driver's per-node state files
        self._links: dict[str, SshLink] = {}
        self._once: dict[str, asyncio.Task[None]] = {}
        self.nodes_seen: set[tuple[int, int]] = set()  # (card, cpu) that `vcactl status` listed
        self._stack = contextlib.AsyncExitStack()
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Context:
        await self._stack.__aenter__()
        self._session = await self._stack.enter_async_context(aiohttp.ClientSession())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for task in self._once.values():
            task.cancel()
        await asyncio.gather(*self._once.values(), return_exceptions=True)
        await self._stack.aclose()
        self._session = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("Context used outside `async with`")
        return self._session

    async def once(self, name: str, work: Callable[[], Awaitable[None]]) -> None:
        """Run `work` once per context however many nodes ask; each asker gets its outcome."""
        if name not in self._once:

            async def run() -> None:
                try:
                    await work()
                except BaseException:
                    # A failure is every current asker's outcome, not the context's for good:
                    # the next asker tries again (a long-lived manager keeps its context).
                    self._once.pop(name, None)
                    raise

            self._once[name] = asyncio.create_task(run(), name=f"boot once {name}")
        # Shielded: one node's step timing out must not cancel the work the others wait on.
        await asyncio.shield(self._once[name])

    async def link(self, target: Target) -> SshLink:
        """The node's ssh link, dialled on first use and kept until the context ends."""
        link = self._links.get(target.node)
        if link is None:
            t = self.timeouts
            link = SshLink(
                target.node, target.address, target.ssh_port, username=self.username,
                client_keys=self.client_keys,
                known_hosts=self.state_dir / "known_hosts", connect_timeout=t.ssh,
                backoff_initial=t.poll, backoff_cap=t.poll * 5,
            )  # fmt: skip
            link.suppress(True)  # booting and powering off, an unreachable node is expected
            self._links[target.node] = link
            await self._stack.enter_async_context(link)
        return link

    async def reachable(self, target: Target, within: float) -> bool:
        """Whether ssh to the node connects within `within` seconds."""
        link = await self.link(target)
        return await link.wait_reachable(within)

    async def state(self, target: Target) -> str:
        """The node's state as `vcactl status` shows it: from the driver's sysfs files when they
        are there (a file read instead of a process per look), else from `vcactl status`."""
        shown = await asyncio.to_thread(
            _sysfs_state, self.sys_vca / f"vca{target.card}{target.cpu}"
        )
        if shown is not None:
            return shown
        found = await self.vcactl.status(target.card, target.cpu)
        for status in found:
            if (status.card, status.cpu) == (target.card, target.cpu):
                return status.state
        return "absent"  # vcactl printed no line for it

    async def image_device(self, target: Target) -> BlockDevice | None:
        """The node's vcablk0 row of `blockio list`, None when it has none."""
        rows = await self.vcactl.blockio_list(target.card, target.cpu, DEVICE)
        return next((row for row in rows if (row.card, row.cpu) == (target.card, target.cpu)), None)

    async def healthy(self, target: Target, port: int) -> bool:
        """Whether the model server on `port` answers /health with 200 (503 while loading)."""
        url = f"http://{target.address}:{port}/health"
        try:
            timeout = aiohttp.ClientTimeout(total=self.timeouts.http)
            async with self.session.get(url, timeout=timeout) as response:
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False


def context_for(
    config: Config, targets: list[Target], *, state_dir: Path | None = None,
    timeouts: Timeouts | None = None,
) -> Context:  # fmt: skip
    """A context as `[cards]` configures it, for smemd and for `python -m boot` alike."""
    cards = config.cards
    timeouts = timeouts or cards.timeouts
    vcactl = Vcactl(
        cards.vcactl, timeout=timeouts.vcactl, cards=max((t.card for t in targets), default=0) + 1
    )
    return Context(
        vcactl, state_dir=state_dir or config.state_dir, timeouts=timeouts,
        client_keys=[cards.ssh_key] if cards.ssh_key else None, username=cards.ssh_user,
        sys_vca=Path(cards.sysfs),
    )  # fmt: skip


def _sysfs_state(node: Path) -> str | None:
    """vcactl's own rule (hardware.md §A.3): the state shows only while the PCIe link is up, or
    when it is power_off; otherwise the node is link_down. None: no such files here."""
    try:
        state = (node / "state").read_text().strip()
        link = (node / "link_state").read_text().strip()
    except OSError:
        return None
    return state if state == "power_off" or link == "up" else "link_down"
