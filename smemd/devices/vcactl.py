"""A client for Intel's `vcactl`: one subprocess per call, under a timeout, serialised per node."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import time
from collections.abc import Sequence

import msgspec

from smemd.devices.vcactl_output import (
    CPUS_PER_CARD,
    GLOBAL_FIELDS,
    BlockDevice,
    NodeFailure,
    NodeStatus,
    VcaConfig,
    node_failures,
    parse_blockio_list,
    parse_config_show,
    parse_messages,
    parse_node_lines,
    parse_status,
)
from smemd.errors import SmemError
from smemd.tallies import Tally, Timings

# Named as before the move out of smemd.cards: /v1/log-level and journal filters use the name.
log = logging.getLogger("smemd.cards")
Node = tuple[int, int]  # (card, cpu)
_CARD_NOT_FOUND = re.compile(r"^ERROR: Card \d+ not found!$", re.MULTILINE)


class VcactlError(SmemError):
    status = 503
    code = "vcactl_error"

    def __init__(
        self, argv: Sequence[str], problem: str, *, returncode: int | None = None,
        errors: Sequence[str] = (),
    ) -> None:  # fmt: skip
        super().__init__(f"vcactl {' '.join(argv[1:])}: {problem}", "\n".join(errors))
        self.argv = list(argv)
        self.returncode = returncode
        self.errors = list(errors)  # the ERROR: lines, prefix stripped


class NoCards(VcactlError):
    """Exit 22 with nothing printed (no card present), or "Card N not found!"."""

    code = "vca_no_cards"


class VcactlUsage(VcactlError):
    """Exit 22 with a message: a call vcactl could not parse, e.g. an image file that is not there."""

    status = 500
    code = "vcactl_usage"


class NodeStepFailed(VcactlError):
    """Exit 11: the step failed on some node(s): wrong state, active RW image, agent timeout..."""

    code = "vca_node_step_failed"

    def __init__(self, argv: Sequence[str], failures: Sequence[NodeFailure], errors: Sequence[str]):
        problem = "; ".join(f"{f.node}: {f.message}" for f in failures) or "failed (exit 11)"
        super().__init__(argv, problem, returncode=11, errors=errors)
        self.failures = list(failures)

    @property
    def nodes(self) -> list[str]:
        return [f.node for f in self.failures]


class ConfigUnreadable(VcactlError):
    """Exit 5: /etc/vca_config.d/vca_config.xml cannot be loaded (or we are not root/vcausers)."""

    code = "vca_config_unreadable"


class VcactlBusy(VcactlError):
    """Exit 16: vcactl's config mutex could not be created."""

    code = "vcactl_busy"


class BiosTooOld(VcactlError):
    """Exit 1: the node's BIOS does not support the command."""

    code = "vca_bios_too_old"


class VcactlTimeout(VcactlError):
    status = 504
    code = "vcactl_timeout"


class VcactlMissing(VcactlError):
    """The executable is not there, or not executable."""

    code = "vcactl_missing"


_BY_EXIT: dict[int, type[VcactlError]] = {5: ConfigUnreadable, 16: VcactlBusy, 1: BiosTooOld}


class Completed(msgspec.Struct, frozen=True):
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


