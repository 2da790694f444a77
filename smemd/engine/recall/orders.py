"""Standing orders: what someone tells another to do from now on, as an order.

"Always include comments in the code you give me", "In future answers, avoid jargon", "When
naming functions, start them with 'a_'": said once to an assistant or a colleague, and wanted
by every later request for work, which names none of it. What marks the order is its form: an
imperative that opens its clause, said with "always", "never" or "only", or in a sentence that
says it recurs ("every time", "from now on", "in your replies", "the code you write"), or asked
to stand ("you should always", "I want all answers…"). An order without such a word ("Add a
docstring to this") wants it done once. Measured on evidence recall over mentoring dialogues and
preference requests (README: Benchmarks).

Recall tests every candidate passage of a request: each pattern opens on a letter, not a word
boundary, so that the regex engine skips ahead, and a text with none of the anchors is not
searched; where a match stands in its clause is checked after it.
"""

from __future__ import annotations

import re

# The verbs of an order about how work is done.
_ORDER_VERB = (
    r"(?:use|include|add|write|format|keep|make|show|give|put|start|begin|end|avoid|stick|"
    r"follow|explain|provide|respond|reply|answer|list|cite|mention|comment|document|return|"
    r"check|handle|structure|limit|be|stay|refer|label|sort|present|convert|round|display|"
    r"indent|wrap|separate|highlight|prefix|append|capitali[sz]e|spell|stop|skip|omit|leave|"
    r"prioriti[sz]e|focus|assume|treat|annotate|test|log|validate|name|call|express|import|"
    r"define|declare|set|pass|raise|catch)"
)
_ALWAYS_ORDER = re.compile(rf"(?:always|never|only) {_ORDER_VERB}\b")
_ORDER = re.compile(rf"{_ORDER_VERB}\b")
# What may stand between a clause's opening and its order: "please", "remember to", "don't".
_LEAD_IN = re.compile(
    r"(?:(?:please|kindly|also|just|so|oh|ok|okay|then|remember to|be sure to|try to|"
    r"make sure(?: to| that you| you)?|don't|do not|ever) *)*$"
)
# What an order is about: the work it shapes.
_WORK_WORDS = (
    "code", "answer", "response", "reply", "replies", "example", "snippet", "function", "script",
    "explanation", "output", "message", "email", "suggestion", "recommendation", "solution",
)  # fmt: skip
_WORK = rf"(?:{'|'.join(_WORK_WORDS)})s?"
# Words that say an order recurs; flat, each alternative opening on its own letters.
_RECURRING = re.compile(
    r"every ?time|each ?time|any ?time|whenever|from now on|going forward|in the future|"
    rf"in future|future {_WORK}|by default|at all times|(?:all|any|each) (?:of )?(?:your )?{_WORK}|"
    rf"every (?:one of )?(?:your )?{_WORK}|in (?:all |any |every )?(?:of )?your {_WORK}|"
    r"you (?:write|give|provide|show|send|suggest|generate|create|produce)\b"
)
# An order asked to stand.
_STANDING_ASK = re.compile(
    r"should always|should never|must always|must never|needs? to always|needs? to never|"
    r"ha(?:s|ve) to always|ha(?:s|ve) to never|you always|you never|you please always|"
    r"(?:like|want|need) (?:all|every|each|any) |"
    r"when you (?:write|show|give|provide|explain|answer|respond|reply|suggest|recommend|create|"
    r"generate|list|code)\b|"
    r"when (?:naming|writing|creating|defining|declaring|formatting|coding|adding)\b"
)
# A rule for what comes after, said as such, with or without an order after it.
_RULE = re.compile(
    r"from now on\b|going forward\b|make sure (?:that )?you\b|i'd like you to\b|"
    r"i (?:\w+ )?want you to\b|whenever you\b|please (?:always|never|use|avoid|start|end|"
    r"include|add)\b"
)
# "… you always" is asked of the listener ("can you always…", not "you always know"); "… like
# all" is wanted by the speaker ("I'd like all…", not "if you like all of them").
_ASKED_OF_YOU = re.compile(r"(?:can|could|would|will) $")
_WANTED_BY_ME = re.compile(r"\bi(?:'d| would)? (?:\w+ )?$")
# Each form of a standing order needs one of these: a text with none is not searched.
_ANCHORS = (
    "always", "never", "only ", "every", "each time", "any time", "anytime", "whenever",
    "now on", "forward", "future", "default", "at all times", "i want", "i'd like",
    "i would like", "i need", "when ", "make sure", "you to", "please", *_WORK_WORDS,
)  # fmt: skip
_SENTENCE_ENDS = ".!?\n"


def orders_standing(folded: str) -> bool:
    """Whether a (case-folded) text gives an order that stands: a rule said as such ("from now
    on", "whenever you", "please always"); one said with "always", "never" or "only"; one asked
    to stand ("you should always", "can you always", "I want all…", "when you write code…",
    "when naming…"); or an order in a sentence that says it recurs ("every time", "in your
    answers", "the code you write")."""
    if not any(anchor in folded for anchor in _ANCHORS):
        return False
    if any(_starts_word(folded, m.start()) for m in _RULE.finditer(folded)):
        return True
    if any(_opens_clause(folded, m.start()) for m in _ALWAYS_ORDER.finditer(folded)):
        return True
    if any(_asked_to_stand(folded, m) for m in _STANDING_ASK.finditer(folded)):
        return True
    for recurring in _RECURRING.finditer(folded):
        if not _recurs(folded, recurring):
            continue
        start = max(folded.rfind(end, 0, recurring.start()) for end in _SENTENCE_ENDS) + 1
        ends = [folded.find(end, recurring.end()) for end in _SENTENCE_ENDS]
        stop = min((i for i in ends if i >= 0), default=len(folded))
        if any(_opens_clause(folded, m.start()) for m in _ORDER.finditer(folded, start, stop)):
            return True
    return False


def _asked_to_stand(folded: str, asked: re.Match[str]) -> bool:
    at, said = asked.start(), asked.group()
    if not _starts_word(folded, at):
        return False
    before = folded[max(0, at - 24) : at]
    if said.startswith("you "):
        return bool(_ASKED_OF_YOU.search(before))
    if said.startswith(("like ", "want ", "need ")) and not said.startswith("need to"):
        return bool(_WANTED_BY_ME.search(before))
    return True


def _recurs(folded: str, recurring: re.Match[str]) -> bool:
    """Whether the words say the order recurs: "the code you write", not "can you write"."""
    at = recurring.start()
    if not _starts_word(folded, at):
        return False
    if not recurring.group().startswith("you "):
        return True
    words = folded[max(0, at - 24) : at].split()[-2:]  # "code you", "code that you"
    return any(w in _WORK_WORDS or w.removesuffix("s") in _WORK_WORDS for w in words)


def _starts_word(folded: str, at: int) -> bool:
    return not at or not (folded[at - 1].isalnum() or folded[at - 1] in "'_-")


def _opens_clause(folded: str, at: int) -> bool:
    """Whether the words at `at` open a clause: the text's start, or after punctuation, with
    only a lead-in ("please", "remember to") between."""
    if not _starts_word(folded, at):
        return False
    before = folded[max(0, at - 48) : at]
    lead_in = _LEAD_IN.search(before)
    assert lead_in is not None  # it matches nothing at the end
    before = before[: lead_in.start()].rstrip()
    return (not before and at <= 48) or before[-1:] in ".!?,;:(\n"
