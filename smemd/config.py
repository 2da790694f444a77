"""smemd's configuration: a Struct tree decoded from TOML, then environment, then flags.

Precedence, lowest first: field defaults, the TOML file, `SMEM_*` variables, command-line flags.
Every layer goes through the same decode, so a bad value names its field whichever layer set it.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from smemd import paths, tomlwriter
from smemd.errors import describe_validation_error
from smemd.fetch.guard import Guard
from smemd.http import origins
from smemd.protocol import LogLevel
from smemd.store.opening import StoreKind
from smemd.store.scope import Pattern as ScopePattern

DEFAULT_CONFIG_FILE = Path("/etc/smem/smemd.toml")

# (section, key) that each environment variable sets.
ENV_VARS = {
    "SMEM_STATE_DIR": ("paths", "state-dir"),
    "SMEM_SOCKET": ("paths", "socket"),
    "SMEM_TOKEN": ("api", "token"),
    "SMEM_ADMIN_TOKEN": ("api", "admin-token"),
}
# Switches set by environment variables: 1/true/yes/on or 0/false/no/off.
ENV_SWITCHES = {"SMEM_DREAMING": ("engine", "dreaming")}
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}

Port = Annotated[int, msgspec.Meta(ge=1, le=65535)]
NodeId = Annotated[str, msgspec.Meta(pattern=r"^node[0-9]{1,2}$")]
Lane = Literal["interactive", "background"]


class ConfigError(Exception):
    """A config problem, worded `$.path.to.field: what is wrong`."""


class Section(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="kebab"):
    pass


class PathsConfig(Section):
    state_dir: str = ""  # "" = the default for this user (see smemd.paths)
    socket: str = ""
    pause_file: str = ""


Role = Literal["read", "write", "admin"]


class TokenConfig(Section):
    """`[[api.tokens]]`: a named secret, the namespaces it may touch and what it may do there."""

    name: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
    namespaces: Annotated[list[ScopePattern], msgspec.Meta(min_length=1)]  # names or globs
    role: Role = "read"
    token: str = ""  # the secret itself, or:
    token_file: str = ""  # a file holding it (one line), read at start


class ApiConfig(Section):
    listen: str = "127.0.0.1:8900"
    token: str = ""  # every namespace, every route but the admin ones
    admin_token: str = ""  # every namespace, every route
    tokens: list[TokenConfig] = msgspec.field(default_factory=list)
    max_body_mb: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 10
    # A request's store work stops here (503 timed_out); model calls have their own timeouts.
    request_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 10.0
    socket_group: str = ""  # group that owns the socket; "" = the daemon's own group
    # Pages of these origins (scheme://host[:port]) may call smemd from a browser; any other
    # page is refused (smemd's own console is of smemd's own origin, and needs no entry).
    allow_origins: list[str] = msgspec.field(default_factory=list)
    # Names a request's Host may give besides the listener's address and localhost (a name the
    # host is reached by, a proxy's): any other is refused, which defeats DNS rebinding.
    allow_hosts: list[str] = msgspec.field(default_factory=list)
    # Each listener's open connections; past it a connection is answered 503 and closed.
    max_connections: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 1024
    # A connection that has not sent a whole request's headers this long after it opened or
    # after its last reply is closed: idle keep-alive and trickled headers alike.
    idle_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 15.0
    # How long a request's body may take to arrive; then 408 and the connection is closed.
    body_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 30.0
    # Namespaces one token (or, with no token configured, TCP callers together) may create.
    max_namespaces: Annotated[int, msgspec.Meta(ge=1)] = 10_000


class DaemonConfig(Section):
    log_level: LogLevel = "info"
    # json: one object a line, for a collector (fields in smemd/log.py); text is for people.
    log_format: Literal["text", "json"] = "text"
    shutdown_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 10.0
    # /v1/ready fails below this much free space on the state dir's file system, where the
    # SQLite store, the saved indexes, backups and imports are written; 0: no floor.
    min_free_mb: Annotated[int, msgspec.Meta(ge=0)] = 256


class NodeConfig(Section):
    id: NodeId
    address: str = ""  # "" = 172.31.(k+1).1 for node k, the VCA default
    embed: Port | None = None  # a role's port; left out when the node lacks that role
    rerank: Port | None = None
    llm: Port | None = None
    # None: the fleet's default, which is interactive, except on vca2: card 0 interactive, the
    # other card background.
    lanes: Annotated[list[Lane], msgspec.Meta(min_length=1)] | None = None
    lendable: bool = True
    card: Annotated[int, msgspec.Meta(ge=0, le=7)] | None = None
    cpu: Annotated[int, msgspec.Meta(ge=0, le=2)] | None = None

    def lanes_in(self, fleet_kind: str) -> list[Lane]:
        if self.lanes is not None:
            return self.lanes
        card = self.card if self.card is not None else int(self.id[4:]) // 3
        return ["background"] if fleet_kind == "vca2" and card > 0 else ["interactive"]


class LocalConfig(Section):
    """The `local` fleet: llama-servers smemd starts on this host, one per model."""

    llama_server: str = "llama-server"  # the binary: a path, or a name looked up on PATH
    embed_model: str = ""  # GGUF files; "" = that role is not served
    rerank_model: str = ""
    llm_model: str = ""
    threads: Annotated[int, msgspec.Meta(ge=1, le=256)] = 2
    context: Annotated[int, msgspec.Meta(ge=256)] = 4096  # tokens, shared by the parallel slots
    parallel: Annotated[int, msgspec.Meta(ge=1, le=64)] = 2
    # The embedding server's pooling; "" keeps the model's own (a chat model has none: say mean).
    pooling: Literal["", "mean", "cls", "last"] = ""


class FleetConfig(Section):
    kind: Literal["builtin", "hosts", "local", "vca2"] = "builtin"
    nodes: list[NodeConfig] = msgspec.field(default_factory=list)
    local: LocalConfig = msgspec.field(default_factory=LocalConfig)


Seconds = Annotated[float, msgspec.Meta(gt=0, le=86400)]


class CardTimeouts(Section):
    """Seconds. The defaults are the hardware's ceilings (hardware.md §A.7)."""

    vcactl: Seconds = 60.0  # one vcactl call (its modprobe gate alone may take 10 s)
    reset: Seconds = 300.0  # reset to bios_up: vcactl's wait-bios-cmd-timeout-s
    boot: Seconds = 60.0  # the `vcactl boot` call: it returns once the LBP handover is done
    ready: Seconds = 200.0  # boot to net_device_ready: vcactl's wait-cmd-timeout-s
    health: Seconds = 300.0  # a 10 GB LLM loads from the PCIe-backed image for minutes
    poweroff: Seconds = 90.0  # each way of powering off gets this long to reach power_off
    ssh: Seconds = 10.0  # to connect, and to run one command
    http: Seconds = 5.0  # one /health request
    poll: Seconds = 1.0  # between looks at a state that is changing


