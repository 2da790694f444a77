"""The three llama-server units of a VCA node and their env files, rendered as text.

The settings smemd's config has no key for yet (model paths on the node, context, slots, threads,
memory caps) are the constants below; the env files carry them so a node can be tuned in place.
"""

from __future__ import annotations

from typing import Literal

import msgspec

LLAMA_SERVER = "/usr/local/bin/llama-server"  # where the node image installs the binary
MODEL_DIR = "/opt/smem/models"  # GGUF files, world-readable: the units run as a DynamicUser
HOST = "0.0.0.0"  # the node is reachable only over its PCIe virtual NIC
RESTART_SEC = 5

# Xeon E3-1585L v5: 4 cores / 8 threads, 32 GB (two SO-DIMMs).
NODE_CORES = 4
NODE_RAM_GIB = 32
OS_HEADROOM_GIB = 8  # kernel, sshd, journald and the page cache the mmap'd models need

PortField = Literal["embed", "rerank", "llm"]


class Role(msgspec.Struct, frozen=True, kw_only=True):
    """One llama-server on the node: its unit name, port field in the config and budget."""

    name: str  # the unit is sm-<name>.service, its env file /etc/smem/sm-<name>.env
    port_field: PortField  # the NodeConfig field with its port: a node without one lacks the role
    description: str
    flags: str  # role flags after the common ones, ${VAR}s from the env file
    env: tuple[tuple[str, str], ...] = ()  # role-only variables for `flags`
    model: str
    threads: int
    memory_max_gib: int
    ctx: int  # tokens, shared by the slots: each gets ctx / parallel
    parallel: int

    @property
    def unit_name(self) -> str:
        return f"sm-{self.name}.service"

    @property
    def env_path(self) -> str:
        return f"/etc/smem/sm-{self.name}.env"


# Embed and rerank inputs must fit one physical batch (-ub), else llama-server answers 500
# "input (N tokens) is too large"; smemd's chunks are ~1400 characters, well under 2048 tokens.
BATCH = "2048"

ROLES = (
    Role(
        name="emb",
        port_field="embed",
        description="embeddings",
        flags="--embeddings --pooling ${POOLING} -b ${BATCH} -ub ${BATCH}",
        env=(("POOLING", "mean"), ("BATCH", BATCH)),
        model=f"{MODEL_DIR}/embed.gguf",
        threads=1,
        memory_max_gib=4,
        ctx=8192,
        parallel=4,
    ),
    Role(
        name="rrk",
        port_field="rerank",
        description="reranking",
        flags="--reranking -b ${BATCH} -ub ${BATCH}",
        env=(("BATCH", BATCH),),
        model=f"{MODEL_DIR}/rerank.gguf",
        threads=1,
        memory_max_gib=4,
        ctx=8192,
        parallel=4,
    ),
    Role(
        name="llm",
        port_field="llm",
        description="chat",
        flags="--jinja",  # chat_template_kwargs (enable_thinking) needs the Jinja engine
        model=f"{MODEL_DIR}/llm.gguf",
        threads=2,
        memory_max_gib=16,
        ctx=8192,
        parallel=2,
    ),
)

UNIT = """\
# Rendered by `python -m nodeimages write-overlay`; a new render overwrites local edits.
[Unit]
Description=smem {description} model server (llama-server)
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
EnvironmentFile={env_path}
ExecStart={binary} -m ${{MODEL}} --host ${{HOST}} --port ${{PORT}} -c ${{CTX}} -np ${{PARALLEL}} -t ${{THREADS}} -tb ${{THREADS}} --metrics {flags} $EXTRA_ARGS
Restart=always
RestartSec={restart_sec}
# The three servers' caps sum to {total_gib} GiB of the node's {ram_gib}, leaving {headroom_gib} for the OS.
MemoryMax={memory_max_gib}G
# CPU-only inference: no devices, no privileges, nothing on disk to write.
DynamicUser=yes
CapabilityBoundingSet=
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
RestrictNamespaces=yes
RestrictRealtime=yes
LockPersonality=yes
SystemCallArchitectures=native

[Install]
WantedBy=multi-user.target
"""

ENV = """\
# {node}: sm-{name} ({description}). Rendered by `python -m nodeimages write-overlay`.
MODEL={model}
HOST={host}
PORT={port}
CTX={ctx}
PARALLEL={parallel}
# The node's {cores} cores are split LLM {llm} + embedder {emb} + reranker {rrk} threads. ggml's threads
# spin while they wait for each other and a hyperthread shares its core's AVX2 units, so one more
# thread than cores slows all three servers down instead of adding work.
THREADS={threads}
"""


def role_threads(name: str) -> int:
    return next(role.threads for role in ROLES if role.name == name)


def unit_text(role: Role, *, binary: str = LLAMA_SERVER) -> str:
    """The role's systemd unit, running `binary`."""
    total = sum(r.memory_max_gib for r in ROLES)
    return UNIT.format(
        description=role.description,
        env_path=role.env_path,
        binary=binary,
        flags=role.flags,
        restart_sec=RESTART_SEC,
        total_gib=total,
        ram_gib=NODE_RAM_GIB,
        headroom_gib=NODE_RAM_GIB - total,
        memory_max_gib=role.memory_max_gib,
    )


def env_text(role: Role, *, node: str, port: int) -> str:
    """The role's env file on `node`, serving on `port`."""
    text = ENV.format(
        node=node,
        name=role.name,
        description=role.description,
        model=role.model,
        host=HOST,
        port=port,
        ctx=role.ctx,
        parallel=role.parallel,
        cores=NODE_CORES,
        llm=role_threads("llm"),
        emb=role_threads("emb"),
        rrk=role_threads("rrk"),
        threads=role.threads,
    )
    extra = "".join(f"{key}={value}\n" for key, value in role.env)
    return text + extra + "# More llama-server flags, split at spaces.\nEXTRA_ARGS=\n"
