"""What vcactl prints, parsed: status lines, the blockio table, config-show, per-node messages."""

from __future__ import annotations

import re

import msgspec

CPUS_PER_CARD = 3
# The [global] section of vca_config.xml; every other config-show key is per node.
GLOBAL_FIELDS = frozenset({
    "auto-boot", "debug-enabled", "link-up-timeout-ms", "handshake-irq-timeout-ms",
    "alloc-timeout-ms", "cmd-timeout-ms", "mac-write-timeout-ms", "default-daemon-script",
    "wait-cmd-timeout-s", "wait-bios-cmd-timeout-s", "wait-bios-cmd-flashing-s",
    "ICMP-ping-inverval-s", "ICMP-response-timeout-s", "va-min-free-memory-enabled",
})  # fmt: skip

# Real logs also show "Cpu: 0  STATE" with two spaces (VCAC-A 2.7), hence \s+.
_STATUS = re.compile(r"Card:\s*(\d+)\s+Cpu:\s*(\d+)\s+STATE:\s*([a-z_]+)(.*)")
_NODE_PREFIX = re.compile(r"^Card:\s*(\d+)\s+Cpu:\s*(\d+)\s+-\s?(.*)$", re.DOTALL)
_CONFIG_NODE = re.compile(r"^card (\d+) cpu (\d+):\s*$")
_FIELD = re.compile(r"^( *)([^:\s][^:]*):(?: (.*))?$")
_BLOCK_DEV = re.compile(r"^vcablk\d+$")
# What a failed step means, from its message (first match wins).
_KINDS = [
    ("already_up", re.compile(r"OS ALREADY UP")),
    ("wrong_state", re.compile(r"needs to be in|impossible to use")),
    ("blockio_active", re.compile(r"active blockio device|disconnect active block device")),
    ("blockio_exists", re.compile(r"Block device vcablk\d+ already exist")),
    ("file_in_use", re.compile(r"already opened in other block device")),
    ("agent_timeout", re.compile(r"LBP_IRQ_TIMEOUT")),
    ("agent_missing", re.compile(r"LBP_INTERNAL_ERROR")),
    ("wait_timeout", re.compile(r"TIMEOUT!")),
    ("error_state", re.compile(r"error state detected")),
    ("boot_busy", re.compile(r"Boot command already running")),
]


def node_id(card: int, cpu: int) -> str:
    """smemd's name for a node: node0..node5 for two cards."""
    return f"node{card * CPUS_PER_CARD + cpu}"


class NodeStatus(msgspec.Struct, frozen=True):
    card: int
    cpu: int
    state: str
    flags: list[str] = []  # dma_hang, gold_bios, pwr_btn_press, pwr_btn_unknown

    @property
    def node(self) -> str:
        return node_id(self.card, self.cpu)


class BlockDevice(msgspec.Struct, frozen=True):
    """A `blockio list` row; vcactl's "-" (nothing configured) reads as None."""

    card: int
    cpu: int
    name: str  # vcablk0..vcablk7
    state: str  # active | inactive | enabled | disabled
    mode: str | None  # RW | RO | ramdisk
    size_mb: int | None  # 0 while only enabled: the config's ramdisk-size-mb
    path: str | None

    @property
    def node(self) -> str:
        return node_id(self.card, self.cpu)


class NodeConfig(msgspec.Struct):
    card: int
    cpu: int
    fields: dict[str, str] = {}  # ip, node-name, os-image, last-os-image, ...
    block_devs: dict[str, dict[str, str]] = {}  # vcablk0 -> mode, path, ramdisk-size-mb, enabled


class VcaConfig(msgspec.Struct):
    """`vcactl config-show`: the global settings and each node's."""

    settings: dict[str, str] = {}
    nodes: dict[str, NodeConfig] = {}  # by node id

    def node(self, card: int, cpu: int) -> NodeConfig | None:
        return self.nodes.get(node_id(card, cpu))


class Message(msgspec.Struct, frozen=True):
    """One ERROR:, WARNING: or info line, with its node when vcactl named one."""

    text: str
    card: int | None = None
    cpu: int | None = None

    @property
    def node(self) -> str | None:
        return None if self.card is None or self.cpu is None else node_id(self.card, self.cpu)

    @property
    def line(self) -> str:
        return (
            self.text if self.node is None else f"Card: {self.card} Cpu: {self.cpu} - {self.text}"
        )


