"""The MCP tools: each one route of smemd's API, its input the route's own body type.

A tool's JSON schema is the body Struct's (msgspec generates it, as it does for the OpenAPI
document), with the route's path parameters beside it: `namespace` (default: the server's) and
`id`. A call becomes the route's request; its reply is rendered as short text an agent reads
well (ids, `[n]` citations), and kept whole as the structured content.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import msgspec

from smemctl.client import CallFailed, Client
from smemctl.mcp import render
from smemd.protocol.answers import Ask, AskReply, Compress, CompressReply
from smemd.protocol.entities import Entities, EntityOut, EntityProfile
from smemd.protocol.memory import (
    NAMESPACE_PATTERN,
    AddDocument,
    DocumentOut,
    DocumentRef,
    ForgetIds,
    ForgetResult,
    History,
    ListBody,
    ListResponse,
    MemoryOut,
    NamespaceList,
    Profile,
    ProfileResponse,
    Search,
    SearchResponse,
    UpdateMemory,
)

# How long add_memory waits for its fact to be stored, so the agent can search it next.
ADD_WAIT_S = 30.0


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    method: str
    path: str  # with {namespace} and {id} where the route has them
    body: type | None  # the route's body type, whose schema is the tool's input
    reply: type
    text: Callable[[Any], str]  # the reply as an agent reads it
    required: tuple[str, ...] = ()  # fields the route leaves optional that the tool needs
    in_body: tuple[str, ...] = ()  # path-like fields the route takes in its body instead
    query: dict[str, dict[str, Any]] = field(default_factory=dict)  # query parameters' schemas
    # A tool that is more than one call (add_memory waits for its fact), else `call`.
    run: Callable[[Client, str, dict[str, Any]], tuple[str, Any]] | None = None

    def __call__(
        self, client: Client, namespace: str, arguments: dict[str, Any]
    ) -> tuple[str, Any]:
        return (self.run or self.call)(client, namespace, arguments)

    def schema(self, namespace: str) -> dict[str, Any]:
        """The input schema: the body's properties, then the path's and the query's."""
        schema: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        if self.body is not None:
            schema = _inlined(msgspec.json.schema(self.body))
        properties = schema.setdefault("properties", {})
        required = list(schema.get("required", []))
        if "{namespace}" in self.path or "namespace" in self.in_body:
            properties["namespace"] = {
                "type": "string", "pattern": NAMESPACE_PATTERN, "default": namespace,
                "description": "the memory space (default: this server's)",
            }  # fmt: skip
        if "{id}" in self.path:
            properties["id"] = {"type": "string", "minLength": 1, "description": "a memory's id"}
            required.append("id")
        properties.update(self.query)
        schema["required"] = sorted({*required, *self.required})
        schema.pop("title", None)
        return schema

    def call(self, client: Client, namespace: str, arguments: dict[str, Any]) -> tuple[str, Any]:
        """The route called with the arguments: its reply as text, and as JSON."""
        given = dict(arguments)
        ns = given.pop("namespace", None) or namespace
        memory_id = given.pop("id", None)
        query = {name: given.pop(name) for name in list(given) if name in self.query}
        path = self.path.format(namespace=quote(ns, safe=""), id=quote(str(memory_id), safe=""))
        if query:
            path += "?" + urlencode(query)
        if "namespace" in self.in_body:
            given["namespace"] = ns
        missing = [name for name in self.required if given.get(name) is None]
        if missing:
            raise CallFailed(f"{self.name}: {', '.join(missing)} is required")
        body = _decoded(self.body, given) if self.body is not None else None
        reply: Any
        reply, raw = client.send(self.method, path, body, self.reply)
        return self.text(reply), msgspec.json.decode(raw)


