"""The letter-probability judge: one multiple-choice question, answered by reading probabilities.

The options are offered as single capital letters, one token is generated under a grammar that
allows only those letters, and each letter's probability is read from `top_logprobs` at position
0. Those are the model's probabilities before the grammar, so the decision is their argmax (or
undecided under a threshold), never the sampled token. Single capitals because each is one token
in every byte-level BPE or SentencePiece vocabulary (single ASCII characters are base entries),
so no letter's first token is shared with another's; words ("duplicate"/"distinct") or numbers
past 9 ("1"/"10") can share one, and then one token cannot tell the options apart. A batch
asks the same question of several numbered items in one call: a letter each, spaced so each has a
position of its own, read there.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Protocol

import msgspec

from smemd.fleet.llama import Chat, Message, TokenLogprob

log = logging.getLogger("smemd.judge")

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
TOP_LOGPROBS = 20  # llama-server's default; the letters may rank far down before the grammar
# Below this share of the model's probability the letters were not what it meant to say (the
# grammar forced one): renormalising would turn that into false confidence.
MIN_MASS = 0.01
DEFAULT_THRESHOLD = 0.5
SYSTEM = (
    "You answer multiple-choice questions with the letter of the best option, and nothing else."
)


class ChatClient(Protocol):
    """What the judge needs of a llama-server client (LlamaClient, or a lane in front of one)."""

    async def chat(
        self, messages: Sequence[Message], *, max_tokens: int, grammar: str | None = None,
        top_logprobs: int | None = None, timeout: float | None = None,  # noqa: ASYNC109
    ) -> Chat: ...  # fmt: skip


class Question(msgspec.Struct, frozen=True, kw_only=True):
    """A question of one kind ("reconcile", "type", …) and its options, lettered A, B, … in order."""

    kind: str
    text: str
    options: list[str]


class Batch(msgspec.Struct, frozen=True, kw_only=True):
    """One question put to several items in one call: the same options, one letter per item."""

    kind: str
    text: str  # the question, asked of each numbered item
    items: list[str]
    options: list[str]


class Judgement(msgspec.Struct, frozen=True, kw_only=True):
    """Each letter's probability renormalised over the letters; `choice` None when undecided.

    `pick` is the best letter whatever the threshold (None when the letters held too little of
    the model's probability to mean anything): calibration re-weighs picks under new thresholds.
    """

    question_kind: str
    options: list[str]
    probabilities: dict[str, float]
    choice: str | None
    pick: str | None = None
    raw_top: dict[str, float]  # the top tokens at position 0 as the server listed them
    missing: list[str] = []  # letters in no variant among the top tokens: probability 0
    mass: float = 0.0  # the letters' share of the model's probability, before renormalising

    @property
    def index(self) -> int | None:
        return None if self.choice is None else LETTERS.index(self.choice)


def letters_for(count: int) -> str:
    """The first `count` letters; two at least, since one option is no question."""
    if not 2 <= count <= len(LETTERS):
        raise ValueError(f"a judge question takes 2 to {len(LETTERS)} options, not {count}")
    return LETTERS[:count]


def grammar_for(letters: str) -> str:
    """llama.cpp GBNF that allows exactly one of the letters."""
    return "root ::= " + " | ".join(f'"{letter}"' for letter in letters)


def batch_grammar(letters: str, count: int) -> str:
    """`count` letters separated by single spaces: a space keeps two letters from merging into
    one token ("AB" is a token in many vocabularies), so each letter has a position of its own."""
    item = " | ".join(f'"{letter}"' for letter in letters)
    rest = ' " " item' * (count - 1)
    return f"root ::= item{rest}\nitem ::= {item}"


def one_line(text: str) -> str:
    """Whitespace collapsed, so quoted text cannot start a line that looks like an option."""
    return " ".join(text.split())


def render(question: Question) -> list[Message]:
    letters = letters_for(len(question.options))
    lines = [
        f"{letter}. {one_line(option)}"
        for letter, option in zip(letters, question.options, strict=True)
    ]
    ask = f"Answer with one letter: {', '.join(letters[:-1])} or {letters[-1]}."
    content = "\n".join([question.text.strip(), "", *lines, "", ask])
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}]


def render_batch(batch: Batch) -> list[Message]:
    letters = letters_for(len(batch.options))
    items = [f"{n}. {one_line(item)}" for n, item in enumerate(batch.items, 1)]
    options = [
        f"{letter}. {one_line(option)}"
        for letter, option in zip(letters, batch.options, strict=True)
    ]
    count = len(batch.items)
    ask = (
        f"Answer with {count} letters ({', '.join(letters)}), one for each numbered item in"
        " order, separated by spaces."
    )
    content = "\n".join([*items, "", batch.text.strip(), "", *options, "", ask])
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}]


def read_letters(
    first: TokenLogprob | None, letters: str
) -> tuple[dict[str, float], dict[str, float]]:
    """Each letter's raw probability at one generated position (variants summed), and the top
    list itself; all 0 without a position."""
    raw_top: dict[str, float] = {}
    found = dict.fromkeys(letters, 0.0)
    if first is None:
        return found, raw_top
    for top in first.top_logprobs:
        p = math.exp(top.logprob)
        raw_top[top.token] = raw_top.get(top.token, 0.0) + p
        # " A" and "A" are different tokens for the same answer; "a" (the article) is not it.
        if (letter := top.token.strip()) in found:
            found[letter] += p
    # The generated token's own probability (also before the grammar) is known even when it
    # ranks below the top list: a reading the top list lacks.
    if first.token in found and first.token not in raw_top:
        found[first.token] += math.exp(first.logprob)
    return found, raw_top


def letter_positions(chat: Chat, letters: str, count: int) -> list[TokenLogprob | None]:
    """The generated position of each of `count` letters, in order. A token that carries two
    letters (or a letter and more) gives neither a reading of its own: None for those, so the
    later letters stay aligned with their items."""
    found: list[TokenLogprob | None] = []
    for position in chat.logprobs:
        words = position.token.split()
        if len(words) == 1 and words[0] in letters:
            found.append(position)
        else:
            found.extend(None for word in words if any(c in letters for c in word))
    return (found + [None] * count)[:count]


class Judge:
    """Asks a lettered question per call (or one per item of a batch); thresholds per question
    kind, else `threshold`.

    Undecided when the best letter's renormalised probability is under the threshold, ties the
    runner-up, or the letters hold under `min_mass` of the model's probability.
    """

    def __init__(
        self, client: ChatClient, *, threshold: float = DEFAULT_THRESHOLD,
        thresholds: Mapping[str, float] | None = None, min_mass: float = MIN_MASS,
        top_logprobs: int = TOP_LOGPROBS, timeout: float | None = None,
    ) -> None:  # fmt: skip
        self.client = client
        self.threshold = threshold
        self.thresholds = dict(thresholds or {})
        self.min_mass = min_mass
        self.top_logprobs = top_logprobs
        self.timeout = timeout

    def threshold_for(self, kind: str) -> float:
        return self.thresholds.get(kind, self.threshold)

    async def decide(self, question: Question) -> Judgement:
        letters = letters_for(len(question.options))
        chat = await self.client.chat(
            render(question), max_tokens=1, grammar=grammar_for(letters),
            top_logprobs=self.top_logprobs, timeout=self.timeout,
        )  # fmt: skip
        return self.weigh(question, chat)

    async def decide_batch(self, batch: Batch) -> list[Judgement]:
        """One call for many items: one letter each, read at its own position. The letters
        after the first are read given the ones before: still the model's own odds for that item."""
        letters = letters_for(len(batch.options))
        count = len(batch.items)
        chat = await self.client.chat(
            render_batch(batch), max_tokens=2 * count, grammar=batch_grammar(letters, count),
            top_logprobs=self.top_logprobs, timeout=self.timeout,
        )  # fmt: skip
        return [
            self.weigh_at(Question(kind=batch.kind, text=item, options=batch.options), position)
            for item, position in zip(
                batch.items, letter_positions(chat, letters, count), strict=True
            )
        ]

    def weigh(self, question: Question, chat: Chat) -> Judgement:
        """The judgement a one-letter reply gives."""
        return self.weigh_at(question, chat.logprobs[0] if chat.logprobs else None)

    def weigh_at(self, question: Question, position: TokenLogprob | None) -> Judgement:
        """Argmax of the renormalised letters at a position, if sure enough."""
        letters = letters_for(len(question.options))
        found, raw_top = read_letters(position, letters)
        mass = math.fsum(found.values())
        probabilities = {k: (p / mass if mass > 0 else 0.0) for k, p in found.items()}
        ranked = sorted(probabilities.values(), reverse=True)
        best = max(probabilities, key=probabilities.__getitem__)
        # A tie is no decision, whatever the threshold says.
        sure = ranked[0] >= self.threshold_for(question.kind) and ranked[0] > ranked[1]
        pick = best if mass > 0 and mass >= self.min_mass else None
        judgement = Judgement(
            question_kind=question.kind,
            options=list(question.options),
            probabilities=probabilities,
            choice=pick if sure else None,
            pick=pick,
            raw_top=raw_top,
            missing=[k for k, p in found.items() if p == 0.0],
            mass=mass,
        )
        log.info(
            "judge %s: %s -> %s (letters' mass %.3f, missing %s)",
            question.kind,
            " ".join(f"{k}={p:.3f}" for k, p in probabilities.items()),
            judgement.choice or "undecided",
            mass,
            ",".join(judgement.missing) or "none",
        )
        return judgement