class CardThresholds(Section):
    """Failed checks in a row before each rung of the ladder: restart (N), reboot (M), failed (K)."""

    restart_after: Annotated[int, msgspec.Meta(ge=1)] = 3
    reboot_after: Annotated[int, msgspec.Meta(ge=1)] = 6
    fail_after: Annotated[int, msgspec.Meta(ge=1)] = 10
    boot_attempts: Annotated[int, msgspec.Meta(ge=1)] = 3  # then the node is failed

    def __post_init__(self) -> None:
        if not self.restart_after <= self.reboot_after <= self.fail_after:
            raise ValueError("expected restart-after <= reboot-after <= fail-after")


class CardIntervals(Section):
    """Seconds."""

    health: Seconds = 10.0  # between a node's checks
    backoff: Seconds = 10.0  # after a ladder action or a failed boot, before the next; doubles
    backoff_cap: Seconds = 300.0
    telemetry: Seconds = 15.0  # between temperature and memory samples
    extend: Seconds = 5.0  # while stopping, between EXTEND_TIMEOUT_USEC notices to systemd


class CardsConfig(Section):
    vcactl: str = "/usr/sbin/vcactl"
    image_dir: str = "/var/lib/vca"
    boot: Literal["all", "none"] | list[NodeId] = "all"
    # The VCA driver's per-node `state` and `link_state` files: reading them is far cheaper than
    # a `vcactl status` process per look while a node boots. Missing: smemd asks vcactl.
    sysfs: str = "/sys/class/vca"
    ssh_user: str = "root"
    ssh_key: str = ""  # the private key smemd logs in with; "" = ssh's default keys
    ssh_port: Port = 22
    # On stop, power the nodes off and close their images. Off: they keep running, and the next
    # smemd adopts them.
    power_off_on_stop: bool = True
    timeouts: CardTimeouts = msgspec.field(default_factory=CardTimeouts)
    thresholds: CardThresholds = msgspec.field(default_factory=CardThresholds)
    intervals: CardIntervals = msgspec.field(default_factory=CardIntervals)


