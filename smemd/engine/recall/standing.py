"""Standing preferences and instructions, and the requests that want them.

"I strictly avoid gluten" and "from now on, add type hints to every function" are said once and
wanted later by a request that names neither: "What restaurants in Rome would you recommend?",
"Write a function that merges two sorted lists." The request shares few words and little meaning
with the preference it should honour, so neither BM25 nor the embedder ranks it; what marks the
preference is its form — someone saying what they always, never, prefer or want done — and what
marks the request is that it asks for something new (advice, a plan, code), not for something
said before ("what did you recommend", "remind me"). Measured on evidence recall over chit-chat,
assistant chats, mentoring dialogues and preference requests (README: Benchmarks).
"""

from __future__ import annotations

import functools
import re

from smemd.engine.recall.orders import orders_standing
from smemd.engine.recall.speakers import ASSISTANT_ROLES, asks_what_was_said, may_name_someone

# A request for something new: advice, ideas, a plan, a piece of work.
_ASKED_WORK = (
    r"write|create|implement|make|build|design|plan|draft|give|generate|list|show|explain|help|"
    r"review|refactor|fix|debug|optimi[sz]e|improve|rewrite|convert|translate|summari[sz]e|"
    r"outline|describe|teach|suggest|recommend|propose|sketch|set up|tell me"
)
# "What's the best way to…", "what would be a good structure for…": asked of the listener.
_BEST_WAY = (
    r"what(?:'s| is| would be) (?:a |an |the )?(?:best|good|better|right|ideal|easiest|simplest) "
    r"(?:way|approach|option|structure|method|practice|tool|library) (?:to|for)\b"
)
_REQUEST = re.compile(
    r"\b(?:recommend\w*|suggest\w*|ideas?|tips|advice|advise|help me|insights?|options|"
    r"what are (?:some|the best|good)|ways? to|should i|to consider|do you think|"
    r"(?:what|which|how) (?:should|could|can|would|do) (?:i|we)|"
    rf"{_BEST_WAY}|"
    rf"(?:can|could|would) you (?:\w+ )?(?:{_ASKED_WORK}|put together|come up)|"
    rf"^(?:please )?(?:how to|{_ASKED_WORK})|"
    r"(?:i need|i want|i'd like|i would like) (?:a|an|some|help|you to)|"
    r"looking for|any (?:good |other )?(?:options|places|ways|suggestions|recommendations))\b"
)
# A request is the asker's own: it speaks to the assistant, of the asker, or is an order ("What
# advice does Caroline give?" asks about a conversation, not for advice).
_ADDRESSED = re.compile(
    r"\b(?:you|your|i|i'm|i've|i'd|me|my|we|our|us)\b|^(?:please )?[a-z]+ (?:a|an|me|some)\b|"
    rf"^(?:any|how to)\b|^{_BEST_WAY}"
)
# Asked of no one in particular: "What are some fun activities to do in the Maldives?", "What's a
# good hotel to stay at in Bali?". Such a question is a request only when it says nothing of
# someone else (a name, save a place's or an occasion's: _NO_ONES_NAME; "he", "their") nor
# of what was done: "What are some foods that Audrey likes eating?" asks about a conversation.
_ASKED_OF_ANYONE = re.compile(
    r"^[\"']?what(?:'s| is| are| would be) (?:some|a few|the best|the top|the most|a good|good|"
    r"some good|a great|great)\b"
)
# ("did", "was" and the like are _RECALLS', tested first.)
_SOMEONE_ELSE = re.compile(
    r"\b(?:he|she|his|her|hers|him|they|their|them|does|has|said|told|mention\w*|talk\w*|"
    r"discuss\w*)\b"
)
# Capitalised and no one's: a place's name after "in", "to", "at" or "visiting", an occasion's
# ("Mother's Day", "New Year's Eve", "Christmas").
_NO_ONES_NAME = re.compile(
    r"\b(?:in|to|at|visiting) (?:the )?(?:[A-Z][\w'-]*[\s,.?!]*)+|"
    r"\b(?:[A-Z][\w'\u2019-]* )+(?:Day|Eve)\b|"
    r"\b(?:Christmas|Thanksgiving|Halloween|Easter|Hanukkah|Diwali|Ramadan|Eid|Passover|"
    r"Lunar New Year|New Year)\b"
)
# Asking back for what was said or done: not a request for something new.
_RECALLS = re.compile(
    r"\b(?:remind me|remember|previous(?:ly)?|earlier|last time|before|again|did|was|were|had)\b"
)
# Someone saying what they like, avoid, always or never do: the verb in the present after "I"
# ("I strictly avoid gluten"; not "I'd like to try", which wants once, nor "see what I enjoy"),
# a preference they have, a choice that turns the others down, or an order that stands
# (smemd.engine.recall.orders).
# Recall tests every candidate of a request, so the patterns open on a letter, not a word
# boundary, which lets the regex engine skip ahead (a quarter of the time): the boundary and the
# word before are checked after a match.
_ADVERB = r"(?:\w+ly |really |also |just |still |much |generally |always |never |only )?"
_FIRST_PERSON = re.compile(
    rf"(?:i|we)(?: {_ADVERB}(?:prefer|hate|dislike|"
    r"(?:like|love|enjoy)(?! the (?:idea|sound|look|way|suggestion))|detest|despise|avoid|"
    r"stick to|adhere to|stay away from|steer clear of|only|always|never|refuse|follow|"
    r"(?:must|have to|need to) (?:always |never |only )?(?:avoid|stay away from|stick to)|"
    r"(?:don't|do not|can't|cannot|won't|will not) (?:\w+ )?(?:eat|drink|consume|use|wear|like|"
    r"love|enjoy|want|stand|go|do|buy|consider|touch|watch|listen|read|play|stay)|"
    r"(?:learn|work|study|focus|sleep) best)|"
    # "I'd prefer to avoid…": a preference, where "I'd like to…" wants something once.
    rf"(?:'d| would) {_ADVERB}prefer)\b"
)
_CLAUSE_OPENERS = frozenset({"what", "which", "whether", "if"})  # "see what I enjoy"
# "…, which I prefer to avoid" is no question of what one enjoys: it says so of what went before.
_SAYS_OF_WHAT_WENT_BEFORE = ", which "
# The other forms each need one of these words: a text with none is not searched.
_OTHER_WORDS = (
    "prefer", "aversion", "dislike", "allerg", "intoleran", "objection", "phobia", "fear",
    "i'm", "i am", "rather", "my thing", "my style", "my cup", "my liking", "my taste", "my needs",
    "important", "essential", "a must", "dealbreaker", "fit", "suit", "align", "appeal",
    "work for",
)  # fmt: skip
_OTHER = re.compile(
    r"\b(?:(?:my|a|an) (?:\w+ ){0,2}(?:preference|aversion|dislike|allergy|intolerance|"
    r"objection|phobia|fear of)|"
    r"(?:i'm|i am) (?:\w+ )?(?:allergic|intolerant|vegan|vegetarian|not a fan|a fan|"
    r"uncomfortable with|not (?:\w+ )?(?:keen|into))|"
    r"i'd rather|(?:not|\w+n't) (?:really )?my (?:thing|style|cup of tea)|"
    r"for my (?:liking|tastes?|needs)|(?:important|essential|a must|a dealbreaker) (?:to|for) me|"
    r"(?:doesn't|don't|do not|does not) (?:\w+ )?(?:fit|suit|align with|appeal to|work for) "
    r"(?:me|my))\b"
)
# An assistant saying back what the user chose or wants from now on: "Understood, the synthetic
# parka is a great choice", "Got it, I'll keep my answers short from now on", "I understand your
# preference for…". Only at the opening of what it says, after its name.
_ACKNOWLEDGED = re.compile(
    r"(?:[\w ]{1,40}: )?(?:understood|noted|got it|sure thing|will do|sounds good|i understand)"
    r"\b.{0,160}?\b(?:your preference|(?:a|an) (?:\w+ ){0,3}choices?|"
    r"it is[.!]|from now on|going forward|in the future|i'll (?:always|make sure|keep|remember))",
    re.DOTALL,
)
# A choice that turns the others down: "I'll go with the Fairphone. The other options…", the
# choice first. Two searches, not one with a look ahead: that would read the rest of the text
# again at each "I'll take".
_CHOOSES = re.compile(
    r"i(?:'ll| will|'d| would) (?:\w+ )?(?:go with|go for|take|choose|pick|opt for)\b"
)
_OTHERS_DOWN = re.compile(
    r"\bthe other (?:options?|ones|choices)\b|"
    r"\bthe others (?:seem|sound|look|are|aren't|don't|do not|have|contain)\b"
)


