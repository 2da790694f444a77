"""Candidate facts without an LLM: sentences that carry content, cleaned, deduped and classified."""

from __future__ import annotations

import re
from typing import Literal

FactKind = Literal["fact", "preference", "episode"]

_RSQUO, _RDQUO, _LSQUO, _LDQUO = "\u2019", "\u201d", "\u2018", "\u201c"
_CLOSERS = "\"')]" + _RDQUO + _RSQUO  # may follow a sentence's final punctuation
_OPENERS = "\"'([" + _LDQUO + _LSQUO

_BULLET = re.compile(r"^\s*(?:>\s*)*(?:[-*+•]|\d{1,3}[.)])\s+")
_QUOTE_PREFIX = re.compile(r"^\s*(?:>\s*)+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s|$)")
_FENCE = re.compile(r"^\s{0,3}(?:```|~~~)")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")  # [text](url) and ![alt](src) keep only the text
EMPHASIS = re.compile(r"\*\*|__|`")  # left out of a fact: bold, and code marks
# "Hey Mel, ..." / "Hi! ..." opens a sentence without being part of what it says.
_VOCATIVE = re.compile(r"^(?:hi|hey|hello|hiya)(?:\s+[A-Z][\w'-]*)?\s*[,!]\s+", re.IGNORECASE)
# A sentence ends at . ! ? or an ellipsis, maybe inside a closing quote or bracket, before space.
_END = re.compile(rf"([.!?…]+)([{re.escape(_CLOSERS)}]*)\s+")
_WORD = re.compile(rf"[^\W_][\w'{_RSQUO}.-]*")  # any script: "Café", "東京"
_INITIALS = re.compile(r"[a-z]\.|(?:[a-z]\.){2,}")  # "J.", "U.S.", "p.m."
_LAUGH = re.compile(r"(?:ha|he)+h?|lo+l|lma+o+")
_STRETCHED = re.compile(r"([^\W\d_])\1{2,}")  # a letter three times or more in a row

# Never sentence ends: titles and Latin abbreviations are almost always followed by more sentence.
_ABBREVIATION_WORDS = (
    "mr. mrs. ms. dr. prof. st. jr. sr. vs. no. fig. mt. inc. ltd. co. e.g. i.e. cf."
)
_ABBREVIATIONS = frozenset(_ABBREVIATION_WORDS.split())
# Sentence ends only before a capital: as common at the end of a sentence as inside one.
_AMBIGUOUS = frozenset(["etc.", "a.m.", "p.m."])

# Words that carry no memory on their own: greetings, interjections, pronouns, auxiliaries and
# the small talk of chat. A sentence made only of these ("Good to see you!") is dropped.
_CHATTER_WORDS = """
    hi hey hello hiya yo greetings morning evening afternoon night bye goodbye cya see soon later
    ok okay k kk sure yes yeah yep yup no nope nah alright fine right well oh ah um uh hmm wow whoa
    thanks thank thx ty cheers please sorry welcome congrats congratulations luck care take wait
    lol lmao rofl omg xd nice cool great awesome amazing wonderful good glad happy here there
    sounds sound seems makes sense totally really so very too much lot just indeed absolutely
    definitely i me my you your we us our it its that that's this it's i'm you're what's how's
    is am are was were be been do does did have has had will would can could get got one way
    a an the to of and or but for with at on in again all love like agree true same exactly
    interesting fun funny cute sweet kind hear know
    ikr np brb ttyl tysm idk tbh smh nvm lmk hbu wbu omw ngl jk fr ya yea yeah ye yay aw aww
    ugh ooh ahh mhm hm huh gosh jeez yikes oops whoa woah dang bruh dude bro xoxo hugs
"""
_CHATTER = frozenset(_CHATTER_WORDS.split())
# Small talk is short: a message past this many characters says something, and a long document
# is never read word by word to find out.
CHATTER_MAX_CHARS = 300
_GREETING = re.compile(
    r"^(?:hi|hey|hello|hiya|yo|thanks|thank you|good (?:morning|night|evening)|bye|goodbye|"
    r"see (?:ya|you)|take care|congrats|congratulations)\b"
)
# A name addressed at the start or end of a sentence ("Yep, Joanna.", "Jon, that's cool!") says
# nothing of its own: it is left out when judging whether the sentence does.
_ADDRESS_END = re.compile(r",\s+[A-Z][\w'-]*(?=[\s.!…]*$)")
_ADDRESS_START = re.compile(r"^([A-Z][\w'-]*),\s+")

# Present-tense liking, wanting or disliking; past forms ("loved") fall through to episodes.
_PREFERENCE = re.compile(
    r"\b(?:likes?|dislikes?|prefers?|favou?rites?|loves?|hates?|enjoys?|wants?|"
    r"wish(?:es)?|can't stand|cannot stand|would rather|fan of)\b",
    re.IGNORECASE,
)
# ... but "like" is also a preposition: "looks like rain", "something like that".
_NOT_LIKING = re.compile(
    r"\b(?:looks?|looked|seems?|seemed|sounds?|sounded|feels?|felt|just|something|anything|"
    r"nothing|things?|more|much|is|was|be)\s+like\b",
    re.IGNORECASE,
)
_DAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
)
_TIME_CUE = re.compile(
    rf"\b(?:yesterday|last (?:night|week|weekend|month|year|summer|winter|spring|fall|autumn)|"
    rf"(?:on|last|this past) {_DAY}|in (?:19|20)\d\d|\w+ (?:days?|weeks?|months?|years?) ago|"
    rf"this morning|earlier today|(?:on|in|last) {_MONTH})\b",
    re.IGNORECASE,
)
# Regular past tense (but not "need", "speed") or a common irregular one.
_PAST = re.compile(
    r"\b(?:\w{2,}[^\We]ed|went|met|saw|was|were|had|did|got|made|took|came|gave|bought|ran|won|"
    r"lost|began|found|told|said|left|flew|drove|ate|wrote|spent|felt|sold|heard|brought|taught)\b",
    re.IGNORECASE,
)