def _decoded(body: type, arguments: dict[str, Any]) -> Any:
    """The arguments as the route's body, checked as smemd checks it."""
    try:
        return msgspec.convert(arguments, body)
    except msgspec.ValidationError as err:
        raise CallFailed(f"invalid arguments: {err}") from None


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """msgspec's schema with its `$defs` put in place (MCP clients expect one object)."""
    defs = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return resolve(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    root = resolve({"$ref": schema["$ref"]} if "$ref" in schema else schema)
    assert isinstance(root, dict)
    return root


def add_memory(client: Client, namespace: str, arguments: dict[str, Any]) -> tuple[str, Any]:
    """One fact stored, waited for, and what it became: the agent can search it at once."""
    document = ADD_DOCUMENT.call(client, namespace, arguments)[1]
    ns = quote(arguments.get("namespace") or namespace, safe="")
    deadline = time.monotonic() + ADD_WAIT_S
    while True:
        doc, raw = client.get(f"/ns/{ns}/document/{document['id']}?include=memories", DocumentOut)
        if doc.system.status in ("done", "failed") or time.monotonic() > deadline:
            return render.added(doc), msgspec.json.decode(raw)
        time.sleep(0.05)


def entity_profile(client: Client, namespace: str, arguments: dict[str, Any]) -> tuple[str, Any]:
    """The entity a name means (its name or an alias, any case; else the most named whose name
    contains it), and its profile."""
    name = str(arguments.get("name") or "").strip()
    if not name:
        raise CallFailed("entity_profile: name is required")
    ns = quote(arguments.get("namespace") or namespace, safe="")
    query = urlencode({"q": name[:200], "limit": 100})
    found, _ = client.get(f"/ns/{ns}/entities?{query}", Entities)
    entity = _meant(found.entities, name)
    if entity is None:
        return f"No entity named {name!r}.", {"entity": None}
    profile, raw = client.get(f"/ns/{ns}/entities/{quote(entity.id, safe='')}", EntityProfile)
    return render.entity_profile(profile), msgspec.json.decode(raw)


def _meant(entities: list[EntityOut], name: str) -> EntityOut | None:
    """An exact match of the name or an alias, any case, before the most named (the list's
    first: the route orders by how many live memories name each)."""
    wanted = name.casefold()
    for entity in entities:
        if wanted in (n.casefold() for n in [entity.name, *entity.aliases]):
            return entity
    return entities[0] if entities else None


ADD_DOCUMENT = Tool(
    "add_document",
    "Add a document (text, or one URL to fetch) to memory. Ingest is queued: the reply gives "
    "the document's id and status; its facts become searchable once it is done.",
    "POST", "/ns/{namespace}/document", AddDocument, DocumentRef, render.queued,
)  # fmt: skip
SEARCH = Tool(
    "search_memories",
    "Search memory before answering: the best memories and passages for a query, numbered "
    "[n] with their ids. `asOf` (ISO-8601) recalls what held then.",
    "POST", "/ns/{namespace}/search", Search, SearchResponse, render.results,
)  # fmt: skip
TOOLS = [
    Tool(
        "get_profile",
        "Who the user is and what is going on now: call once at the start of a task.",
        "POST",
        "/ns/{namespace}/profile",
        Profile,
        ProfileResponse,
        render.profile,
    ),
    SEARCH,
    Tool(
        "memory_as_of",
        "What was true at a time (`asOf`, ISO-8601): the versions of facts that held then.",
        "POST",
        "/ns/{namespace}/search",
        Search,
        SearchResponse,
        render.results,
        required=("asOf",),
    ),
    Tool(
        "add_memory",
        "Store one self-contained fact (who, what, when), waited for until it is remembered. "
        "A changed fact is recognised and versioned: store the new value, not a correction.",
        "POST",
        "/ns/{namespace}/document",
        AddDocument,
        DocumentRef,
        render.queued,
        run=lambda client, namespace, arguments: add_memory(client, namespace, arguments),
    ),
    ADD_DOCUMENT,
    Tool(
        "ask_memory",
        "A question answered from memory with [n] citations (without a model on the server, the "
        "evidence only).",
        "POST",
        "/v1/ask",
        Ask,
        AskReply,
        render.answer,
        in_body=("namespace",),
    ),
    Tool(
        "compress_context",
        "The numbered, bounded evidence block for a query, to put in a prompt and cite as [n].",
        "POST",
        "/v1/compress",
        Compress,
        CompressReply,
        render.context,
        in_body=("namespace",),
    ),
    Tool(
        "list_memories",
        "Memories, newest first; `history` for every version.",
        "POST",
        "/ns/{namespace}/list/memories",
        ListBody,
        ListResponse,
        render.listed,
        query={
            "page": {"type": "integer", "minimum": 1, "default": 1},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
        },
    ),
    Tool(
        "memory_history",
        "Every version of a memory, in the order they held, with when each held.",
        "GET",
        "/ns/{namespace}/memories/{id}/history",
        None,
        History,
        render.history,
    ),
    Tool(
        "update_memory",
        "New text for a memory (a new version; the old one stays in its history).",
        "PATCH",
        "/ns/{namespace}/memories/{id}",
        UpdateMemory,
        MemoryOut,
        render.memory,
    ),
    Tool(
        "forget_memory",
        "Forget memories by id (soft: restore_memory brings one back).",
        "DELETE",
        "/ns/{namespace}/memories",
        ForgetIds,
        ForgetResult,
        render.forgotten,
    ),
    Tool(
        "restore_memory",
        "Bring back a forgotten memory.",
        "POST",
        "/ns/{namespace}/memories/{id}/restore",
        None,
        MemoryOut,
        render.memory,
    ),
    Tool(
        "entity_profile",
        "What memory holds about one person, place, organisation or thing, by name: its current "
        "facts, how they changed (with when each held) and who or what is named beside it, "
        "numbered [n] to cite.",
        "GET",
        "/ns/{namespace}/entities",
        None,
        EntityProfile,
        render.entity_profile,
        required=("name",),
        query={
            "name": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "the entity's name or an alias, any case",
            },
        },
        run=lambda client, namespace, arguments: entity_profile(client, namespace, arguments),
    ),
    Tool(
        "list_namespaces",
        "The memory spaces there are, with their counts.",
        "GET",
        "/ns",
        None,
        NamespaceList,
        render.namespaces,
    ),
]
BY_NAME = {tool.name: tool for tool in TOOLS}
