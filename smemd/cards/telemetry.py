"""Node telemetry: package temperature and memory sampled over ssh, the last hour kept per node."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import deque
from collections.abc import Sequence

import msgspec

from smemd.devices.sshlink import SshError, SshLink
from smemd.tasks import stop

log = logging.getLogger("smemd.cards.telemetry")

# POSIX sh (dash on the nodes). coretemp's package sensor is labelled "Package id 0" ("Physical id 0"
# on old kernels) and is always temp1; hwmonX numbering is unstable, so match on `name`; old kernels
# put the attributes on hwmonX/device. Prints `pkg_temp_mc -1` without coretemp, then /proc/meminfo
# in kB.
SAMPLE_COMMAND = (
    't=; for h in /sys/class/hwmon/hwmon* /sys/class/hwmon/hwmon*/device; do '
    '[ "$(cat "$h/name" 2>/dev/null)" = coretemp ] || continue; '
    'for l in "$h"/temp*_label; do case "$(cat "$l" 2>/dev/null)" in '
    '"Package id 0"|"Physical id 0") t=$(cat "${l%_label}_input");; esac; done; '
    '[ -n "$t" ] || t=$(cat "$h/temp1_input" 2>/dev/null); break; done; '
    'echo "pkg_temp_mc ${t:--1}"; '
    "awk '/^(MemTotal|MemFree|MemAvailable|SwapTotal|SwapFree):/{sub(\":\",\"\",$1);print $1,$2}' "
    "/proc/meminfo"
)  # fmt: skip

_LINE = re.compile(r"(\w+) (-?\d+)")
_NEEDED = ("pkg_temp_mc", "MemTotal", "MemAvailable")


class Sample(msgspec.Struct, frozen=True, kw_only=True):
    at: float  # wall clock, seconds since the epoch
    temperature_c: float | None  # package; None: no coretemp, or no sample at all
    mem_total_kb: int | None = None
    mem_available_kb: int | None = None
    error: str = ""  # set: the node could not be sampled (unreachable), which is no reading


def parse_sample(text: str, at: float | None = None) -> Sample:
    """Read SAMPLE_COMMAND's output; ValueError when it is not that."""
    values: dict[str, int] = {}
    for line in text.strip().splitlines():
        match = _LINE.fullmatch(line.strip())
        if match is None:
            raise ValueError(f"telemetry sample: not a `KEY NUMBER` line: {line[:80]!r}")
        values[match[1]] = int(match[2])
    missing = [key for key in _NEEDED if key not in values]
    if missing:
        raise ValueError(f"telemetry sample: no {', '.join(missing)} in {text[:80]!r}")
    millidegrees = values["pkg_temp_mc"]
    return Sample(
        at=time.time() if at is None else at,
        temperature_c=None if millidegrees == -1 else millidegrees / 1000,
        mem_total_kb=values["MemTotal"],
        mem_available_kb=values["MemAvailable"],
    )


class Telemetry:
    """Per node, the samples of the last `keep` seconds (and at most `max_samples`), oldest first."""

    def __init__(self, keep: float = 3600.0, max_samples: int = 480) -> None:
        self.keep = keep
        self.max_samples = max_samples  # 240 an hour at the 15 s interval; room for more
        self._samples: dict[str, deque[Sample]] = {}

    def record(self, node: str, sample: Sample) -> None:
        samples = self._samples.setdefault(node, deque(maxlen=self.max_samples))
        samples.append(sample)
        horizon = sample.at - self.keep
        while samples and samples[0].at < horizon:
            samples.popleft()

    def unreachable(self, node: str, reason: str, at: float | None = None) -> None:
        """Record a failed sample: no temperature and no memory, never a zero."""
        when = time.time() if at is None else at
        self.record(node, Sample(at=when, temperature_c=None, error=reason or "unreachable"))

    def latest(self, node: str) -> Sample | None:
        samples = self._samples.get(node)
        return samples[-1] if samples else None

    def since(self, node: str, t: float) -> list[Sample]:
        """The samples taken after `t`."""
        return [s for s in self._samples.get(node, ()) if s.at > t]

    def nodes(self) -> list[str]:
        return sorted(self._samples)


class Sampler:
    """`async with Sampler(links, telemetry):` samples every link each `interval` seconds."""

    def __init__(
        self, links: Sequence[SshLink], telemetry: Telemetry, *, interval: float = 15.0,
        timeout: float = 5.0,
    ) -> None:  # fmt: skip
        self.links = list(links)
        self.telemetry = telemetry
        self.interval = interval
        self.timeout = timeout  # per node and sample
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Sampler:
        self._task = asyncio.create_task(self._loop(), name="telemetry sampler")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._task is not None:
            await stop(self._task)
            self._task = None

    async def sample(self) -> None:
        """Sample every link once, in parallel."""
        await asyncio.gather(*(self._sample(link) for link in self.links))

    async def _sample(self, link: SshLink) -> None:
        try:
            done = await link.run(SAMPLE_COMMAND, timeout=self.timeout)
        except SshError as err:
            log.debug("node %s: no telemetry: %s", link.node, err)
            self.telemetry.unreachable(link.node, err.message)
            return
        try:
            sample = parse_sample(done.stdout)
        except ValueError as err:
            reason = f"{err} (exit {done.exit_status}: {done.stderr.strip()[:200]})"
            log.warning("node %s: %s", link.node, reason)
            self.telemetry.unreachable(link.node, reason)
            return
        self.telemetry.record(link.node, sample)

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            try:
                await self.sample()
            except Exception:  # a bug here must not end telemetry for good
                log.exception("telemetry sampling failed")
            await asyncio.sleep(max(0.0, self.interval - (loop.time() - started)))
