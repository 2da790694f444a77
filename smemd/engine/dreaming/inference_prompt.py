"""What the model is asked to write an inference from a few memories, and how its reply is read.

One schema-constrained chat: the memories numbered, the answer `{"inference": text or null,
"uses": [numbers]}`. An inference counts only when it is new text and uses two memories at
least; anything else (null, one memory, numbers that name none, a reply that is not the
object) is no inference, logged, never an error: a small model's nonsense is not a failure.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Protocol

import msgspec

from smemd.engine.judgement.letter_judge import one_line
from smemd.fleet.llama import Chat, Message

log = logging.getLogger("smemd.dreaming")

MAX_TOKENS = 256

SYSTEM = """\
You draw inferences from memories. Given numbered memories, write one new fact that follows \
from two or more of them taken together and that none of them states alone, e.g. from "Alex \
works at a hospital" and "Alex's shifts are at night": "Alex works night shifts at a hospital". \
Write it as one self-contained sentence that names the people and things. Do not guess: when \
nothing follows from two or more memories together, answer null.
Answer with the JSON object alone: "inference" (the sentence, or null) and "uses" (the numbers \
of the memories it needs)."""


class Chatter(Protocol):
    """What writing needs of a model: LlamaClient, or a lane that picks the node."""

    def chat(
        self, messages: Sequence[Message], *, max_tokens: int,
        json_schema: Mapping[str, Any] | None = None, timeout: float | None = None,
    ) -> Awaitable[Chat]: ...  # fmt: skip


class Inference(msgspec.Struct, frozen=True):
    text: str
    uses: tuple[int, ...]  # indexes into the memories given, two at least, in order


class _Reply(msgspec.Struct, frozen=True):
    inference: str | None = None
    uses: list[int] = []


def inference_schema(count: int) -> dict[str, Any]:
    """The JSON schema of a reply about `count` memories."""
    number = {"type": "integer", "minimum": 1, "maximum": count}
    sentence = {"type": "string", "minLength": 1, "maxLength": 300}
    return {
        "type": "object",
        "properties": {
            "inference": {"anyOf": [sentence, {"type": "null"}]},
            "uses": {"type": "array", "items": number, "maxItems": count},
        },
        "required": ["inference", "uses"],
        "additionalProperties": False,
    }


def build_messages(memories: Sequence[str]) -> list[Message]:
    numbered = "\n".join(f"[{i + 1}] {one_line(text)}" for i, text in enumerate(memories))
    user = f"Memories:\n{numbered}\n\nWhat follows from two or more of them together?"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


async def write_inference(
    model: Chatter,
    memories: Sequence[str],
    *,
    timeout: float | None = None,  # noqa: ASYNC109
) -> Inference | None:
    """The model's inference from the memories, or None."""
    chat = await model.chat(
        build_messages(memories), max_tokens=MAX_TOKENS,
        json_schema=inference_schema(len(memories)), timeout=timeout,
    )  # fmt: skip
    return read_inference(chat.content, memories)


def read_inference(content: str, memories: Sequence[str]) -> Inference | None:
    try:
        reply = msgspec.json.decode(content, type=_Reply)
    except msgspec.DecodeError as err:
        # Its size, never its words: a reply restates the memories.
        log.info("inference reply of %d characters skipped: %s", len(content), err)
        return None
    text = " ".join((reply.inference or "").split())
    uses = tuple(sorted({n - 1 for n in reply.uses if 1 <= n <= len(memories)}))
    if not text or len(uses) < 2:
        log.info("no inference from %d memories (uses %s)", len(memories), list(reply.uses))
        return None
    if text.casefold() in {one_line(m).casefold() for m in memories}:
        log.info("inference of %d characters repeats a memory", len(text))
        return None
    return Inference(text, uses)
