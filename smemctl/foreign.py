"""Memories kept elsewhere, as documents for smem to ingest (`smemctl import --from mem0|texts`).
Unlike an import of smem's own export, these are read afresh: extraction and reconciliation run
on each, as on anything added.

- **mem0**: the JSON Mem0's `get_all` (and `search`) return: `{"results": [...]}` (its v1.1
  shape), `{"memories": [...]}`, or a bare list (v1.0), each item with `memory` (the text) and
  optionally `id`, `metadata`, `created_at`, `user_id`, `agent_id`, `run_id`, `categories`.
  Each item is one document dated by its `created_at`, with the caller id `mem0-<id>` (importing
  the same file again adds nothing) and Mem0's ids kept in its metadata (`mem0Id`, `userId`,
  `agentId`, `runId`, `categories`): every item goes into the one namespace `-n` names, and a
  user's or agent's memories are found again with a metadata filter.
- **texts**: JSON Lines, each line a JSON string or `{"text", "date", "metadata"}`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from smemctl.common import UsageError
from smemd.protocol.memory import BatchDocument

FORMATS = ("mem0", "texts")
MEM0_IDS = {"id": "mem0Id", "user_id": "userId", "agent_id": "agentId", "run_id": "runId"}


class TextLine(msgspec.Struct, forbid_unknown_fields=True):
    text: str
    date: str | None = None
    metadata: dict[str, Any] = {}


def documents(kind: str, data: bytes) -> list[BatchDocument]:
    """The documents the file `data` holds; UsageError naming the item or line that is wrong."""
    return _mem0(data) if kind == "mem0" else _texts(data)


def _mem0(data: bytes) -> list[BatchDocument]:
    try:
        whole = msgspec.json.decode(data)
    except msgspec.DecodeError as err:
        raise UsageError(f"not a Mem0 export: not JSON ({err})") from None
    items = whole.get("results", whole.get("memories")) if isinstance(whole, dict) else whole
    if not isinstance(items, list):
        raise UsageError('not a Mem0 export: no list of memories (a list, or {"results": [...]})')
    found = []
    for number, item in enumerate(items, start=1):
        text = item.get("memory") if isinstance(item, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise UsageError(f"memory {number}: no `memory` text")
        metadata = _flat(item.get("metadata") or {})
        metadata |= {
            ours: str(item[theirs]) for theirs, ours in MEM0_IDS.items() if item.get(theirs)
        }
        if isinstance(item.get("categories"), list):
            metadata["categories"] = [str(c) for c in item["categories"]]
        found.append(
            BatchDocument(
                content=text, id=f"mem0-{item['id']}" if item.get("id") else None,
                metadata=metadata, date=item.get("created_at") or None,
            )
        )  # fmt: skip
    return found


def _texts(data: bytes) -> list[BatchDocument]:
    found = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            given = msgspec.json.decode(line, type=str | TextLine)
        except msgspec.MsgspecError as err:
            raise UsageError(f"line {number}: {err}") from None
        if isinstance(given, str):
            given = TextLine(text=given)
        if not given.text.strip():
            raise UsageError(f"line {number}: an empty text")
        found.append(
            BatchDocument(
                content=given.text, date=given.date, metadata=_flat(given.metadata) or None
            )
        )
    return found


def _flat(metadata: object) -> dict[str, Any]:
    """What smem's metadata holds (strings, numbers, booleans, lists of strings); the rest, a
    nested object say, as its JSON text."""
    if not isinstance(metadata, dict):
        return {}
    flat: dict[str, Any] = {}
    for key, value in metadata.items():
        scalar = isinstance(value, str | int | float | bool)
        strings = isinstance(value, list) and all(isinstance(v, str) for v in value)
        flat[str(key)] = value if scalar or strings else msgspec.json.encode(value).decode()
    return flat