class EngineConfig(Section):
    half_life_days: Annotated[float, msgspec.Meta(ge=0)] = 0.0
    ingest_concurrency: Annotated[int, msgspec.Meta(ge=1, le=64)] = 4  # jobs worked side by side
    # Vector search scans a namespace exactly up to this many rows; past it, a reduced first
    # pass and an exact re-score of its best 800 (engine/index/reduction.py).
    exact_scan_up_to: Annotated[int, msgspec.Meta(ge=0)] = 20_000
    # Past this many rows of one kind, a namespace's vectors are an HNSW graph, saved in the
    # state dir and loaded from it at the next start (engine/index/ann.py).
    ann_from: Annotated[int, msgspec.Meta(ge=0)] = 200_000
    # Dreaming types memories and links them while the models are idle: after this many
    # seconds without a search or an ingest job. $SMEM_DREAMING=0 turns it off.
    # One extraction call: a 3,000-character group may take 2,048 tokens to answer, minutes on
    # a slow node; the client's 30 s would fail it.
    extraction_timeout_s: Annotated[float, msgspec.Meta(ge=1, le=3600)] = 300.0
    dreaming: bool = True
    dreaming_quiet_s: Annotated[float, msgspec.Meta(ge=0, le=86400)] = 20.0


class IngestConfig(Section):
    """Documents given as a URL (which hosts the fetch guard lets through, and its limits), and
    how large a document may be."""

    # `host` or `host:port` entries that may be fetched although their addresses are private,
    # loopback or link-local (an intranet wiki, a local server); any other such address is refused.
    allow_hosts: list[str] = msgspec.field(default_factory=list)
    fetch_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 60.0  # the whole fetch
    max_fetch_mb: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 20
    # Off: content that is a URL is kept as text, and smemd fetches nothing (an offline host).
    fetch_urls: bool = True
    # A document that makes more chunks is refused (413) when added, or its job fails once its
    # text is known (a URL); 10,000 chunks are 10 to 13 MB of prose.
    max_chunks: Annotated[int, msgspec.Meta(ge=1)] = 10_000


class StoreConfig(Section):
    """Where memory is kept. `sqlite`: one file, `<state-dir>/smem.sqlite3`, that one daemon
    opens. `postgres`: a PostgreSQL database with pgvector, named by `dsn` or `dsn-file`."""

    kind: StoreKind = "sqlite"
    # A libpq connection string or postgresql:// URI; `dsn-file` keeps its secret out of the
    # config (one line). Never logged: smemd names the server as role@host:port/database.
    dsn: str = ""
    dsn_file: str = ""
    pool_size: Annotated[int, msgspec.Meta(ge=2, le=200)] = 10
    statement_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=86400)] = 60.0

    def __repr__(self) -> str:  # a dsn may hold a password
        return f"StoreConfig(kind={self.kind!r}, pool_size={self.pool_size})"


