"""The MCP server: tools, the profile resource and the instructions, on stdio or HTTP.

Built on the official SDK's low-level `Server`, which takes the tools' JSON schemas as given:
they come from smemd's own request types (`tools.py`), not from Python signatures. Each call
runs the blocking client in a worker thread; a failure is the tool's error, never the server's.
Over HTTP a request's bearer token is the one forwarded to smemd, so a scoped token limits the
namespaces the tools reach exactly as it limits the API.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from smemctl.client import CallFailed, Client, NotRunning
from smemctl.mcp.tools import BY_NAME, TOOLS

INSTRUCTIONS = """\
smem is your long-term memory across sessions.
- At the start of a task, call get_profile once: who the user is and what is going on.
- Before answering anything that may depend on the past, call search_memories (or
  compress_context for a block to quote) and cite what you use as [n].
- Store what is worth remembering with add_memory: one self-contained fact per call, naming who
  and when ("Alex moved to Portland in March 2025."), not a summary of the conversation. A
  changed fact is recognised and versioned: state the new value.
- memory_as_of answers what was true at a time; memory_history shows how a fact changed;
  entity_profile tells what memory holds about one person, place or thing, by name."""
PROFILE = re.compile(r"^smem://(?P<namespace>[a-zA-Z0-9_:-]{1,100})/profile$")

ClientFor = Callable[[ServerRequestContext[Any, Any]], Client]


def build(client_for: ClientFor, namespace: str, version: str = "") -> Server[Any]:
    """The server; `client_for` gives the smemd client for a request (its token over HTTP)."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.schema(namespace))
                for t in TOOLS
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = BY_NAME.get(params.name)
        if tool is None:
            return _error(f"no tool {params.name!r}")
        client = client_for(ctx)
        arguments = dict(params.arguments or {})
        try:
            text, data = await anyio.to_thread.run_sync(tool, client, namespace, arguments)
        except (CallFailed, NotRunning) as err:
            return _error(str(err))
        structured = data if isinstance(data, dict) else {"result": data}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=structured
        )

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=f"smem://{namespace}/profile", name="profile", mime_type="text/plain",
                    description=f"The profile of namespace {namespace}",
                )
            ]
        )  # fmt: skip

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template="smem://{namespace}/profile", name="profile",
                    mime_type="text/plain", description="A namespace's profile",
                )
            ]
        )  # fmt: skip

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        found = PROFILE.match(str(params.uri))
        if found is None:
            raise ValueError(f"no resource {params.uri}: smem://NAMESPACE/profile is the one")
        client = client_for(ctx)
        profile = BY_NAME["get_profile"]
        arguments = {"namespace": found["namespace"]}
        text, _ = await anyio.to_thread.run_sync(profile, client, namespace, arguments)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=str(params.uri), mime_type="text/plain", text=text)
            ]
        )

    return Server(
        "smem", version=version, instructions=INSTRUCTIONS, on_list_tools=list_tools,
        on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_templates, on_read_resource=read_resource,
    )  # fmt: skip


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def serve_http(server: Server[Any], host: str, port: int) -> None:
    """Streamable HTTP at /mcp, served by uvicorn (the SDK's transport is an ASGI app)."""
    import uvicorn

    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()