def asks_for_something_new(query: str) -> bool:
    """Whether a query asks for advice, a plan or a piece of work, which what someone prefers
    or told the assistant to do should shape."""
    folded = query.casefold().replace("\u2019", "'")
    if _RECALLS.search(folded) or asks_what_was_said(folded):
        return False
    if _REQUEST.search(folded) and _ADDRESSED.search(folded):
        return True
    return bool(
        _ASKED_OF_ANYONE.search(folded) and not _SOMEONE_ELSE.search(folded)
        and not may_name_someone(_NO_ONES_NAME.sub(" ", query))
    )  # fmt: skip


# A request tests each of its candidates, and the next request in a namespace tests most of them
# again: what a text states does not change, so the latest answers are kept.
@functools.lru_cache(maxsize=4096)
def states_standing(text: str, speaker: frozenset[str]) -> bool:
    """Whether a passage says what someone prefers, always or never does, or wants done; an
    assistant's "always back up first" is advice, not a preference of the user's, but its
    "Understood, I'll keep answers short from now on" says the user's again."""
    folded = text.casefold().replace("\u2019", "'")
    if not speaker.isdisjoint(ASSISTANT_ROLES):
        return bool(_ACKNOWLEDGED.match(folded))
    for said in _FIRST_PERSON.finditer(folded):
        before = folded[max(0, said.start() - 12) : said.start()]
        if before[-1:].isalnum() or before[-1:] in ("'", "_"):
            continue  # inside a word: "hi ", "sweet "
        opens_a_clause = not _CLAUSE_OPENERS.isdisjoint(before.split()[-1:])
        if opens_a_clause and not before.endswith(_SAYS_OF_WHAT_WENT_BEFORE):
            continue
        return True
    if any(word in folded for word in _OTHER_WORDS) and _OTHER.search(folded):
        return True
    chose = _CHOOSES.search(folded) if "other" in folded else None
    if chose and _OTHERS_DOWN.search(folded, chose.end()):
        return True
    return orders_standing(folded)