def candidate_facts(text: str) -> list[str]:
    """Sentences of `text` that may be worth remembering, cleaned and deduped in order."""
    facts: list[str] = []
    seen: set[str] = set()
    for sentence in _sentences(text):
        sentence = _VOCATIVE.sub("", " ".join(sentence.split()))
        if not _is_content(sentence):
            continue
        key = sentence.rstrip(".!…").casefold()  # "Alex likes tea." repeats "alex likes tea"
        if key not in seen:
            seen.add(key)
            facts.append(sentence)
    return facts


def classify(fact: str) -> FactKind:
    """A preference (likes, wants), an episode (a past event with a time cue), or a plain fact."""
    if _PREFERENCE.search(_NOT_LIKING.sub(" ", fact)):
        return "preference"
    if _TIME_CUE.search(fact) and _PAST.search(fact):
        return "episode"
    return "fact"


def _sentences(text: str) -> list[str]:
    """Split into sentences; a line break ends one unless the next line just continues it."""
    segments: list[str] = []
    in_code = False
    for raw in text.replace("\r", "\n").split("\n"):
        if _FENCE.match(raw):
            in_code = not in_code  # code is not prose: nothing inside a fence is a fact
            continue
        if in_code or _HEADING.match(raw) or _TABLE_ROW.match(raw) or not raw.strip():
            segments.append("")  # headings, table rows and blank lines end what came before
            continue
        line = EMPHASIS.sub("", _LINK.sub(r"\1", raw))
        bullet = _BULLET.match(line)
        line = line[bullet.end() :] if bullet else _QUOTE_PREFIX.sub("", line)
        # A hard-wrapped line goes on when the last did not end a sentence and this starts lower.
        previous = segments[-1] if segments else ""
        if previous and not bullet and line[:1].islower() and previous[-1:] not in ".!?…":
            segments[-1] = previous + " " + line.strip()
        else:
            segments.append(line.strip())
    return [s for segment in segments for s in _split_sentences(segment) if s.strip()]


def _split_sentences(text: str) -> list[str]:
    """Cut one line of prose after sentence-ending punctuation, sparing abbreviations."""
    pieces: list[str] = []
    start = 0
    for end in _END.finditer(text):
        punctuation, closing = end.group(1), end.group(2)
        following = text[end.end() : end.end() + 1]
        if punctuation == ".":
            token = text[: end.end(1)].rsplit(None, 1)[-1].lstrip(_OPENERS).lower()
            is_abbreviation = token in _ABBREVIATIONS or bool(_INITIALS.fullmatch(token))
            if token in _AMBIGUOUS:
                is_abbreviation = not following.isupper()
            if is_abbreviation:
                continue  # "Dr. Smith", "J. Smith", "the U.S. market", "etc. and more"
        elif punctuation.strip(".") in ("", "…") and not following.isupper():
            continue  # "I was thinking... maybe not" goes on; "Wait... The store" does not
        if closing and following.islower():
            continue  # '"Is it?" he asked.' is one sentence
        pieces.append(text[start : end.end()])
        start = end.end()
    pieces.append(text[start:])
    return pieces


def is_chatter(text: str) -> bool:
    """Whether a message says nothing of its own: every word small talk or laughter ("lol",
    "so cool!", "haha yes", "Thanks, Caroline!"), or no word or number at all (emoji). Code
    says something, and so does anything longer than CHATTER_MAX_CHARS."""
    if len(text) > CHATTER_MAX_CHARS or any(_FENCE.match(line) for line in text.splitlines()):
        return False
    return all(_small_talk(w) for sentence in _sentences(text) for w in _words(sentence))


def _is_content(sentence: str) -> bool:
    """False for questions, small talk and noise; True when a sentence may state something."""
    if sentence.rstrip(_CLOSERS).endswith("?"):
        return False
    words = _words(sentence)
    if not _says_something(words):
        return False
    # Under four words, a greeting's only content is whom it greets: "Hey Mel!", "Thanks Caroline!"
    return not (len(words) < 4 and _GREETING.match(" ".join(words)))


def _words(sentence: str) -> list[str]:
    """The sentence's words, folded, without a name it is addressed to."""
    words = (
        w.replace(_RSQUO, "'").strip(".'").lower() for w in _WORD.findall(_unaddressed(sentence))
    )
    return [w for w in words if w]


def _says_something(words: list[str]) -> bool:
    if not any(ch.isalpha() for w in words for ch in w):
        return False  # rules, emoji, bare numbers
    # Not only "ok", "thanks!", "haha", "sounds good", "wow, that's great"
    return not all(_small_talk(w) for w in words)


def _small_talk(word: str) -> bool:
    if word in _CHATTER or _LAUGH.fullmatch(word):
        return True
    # A chat stretches its words ("yesss", "omgggg", "sooo"): read with a letter's run cut to
    # one, then two ("yesss" -> "yes", "awww" -> "aww").
    if _STRETCHED.search(word) is None:
        return False
    return any(_STRETCHED.sub(run, word) in _CHATTER for run in (r"\1", r"\1\1"))


def _unaddressed(sentence: str) -> str:
    """The sentence without a name it is addressed to ("Yep, Joanna." -> "Yep.")."""
    sentence = _ADDRESS_END.sub("", sentence)
    start = _ADDRESS_START.match(sentence)
    if start and start.group(1).lower() not in _CHATTER:  # "Jon, ..." but not "Wow, ..."
        sentence = sentence[start.end() :]
    return sentence