class Config(Section):
    paths: PathsConfig = msgspec.field(default_factory=PathsConfig)
    api: ApiConfig = msgspec.field(default_factory=ApiConfig)
    daemon: DaemonConfig = msgspec.field(default_factory=DaemonConfig)
    fleet: FleetConfig = msgspec.field(default_factory=FleetConfig)
    cards: CardsConfig = msgspec.field(default_factory=CardsConfig)
    engine: EngineConfig = msgspec.field(default_factory=EngineConfig)
    ingest: IngestConfig = msgspec.field(default_factory=IngestConfig)
    store: StoreConfig = msgspec.field(default_factory=StoreConfig)

    @property
    def state_dir(self) -> Path:
        return Path(self.paths.state_dir)

    @property
    def socket(self) -> Path:
        return Path(self.paths.socket)


def parse_listen(value: str) -> tuple[str, int]:
    """Split `HOST:PORT` (or `[v6]:PORT`) into host and port; port 0 means ephemeral."""
    host, sep, port_text = value.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"expected HOST:PORT with a port in 0..65535, got {value!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        ipaddress.IPv6Address(host)
    elif ":" in host:
        raise ValueError(f"an IPv6 host needs brackets, as in [::1]:8900; got {value!r}")
    return host, int(port_text)


def load(
    file: Path | None,
    *,
    env: Mapping[str, str] = os.environ,
    overrides: Mapping[tuple[str, str], Any] | None = None,
) -> Config:
    """Read `file` (or the default file when it exists), apply env and flag overrides, validate."""
    raw = _read_toml(file)
    layers: dict[tuple[str, str], Any] = {
        ENV_VARS[name]: value for name, value in env.items() if name in ENV_VARS and value
    }
    for name, place in ENV_SWITCHES.items():
        if value := env.get(name, "").strip().lower():
            if value not in _TRUE | _FALSE:
                raise ConfigError(
                    f"${name}: expected 1 or 0 (true/false, yes/no, on/off), got {value!r}"
                )
            layers[place] = value in _TRUE
    layers.update(overrides or {})
    for (section, key), value in layers.items():
        table = raw.setdefault(section, {})
        if isinstance(table, dict):  # otherwise let the decode below name the bad section
            table[key] = value
    try:
        config = msgspec.convert(raw, Config)
    except msgspec.ValidationError as err:
        raise ConfigError(describe_validation_error(err)) from err
    config = _with_default_paths(config)
    _check(config)
    return config


def _read_toml(file: Path | None) -> dict[str, Any]:
    if file is None:
        if not DEFAULT_CONFIG_FILE.exists():
            return {}
        file = DEFAULT_CONFIG_FILE
    try:
        return tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"{file}: cannot read: {err.strerror or err}") from err
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"{file}: not valid TOML: {err}") from err


def _with_default_paths(config: Config) -> Config:
    given = config.paths
    state_dir = Path(given.state_dir) if given.state_dir else paths.default_state_dir()
    runtime_dir = paths.default_runtime_dir(state_dir)
    resolved = PathsConfig(
        state_dir=os.path.abspath(state_dir),
        socket=os.path.abspath(given.socket or runtime_dir / paths.SOCKET_NAME),
        pause_file=os.path.abspath(given.pause_file or runtime_dir / paths.PAUSE_FILE_NAME),
    )
    return msgspec.structs.replace(config, paths=resolved)