class Vcactl:
    """One vcactl executable for `cards` cards; every call may pass its own `timeout`."""

    def __init__(self, path: str, *, timeout: float = 30.0, cards: int = 2) -> None:
        self.path = path
        self.timeout = timeout
        self.cards = cards
        # vcactl has a per-node boot lock and one config mutex: one call per node at a time.
        self._locks: dict[Node, asyncio.Lock] = {}
        # Each call's seconds by command, and the calls that failed by command and error code
        # (smemd.api.metrics writes them out).
        self.seconds = Timings()
        self.failures = Tally()

    async def status(
        self, card: int | None = None, cpu: int | None = None, *, timeout: float | None = None,  # noqa: ASYNC109
    ) -> list[NodeStatus]:  # fmt: skip
        done = await self.run("status", *_address(card, cpu), card=card, cpu=cpu, timeout=timeout)
        return parse_status(done.stdout)

    async def blockio_list(
        self, card: int | None = None, cpu: int | None = None, device: str | None = None, *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> list[BlockDevice]:  # fmt: skip
        args = ["blockio", "list", *_address(card, cpu), *([device] if device else [])]
        done = await self.run(*args, card=card, cpu=cpu, timeout=timeout)
        return parse_blockio_list(done.stdout)

    async def config_show(
        self, card: int | None = None, cpu: int | None = None, *, timeout: float | None = None,  # noqa: ASYNC109
    ) -> VcaConfig:  # fmt: skip
        args = ["config-show", *_address(card, cpu)]
        done = await self.run(*args, card=card, cpu=cpu, timeout=timeout)
        return parse_config_show(done.stdout)

    async def config_value(
        self, param: str, card: int | None = None, cpu: int | None = None, *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> str:  # fmt: skip
        """One setting: a global one, or a node's (which needs card and cpu)."""
        if param in GLOBAL_FIELDS:
            card = cpu = None  # printed bare once; vcactl rejects --value for a global
            args = ["config-show", param]
        elif card is None or cpu is None:
            raise ValueError(f"config_value({param!r}) is per node: give card and cpu")
        else:
            args = ["config-show", str(card), str(cpu), param, "--value"]
        done = await self.run(*args, card=card, cpu=cpu, timeout=timeout)
        return done.stdout.rstrip("\n")

    async def set_config(
        self, param: str, value: str, card: int | None = None, cpu: int | None = None,
        device: str | None = None, *, timeout: float | None = None,  # noqa: ASYNC109
    ) -> None:  # fmt: skip
        """`vcactl config [c [n]] [vcablkN] param value`, e.g. set_config("auto-boot", "0")."""
        args = ["config", *_address(card, cpu), *([device] if device else []), param, value]
        await self.run(*args, card=card, cpu=cpu, timeout=timeout)

    async def reset(
        self, card: int, cpu: int, *, force: bool = False,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> None:  # fmt: skip
        """Reset to bios_up; refused while an RW image is active unless `force`."""
        await self._step("reset", card, cpu, force=force, timeout=timeout)

    async def boot(
        self, card: int, cpu: int, image: str = "vcablk0", *, force: bool = False,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> None:  # fmt: skip
        """Start booting; needs bios_up, bios_ready or waiting_for_boot. Poll status() after."""
        await self._step("boot", card, cpu, image, force=force, timeout=timeout)

    async def blockio_open(
        self, card: int, cpu: int, path: str, *, mode: str = "RW", device: str = "vcablk0",
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> None:  # fmt: skip
        """Attach an image file (RO, RW), or `path` megabytes of RAM (mode "ramdisk")."""
        await self._step("blockio", card, cpu, device, mode, path, sub="open", timeout=timeout)

    async def blockio_close(
        self, card: int, cpu: int, device: str = "vcablk0", *, force: bool = False,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> None:  # fmt: skip
        """Detach; an RW image counts as active even after power_off, so that needs `force`."""
        await self._step("blockio", card, cpu, device, sub="close", force=force, timeout=timeout)

    async def os_shutdown(self, card: int, cpu: int, *, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Ask the node's agent to halt; prefer `systemctl poweroff` over ssh (hardware.md §A.6)."""
        await self._step("os-shutdown", card, cpu, timeout=timeout)

    async def pwrbtn_long(self, card: int, cpu: int, *, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Hold the power button 5 s: a hard power_off."""
        await self._step("pwrbtn-long", card, cpu, timeout=timeout)

    async def pwrbtn_short(self, card: int, cpu: int, *, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Press it: ACPI off when running; power on from power_off (vcactl waits 7 s first)."""
        await self._step("pwrbtn-short", card, cpu, timeout=timeout)

    async def _step(
        self, command: str, card: int, cpu: int, *params: str, sub: str | None = None,
        force: bool = False, timeout: float | None = None,  # noqa: ASYNC109
    ) -> None:  # fmt: skip
        args = [command, *([sub] if sub else []), str(card), str(cpu), *params]
        await self.run(*args, *(["--force"] if force else []), card=card, cpu=cpu, timeout=timeout)

    async def run(
        self, *args: str, card: int | None = None, cpu: int | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> Completed:  # fmt: skip
        """Any vcactl command; `card`/`cpu` name the nodes it addresses, whose locks it takes."""
        argv = [self.path, *args]
        async with contextlib.AsyncExitStack() as held:
            # Sorted, so that a call over many nodes never deadlocks with another. The timeout
            # is the process's: the wait for a lock is bounded by the holder's own timeout.
            for node in sorted(self._nodes(card, cpu)):
                await held.enter_async_context(self._lock(node))
            command = args[0] if args else ""
            try:
                with self.seconds.timing(command):
                    done = await self._execute(argv, self.timeout if timeout is None else timeout)
                self._check(done, self._nodes(card, cpu))
            except VcactlError as err:
                self.failures.add(command, err.code)
                raise
        return done

    def _lock(self, node: Node) -> asyncio.Lock:
        if node not in self._locks:
            self._locks[node] = asyncio.Lock()
        return self._locks[node]

    def _nodes(self, card: int | None, cpu: int | None) -> list[Node]:
        if card is None:
            return [(c, n) for c in range(self.cards) for n in range(CPUS_PER_CARD)]
        return [(card, n) for n in range(CPUS_PER_CARD)] if cpu is None else [(card, cpu)]

    async def _execute(self, argv: list[str], limit: float) -> Completed:
        started = time.monotonic()
        try:
            # Its own session, so that a kill takes whatever vcactl itself started.
            process = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True,
            )  # fmt: skip
        except OSError as err:
            raise VcactlMissing(argv, f"cannot run {self.path}: {err.strerror or err}") from err
        try:
            async with asyncio.timeout(limit):
                stdout, stderr = await process.communicate()
        except BaseException as exc:  # the timeout, or the caller cancelled
            _kill(process)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await asyncio.shield(process.wait())  # reaped even when cancelled
            if not isinstance(exc, TimeoutError):
                raise
            log.warning("vcactl %s: no exit within %g s, killed", " ".join(argv[1:]), limit)
            raise VcactlTimeout(argv, f"no exit within {limit:g} s; killed") from exc
        seconds = time.monotonic() - started
        rc = process.returncode if process.returncode is not None else -1
        log.debug("vcactl %s: exit %d in %.2f s", " ".join(argv[1:]), rc, seconds)
        text = stdout.decode(errors="replace"), stderr.decode(errors="replace")
        return Completed(argv, rc, *text, seconds)

    def _check(self, done: Completed, nodes: list[Node]) -> None:
        """Warnings are logged; a non-zero exit becomes the error it means."""
        errors, warnings = parse_messages(done.stderr)
        command = " ".join(done.argv[1:])
        for message in warnings:
            log.warning("vcactl %s: %s", command, message.line)
        lines = [m.line for m in errors]
        rc = done.returncode
        if rc == 0:
            for line in lines:  # e.g. `info BIOS` ignores how its step went
                log.warning("vcactl %s: exit 0 after ERROR: %s", command, line)
            return
        if rc == 22 and not done.stdout.strip() and not done.stderr.strip():
            raise NoCards(done.argv, "no VCA card present", returncode=rc)
        if rc == 22 and (missing := _CARD_NOT_FOUND.search(done.stderr)):
            raise NoCards(
                done.argv, missing[0].removeprefix("ERROR: "), returncode=rc, errors=lines
            )
        if rc == 22:
            raise VcactlUsage(
                done.argv, "; ".join(lines) or "usage error (exit 22)", returncode=rc, errors=lines
            )
        if rc == 11:
            failures = node_failures(errors, parse_node_lines(done.stdout), nodes)
            raise NodeStepFailed(done.argv, failures, lines)
        kind = _BY_EXIT.get(rc, VcactlError)
        raise kind(done.argv, "; ".join(lines) or f"exit {rc}", returncode=rc, errors=lines)


def _address(card: int | None, cpu: int | None) -> list[str]:
    """No card: every node; a card: its three; card and cpu: one node."""
    if card is None and cpu is not None:
        raise ValueError("a cpu needs its card")
    return [str(x) for x in (card, cpu) if x is not None]


def _kill(process: asyncio.subprocess.Process) -> None:
    """SIGKILL its process group: vcactl runs in a session of its own (start_new_session)."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