class NodeFailure(msgspec.Struct, frozen=True):
    """Why one node's step failed; `kind` is the message's meaning, "failed" when unrecognised."""

    card: int
    cpu: int
    message: str
    kind: str

    @property
    def node(self) -> str:
        return node_id(self.card, self.cpu)


def parse_status(text: str) -> list[NodeStatus]:
    found = []
    for line in text.splitlines():
        if match := _STATUS.search(line):
            flags = [f.strip() for f in match[4].split(",") if f.strip()]
            found.append(NodeStatus(int(match[1]), int(match[2]), match[3], flags))
    return found


def parse_blockio_list(text: str) -> list[BlockDevice]:
    devices = []
    for line in text.splitlines():
        # Rows are "%5u %5u %9s %9s %8s %9s %s": the path is last and may hold spaces.
        parts = line.split(None, 6)
        if len(parts) < 7 or not parts[0].isdigit() or not parts[1].isdigit():
            continue  # the header, its dashes, or something else
        card, cpu, name, state, mode, size, path = parts
        devices.append(BlockDevice(
            int(card), int(cpu), name, state, None if mode == "-" else mode,
            int(size) if size.isdigit() else None, None if path == "-" else path,
        ))  # fmt: skip
    return devices


def parse_config_show(text: str) -> VcaConfig:
    config = VcaConfig()
    node: NodeConfig | None = None
    device: dict[str, str] | None = None
    device_indent = 0
    for line in text.splitlines():
        if line == "Global configuration:":
            node = None
        elif match := _CONFIG_NODE.match(line):
            node, device = NodeConfig(int(match[1]), int(match[2])), None
            config.nodes[node_id(node.card, node.cpu)] = node
        elif match := _FIELD.match(line):
            indent, key, value = len(match[1]), match[2], match[3] or ""
            if node is None:
                config.settings[key] = value
            elif _BLOCK_DEV.match(key) and not value:
                device, device_indent = node.block_devs.setdefault(key, {}), indent
            elif device is not None and indent > device_indent:
                device[key] = value
            elif key != "block-devs":
                node.fields[key], device = value, None
    return config


def parse_messages(stderr: str) -> tuple[list[Message], list[Message]]:
    """The ERROR: and the WARNING: lines."""
    errors: list[Message] = []
    warnings: list[Message] = []
    for line in stderr.splitlines():
        for prefix, into in (("ERROR:", errors), ("WARNING:", warnings)):
            if line.startswith(prefix):
                into.append(_message(line[len(prefix) :].strip()))
    return errors, warnings


def parse_node_lines(stdout: str) -> list[Message]:
    """The "Card: c Cpu: n - msg" info lines."""
    lines = (_message(line) for line in stdout.splitlines() if _NODE_PREFIX.match(line))
    return [m for m in lines if m.card is not None]


def node_failures(
    errors: list[Message], info: list[Message], nodes: list[tuple[int, int]]
) -> list[NodeFailure]:
    """Which nodes a failed (exit 11) call failed on, and why."""
    texts: dict[tuple[int, int], list[str]] = {}
    for m in errors:
        if m.card is not None and m.cpu is not None:
            texts.setdefault((m.card, m.cpu), []).append(m.text)
    for m in info:  # failures vcactl reports on stdout, without an ERROR line
        if m.card is not None and m.cpu is not None and _kind(m.text) == "already_up":
            texts.setdefault((m.card, m.cpu), []).append(m.text)
    loose = [m.text for m in errors if m.card is None]
    if len(nodes) == 1:  # e.g. "VCA_RESET failed", "Execute 'temp' command failed!"
        texts.setdefault(nodes[0], []).extend(loose)
    failures = []
    for (card, cpu), lines in sorted(texts.items()):
        message = "; ".join(dict.fromkeys(lines)) or "failed"
        failures.append(NodeFailure(card, cpu, message, _kind(message)))
    return failures


def _message(text: str) -> Message:
    if match := _NODE_PREFIX.match(text):
        return Message(match[3].strip(), int(match[1]), int(match[2]))
    return Message(text)


def _kind(message: str) -> str:
    return next((kind for kind, pattern in _KINDS if pattern.search(message)), "failed")