def _check(config: Config) -> None:
    """What a type cannot say: well-formed addresses, path limits, unique names, tokens."""
    try:
        parse_listen(config.api.listen)
    except ValueError as err:
        raise ConfigError(f"$.api.listen: {err}") from err
    if len(os.fsencode(config.paths.socket)) > paths.MAX_SOCKET_PATH:
        raise ConfigError(
            f"$.paths.socket: longer than {paths.MAX_SOCKET_PATH} bytes, the limit of a Unix socket"
        )
    if config.fleet.kind == "local" and not config.fleet.local.embed_model:
        raise ConfigError("$.fleet.local.embed-model: the local fleet needs an embedding model")
    _check_tokens(config.api)
    _check_store(config.store)
    for i, entry in enumerate(config.api.allow_origins):
        try:
            origins.parse_origin(entry)
        except ValueError as err:
            raise ConfigError(f"$.api.allow-origins[{i}]: {err}") from err
    for i, entry in enumerate(config.api.allow_hosts):
        try:
            origins.check_host_name(entry)
        except ValueError as err:
            raise ConfigError(f"$.api.allow-hosts[{i}]: {err}") from err
    for i, entry in enumerate(config.ingest.allow_hosts):
        try:
            Guard([entry])  # the guard's own parser, so what passes here is what it will allow
        except ValueError as err:
            raise ConfigError(f"$.ingest.allow-hosts[{i}]: {err}") from err
    seen: set[str] = set()
    for i, node in enumerate(config.fleet.nodes):
        if node.id in seen:
            raise ConfigError(f"$.fleet.nodes[{i}].id: duplicate node id {node.id!r}")
        seen.add(node.id)


def _check_store(store: StoreConfig) -> None:
    if store.kind == "sqlite":
        if store.dsn or store.dsn_file:
            raise ConfigError("$.store.dsn: only a postgres store has one (kind is sqlite)")
        return
    if bool(store.dsn) == bool(store.dsn_file):
        raise ConfigError("$.store: a postgres store needs exactly one of dsn and dsn-file")
    if store.dsn_file:
        store.dsn = _read_secret("$.store.dsn-file", Path(store.dsn_file))


# A bearer token's characters (RFC 6750); anything else could not be sent in a header.
TOKEN_CHARACTERS = re.compile(r"[A-Za-z0-9._~+/-]+=*")
RESERVED_NAMES = ("token", "admin-token")  # how `[api] token` and `admin-token` are listed


def _check_tokens(api: ApiConfig) -> None:
    """Each token: one secret (given, or read from its file), well formed, unlike the others."""
    secrets: dict[str, str] = {}
    for path, name, secret in (
        ("$.api.token", "token", api.token),
        ("$.api.admin-token", "admin-token", api.admin_token),
    ):
        if secret:
            _check_secret(path, secret)
            secrets[secret] = name
    names = set(RESERVED_NAMES)
    for i, entry in enumerate(api.tokens):
        path = f"$.api.tokens[{i}]"
        if entry.name in names:
            raise ConfigError(f"{path}.name: {entry.name!r} is taken")
        names.add(entry.name)
        if bool(entry.token) == bool(entry.token_file):
            raise ConfigError(f"{path}: give exactly one of token and token-file")
        if entry.token_file:
            entry.token = _read_secret(f"{path}.token-file", Path(entry.token_file))
        _check_secret(f"{path}.token", entry.token)
        if entry.token in secrets:
            raise ConfigError(f"{path}.token: the same secret as {secrets[entry.token]!r}")
        secrets[entry.token] = entry.name


def _check_secret(path: str, secret: str) -> None:
    if not TOKEN_CHARACTERS.fullmatch(secret):
        raise ConfigError(f"{path}: only A-Z a-z 0-9 . _ ~ + / - (then = padding) can be sent")


def _read_secret(path: str, file: Path) -> str:
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(
            f"{path}: cannot read {file}: {getattr(err, 'strerror', None) or err}"
        ) from err
    lines = text.strip().splitlines()
    if len(lines) != 1:
        raise ConfigError(f"{path}: {file} must hold the secret on one line")
    return lines[0].strip()


MASK = "********"


def render_config(config: Config) -> str:
    """The effective config as TOML, every secret masked (tokens, the store's dsn): what
    `smemd --print-config` prints and a backup keeps."""
    data = msgspec.to_builtins(config)
    api = data["api"]
    for key in ("token", "admin-token"):
        if api[key]:
            api[key] = MASK
    for entry in api["tokens"]:
        if entry["token"]:
            entry["token"] = MASK
    if data["store"]["dsn"]:
        data["store"]["dsn"] = MASK
    return tomlwriter.dumps(data)
