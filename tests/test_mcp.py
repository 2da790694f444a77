"""`smemctl mcp` driven by the official MCP SDK's own client, over stdio and streamable HTTP,
against a real smemd."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from smemctl.mcp.tools import TOOLS
from tests.daemon_process import DaemonProcess
from tests.pace import scaled

REPO = Path(__file__).resolve().parents[1]
TOKENS = """
[api]
token = "all-of-it"
[[api.tokens]]
name = "team-a"
token = "only-a"
namespaces = ["team-a"]
role = "write"
"""


@pytest.fixture(scope="module")
def smemd() -> Iterator[DaemonProcess]:
    state_dir = Path(tempfile.mkdtemp(prefix="smem-mcp-"))
    config = state_dir / "smemd.toml"
    config.write_text(TOKENS)
    process = DaemonProcess(state_dir, config).start()
    yield process
    process.kill()
    shutil.rmtree(state_dir, ignore_errors=True)


def server(smemd: DaemonProcess, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "smemctl", "--socket", str(smemd.socket), "mcp", *args],
        cwd=str(REPO), env={"PYTHONPATH": str(REPO)},
    )  # fmt: skip


@contextlib.asynccontextmanager
async def session(params: StdioServerParameters) -> AsyncIterator[ClientSession]:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


async def call(client: ClientSession, tool: str, **arguments: Any) -> types.CallToolResult:
    return await client.call_tool(tool, arguments)


def text(result: types.CallToolResult) -> str:
    assert isinstance(result.content[0], types.TextContent)
    return result.content[0].text


async def test_tools_are_listed_with_the_apis_own_schemas(smemd: DaemonProcess) -> None:
    params = server(smemd, "-n", "lists")
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        init = await client.initialize()
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert init.instructions is not None and "get_profile" in init.instructions
    assert set(tools) == {t.name for t in TOOLS} >= {
        "get_profile", "search_memories", "add_memory", "ask_memory", "list_memories",
        "memory_history", "forget_memory", "restore_memory", "add_document", "list_namespaces",
        "compress_context", "memory_as_of", "entity_profile",
    }  # fmt: skip
    search = tools["search_memories"].input_schema
    # The search route's body, as the API names it, with the namespace beside it.
    assert {"query", "searchMode", "limit", "asOf", "asOfRecorded", "namespace"} <= set(
        search["properties"]
    )
    assert search["required"] == ["query"] and "$ref" not in str(search)
    assert search["properties"]["namespace"]["default"] == "lists"
    assert tools["memory_as_of"].input_schema["required"] == ["asOf", "query"]
    assert tools["memory_history"].input_schema["required"] == ["id"]
    assert tools["entity_profile"].input_schema["required"] == ["name"]
    assert set(tools["entity_profile"].input_schema["properties"]) == {"name", "namespace"}
    assert "entity" in search["properties"]  # the search route's entity filter


async def test_an_agent_remembers_searches_updates_forgets_and_travels_in_time(
    smemd: DaemonProcess,
) -> None:
    async with session(server(smemd, "-n", "agent")) as client:
        added = await call(client, "add_memory", content="Alex lives in Seattle.")
        assert not added.is_error, text(added)
        assert "Alex lives in Seattle." in text(added)
        (seattle,) = added.structured_content["memories"]
        await anyio.sleep(0.05)  # asOf below is cut to the millisecond: keep it past Seattle's
        before_update = time.time()
        await anyio.sleep(0.05)

        found = await call(client, "search_memories", query="Where does Alex live?")
        assert text(found).startswith("[1] Alex lives in Seattle.")
        assert f"id {seattle['id']}" in text(found)

        updated = await call(
            client, "update_memory", id=seattle["id"], memory="Alex lives in Portland."
        )
        assert not updated.is_error, text(updated)
        history = await call(client, "memory_history", id=seattle["id"])
        assert text(history).splitlines()[0].startswith("v1 Alex lives in Seattle.")
        assert "v2 Alex lives in Portland." in text(history) and "latest" in text(history)

        iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(before_update))
        iso += f".{int(before_update % 1 * 1000):03d}Z"
        then = await call(
            client, "memory_as_of", query="Where does Alex live?", asOf=iso, searchMode="memories"
        )
        assert "[1] Alex lives in Seattle." in text(then), text(then)

        portland = updated.structured_content["id"]
        gone = await call(client, "forget_memory", ids=[portland], reason="moved on")
        assert text(gone) == "Forgot 1."
        listed = await call(client, "list_memories")
        assert "Portland" not in text(listed)
        back = await call(client, "restore_memory", id=portland)
        assert "Alex lives in Portland." in text(back)

        context = await call(client, "compress_context", q="Where does Alex live?")
        assert "[1]" in text(context) and "Portland" in text(context)
        profile = await client.read_resource("smem://agent/profile")
        contents = profile.contents[0]
        assert isinstance(contents, types.TextResourceContents)
        assert "Alex lives in Portland." in contents.text

        document = await call(client, "add_document", content="Sam keeps bees in Lyon.")
        assert text(document).startswith("Document doc_") and "queued" in text(document)
        with anyio.fail_after(30):  # queued: its fact is found once ingest is done
            while "Sam keeps bees" not in text(await call(client, "search_memories", query="bees")):
                await anyio.sleep(0.1)
        spaces = await call(client, "list_namespaces")
        assert "agent:" in text(spaces)


async def test_an_entity_profile_by_name_or_alias_numbers_its_facts_and_history(
    smemd: DaemonProcess,
) -> None:
    async with session(server(smemd, "-n", "people")) as client:
        for fact in (
            "Alex lives in Seattle.",
            "Melanie ran a charity race in Boston.",
            "Caroline: I went to the support group with Melanie.",
            "Caroline told me that Melanie sings in a choir.",
            "Alex works at Stripe.",
        ):
            added = await call(client, "add_memory", content=fact)
            assert not added.is_error, text(added)
        listed = await call(client, "list_memories", limit=20)
        alex_home = next(
            m
            for m in listed.structured_content["memories"]
            if m["memory"] == "Alex lives in Seattle."
        )
        await call(client, "update_memory", id=alex_home["id"], memory="Alex lives in Portland.")

        alex = await call(client, "entity_profile", name="ALEX")
        assert not alex.is_error, text(alex)
        lines = text(alex).splitlines()
        assert lines[0].startswith("Alex (person): id ent_") and "in 2 live memories" in lines[0]
        assert lines[1] == "Now:"
        now = {line.split(" (id ")[0] for line in lines[2:4]}
        assert now == {"[1] Alex lives in Portland.", "[2] Alex works at Stripe."}
        assert lines[4] == "Before:"
        assert lines[5].startswith("[3] Alex lives in Seattle. (id ")
        assert " to " in lines[5]  # the old version's valid time has an end
        assert "Named with it:" in lines and any(line.startswith("- Portland (") for line in lines)
        assert alex.structured_content["entity"]["name"] == "Alex"

        # A part of a name: the most named entity containing it.
        mel = await call(client, "entity_profile", name="mel")
        assert text(mel).startswith("Melanie (person): id ent_"), text(mel)
        assert "in 3 live memories" in text(mel).splitlines()[0]
        assert "- Caroline (person), 2 memories" in text(mel)

        nobody = await call(client, "entity_profile", name="Zebedee")
        assert not nobody.is_error and text(nobody) == "No entity named 'Zebedee'."
        assert (await call(client, "entity_profile", name=" ")).is_error
        assert (await call(client, "entity_profile")).is_error


async def test_bad_arguments_and_unknown_tools_are_tool_errors(smemd: DaemonProcess) -> None:
    async with session(server(smemd)) as client:
        for result in (
            await call(client, "search_memories", query="x", limit=1000),
            await call(client, "search_memories", query="x", namespace="bad space"),
            await call(client, "memory_history", id="mem_nope"),
            await call(client, "no_such_tool"),
        ):
            assert result.is_error, text(result)
        assert "limit" in text(await call(client, "search_memories", query="x", limit=1000))
        # The server is still there.
        assert not (await call(client, "list_namespaces")).is_error


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def http_server(smemd: DaemonProcess) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "smemctl", "mcp", "--url", f"http://{smemd.tcp}",
         "--http", f"127.0.0.1:{port}", "-n", "team-a"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + scaled(20)
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


@contextlib.asynccontextmanager
async def http_session(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


async def test_streamable_http_behind_the_same_tokens(smemd: DaemonProcess) -> None:
    with http_server(smemd) as url:
        async with http_session(url, "only-a") as client:
            added = await call(client, "add_memory", content="Team A ships on Fridays.")
            assert not added.is_error, text(added)
            found = await call(client, "search_memories", query="When does team A ship?")
            assert "Team A ships on Fridays." in text(found)
            elsewhere = await call(client, "search_memories", query="x", namespace="team-b")
            assert elsewhere.is_error and "403" in text(elsewhere)
        async with http_session(url, None) as client:  # no token: smemd refuses the call
            refused = await call(client, "list_namespaces")
            assert refused.is_error and "401" in text(refused)


async def test_smemd_down_is_a_tool_error_and_back_up_works_again() -> None:
    state_dir = Path(tempfile.mkdtemp(prefix="smem-mcp-"))
    daemons = [DaemonProcess(state_dir).start()]
    try:
        async with session(server(daemons[0], "-n", "restart")) as client:
            assert not (await call(client, "list_namespaces")).is_error
            daemons[0].stop()
            down = await call(client, "list_namespaces")
            assert down.is_error and "not running" in text(down)
            daemons.append(DaemonProcess(state_dir).start())  # the same MCP server, not restarted
            assert not (await call(client, "list_namespaces")).is_error
    finally:
        for daemon in daemons:
            daemon.kill()
        shutil.rmtree(state_dir, ignore_errors=True)


def readme_block(language: str, start: str) -> str:
    """The README's fenced block in `language` that begins with `start`."""
    text = (REPO / "README.md").read_text()
    for block in text.split(f"```{language}\n")[1:]:
        body = block.split("```", 1)[0]
        if body.startswith(start):
            return body
    raise AssertionError(f"no ```{language} block starting {start!r} in the README")


async def test_the_readmes_configurations_start_a_working_server(smemd: DaemonProcess) -> None:
    config = json.loads(readme_block("json", "{"))["mcpServers"]["smem"]
    claude = shlex.split(readme_block("", "claude mcp add"))
    assert claude[:4] == ["claude", "mcp", "add", "smem"] and claude[4] == "--"
    runs: list[tuple[str, list[str], dict[str, str]]] = [
        (config["command"], config["args"], config["env"]),
        (claude[5], claude[6:], {}),
    ]
    for command, args, env in runs:
        assert command == "smemctl"
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "smemctl", *args], cwd=str(REPO),
            env={**env, "SMEM_SOCKET": str(smemd.socket), "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        async with session(params) as client:
            spaces = await call(client, "list_namespaces")
            assert not spaces.is_error, text(spaces)


def test_the_server_never_imports_the_engine() -> None:
    probe = (
        "import sys; import smemctl.cli, smemctl.mcp.server, smemctl.mcp.tools;"
        "print(sorted(m for m in sys.modules if m.startswith(('smemd.engine', 'smemd.store'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
