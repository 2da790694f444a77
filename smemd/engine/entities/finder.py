"""Names in a fact's text without a model: a chat speaker, capitalised spans not at a sentence's
start, a sentence's first word when it is a name already seen or acts as a subject ("Alex works"),
and possessives ("Alex's"); each with a kind guessed from cues around it.

Precision is worth more than recall here: a wrong entity becomes a row every listing shows, a
missed one is only a memory the entity's profile lacks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from smemd.engine.transcripts import speaker_line

EntityKind = Literal["person", "place", "organisation", "thing"]

# A word, or a piece of punctuation that ends a sentence or breaks a span.
_TOKEN = re.compile(
    r"[^\W\d_][\w&'\u2019.-]*[\w]|[^\W\d_]|\d[\w.,:]*|[.!?]+|[,;:()\"\u201c\u201d\u2014\u2013-]"
)
_POSSESSIVE = re.compile(r"['\u2019]s$")
# Words that may join two capitalised words into one name ("University of Michigan").
_JOINERS = {"of", "de", "du", "van", "von", "da", "del", "la", "le", "&"}
_DAYS = "monday tuesday wednesday thursday friday saturday sunday"
_MONTHS = "january february march april may june july august september october november december"
# Capitalised without being names: pronouns, time words, holidays, family words, nationalities.
_NEVER = set(
    f"""{_DAYS} {_MONTHS} i i'm i've i'll i'd mom dad mum mommy daddy grandma grandpa
    christmas easter thanksgiving halloween ok okay lol omg btw tv
    english french spanish german italian chinese japanese korean american british canadian
    mexican european asian african indian russian god""".split()
)
# Capitalised only because they open a sentence: function words, adverbs, interjections.
_COMMON = set(
    """the a an this that these those it it's its he she they we you me him them us
    he's she's they're we're
    you're there there's here here's what what's who who's when where why how which let's let
    and but or so if then also just yes yeah yep no nope not oh wow hey hi hello thanks thank
    cool nice great awesome sure well maybe yesterday today tomorrow tonight last next every
    some any all my your our their his her after before since while during at in on for with
    to from by as about of sounds sound looks seems definitely really totally absolutely
    good sorry congrats congratulations anyway actually honestly plus still even once lately
    recently now sometimes always never often because although though can could would should
    will did do does is was are were have has had been being am being one two three many most
    other another each both such glad happy love like unfortunately luckily hopefully""".split()
)
# A subject's verb: "Alex lives ...", "Caroline went ...". "is", "was", "has" and "had" follow
# common nouns as often ("Life is", "Work has"): after those, the word must not look like one.
_WEAK_VERBS = {"is", "was", "has", "had"}
_COMMON_NOUNS = set(
    """life work nature music family school art food time love business health money travel
    everything something nothing everyone someone anyone everybody somebody nobody home
    college summer winter spring fall autumn weather dinner lunch breakfast""".split()
)
_NOUN_ENDINGS = ("ing", "ness", "ion", "ment", "ity", "ship", "ism", "ance", "ence")
_VERBS = re.compile(
    r"^(?:is|was|has|had|lives|lived|works|worked|went|goes|said|says|loves|loved|likes|liked|"
    r"wants|wanted|got|gets|made|makes|moved|started|joined|visited|bought|took|told|met|"
    r"plays|played|runs|ran|studies|studied|teaches|taught|and)$"
)
_ORGANISATION = set(
    """inc inc. corp corp. corporation ltd ltd. llc co co. company university college school
    hospital bank church institute foundation club group agency association academy clinic
    museum""".split()
)
_PLACE_WORDS = set(
    "street st road avenue park city lake river mountain beach island county state bay".split()
)
# Words before a person's name: "with Melanie", "told Priya", "Hey Nate", "my friend Dave".
_PERSON_CUES = set(
    """with told tell met meet thanks thank hey hi hello by named friend friends sister
    brother cousin mom dad son daughter wife husband girlfriend boyfriend partner mr mrs ms dr
    , ask asked called""".split()
)
_PLACE_CUES = {"in", "from", "to", "near", "visited", "visit", "visiting"}


@dataclass(frozen=True)
class Found:
    name: str
    kind: EntityKind


def find(text: str) -> list[Found]:
    """The entities `text` names, each once, in the order first named."""
    found: dict[str, Found] = {}
    speaker = speaker_line(text)
    if speaker:
        name = speaker.group(1)
        found[name.lower()] = Found(name, "person")
        text = text[speaker.end() :]
    tokens = _TOKEN.findall(text)
    # A name seen once vouches for the same word opening another sentence.
    known = {name.lower() for name, _, _ in _spans(tokens, set(found))} | set(found)
    for name, before, after in _spans(tokens, known):
        key = name.lower()
        if key not in found:
            found[key] = Found(name, _kind(name, before, after))
    return list(found.values())


def _spans(tokens: list[str], known: set[str]) -> list[tuple[str, str, str]]:
    """(name, word before, word after) for each capitalised span; "and" after a sentence's first
    word stands for the word after it ("Max and I went", not "Perseverance and patience")."""
    spans = []
    start_of_sentence = True
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not _is_capital(token):
            start_of_sentence = token[0] in ".!?" if token else False
            i += 1
            continue
        words = [token]
        j = i + 1
        while j < len(tokens):
            if _is_capital(tokens[j]) and not _POSSESSIVE.search(words[-1]):
                words.append(tokens[j])
            elif tokens[j].lower() in _JOINERS and words[-1].lower() not in _COMMON:
                # "University of Michigan", "Lord of the Rings"
                k = j + 2 if tokens[j + 1 : j + 2] == ["the"] else j + 1
                if k >= len(tokens) or not _is_capital(tokens[k]):
                    break
                words += tokens[j : k + 1]
                j = k
            else:
                break
            j += 1
        before = tokens[i - 1].lower() if i > 0 else ""
        after = tokens[j].lower() if j < len(tokens) else ""
        if after == "and":
            joined = tokens[j + 1] if j + 1 < len(tokens) else ""
            after = "and" if joined == "I" or _is_capital(joined) else ""
        at_start = start_of_sentence
        # Mid-sentence too: a quoted title opens with "The".
        if words[0].lower().rstrip("'\u2019s") in _COMMON | _NEVER:
            words = words[1:]  # "The Beatles", "Yesterday Alex": the rest may still be a name
            while words and (words[0].lower() in _JOINERS or not _is_capital(words[0])):
                words = words[1:]
            at_start = False
        name = _clean(words)
        if name and (not at_start or _vouched(name, words, after, known)):
            owns = bool(_POSSESSIVE.search(words[-1]))
            spans.append((name, before, "'s" if owns else after))
        start_of_sentence = False
        i = j
    return spans


def _vouched(name: str, words: list[str], after: str, known: set[str]) -> bool:
    """A sentence's first word is a name when seen as one elsewhere, when two capitalised words
    make it ("Bob Smith went"), when it owns something ("Alex's"), or when a verb follows."""
    return (
        name.lower() in known
        or len(words) > 1
        # "Life's been" is "Life has been": a common noun's 's is rarely a possessive.
        or (bool(_POSSESSIVE.search(words[-1])) and not _noun_like(name))
        or (bool(_VERBS.match(after)) and (after not in _WEAK_VERBS or not _noun_like(name)))
    )


def _noun_like(word: str) -> bool:
    lower = word.lower()
    return lower in _COMMON_NOUNS or lower.endswith(_NOUN_ENDINGS)


def _clean(words: list[str]) -> str:
    """The span as a name: no possessive, no trailing joiner, nothing that is never a name."""
    while words and words[-1].lower() in _JOINERS:
        words = words[:-1]
    if not words:
        return ""
    words = [*words[:-1], _POSSESSIVE.sub("", words[-1]).rstrip(".")]
    if len(words) == 1 and (words[0].lower() in _NEVER or words[0].lower() in _COMMON):
        return ""
    words = [w for w in words if w.lower() not in _NEVER] if len(words) > 1 else words
    return " ".join(words)


def _is_capital(token: str) -> bool:
    """Capitalised like a name: not an acronym ("BTW", "LGBTQ") nor a lone letter."""
    return (
        len(token) > 1
        and token[0].isupper()
        and not token[1].isupper()
        and token.lower().rstrip("'\u2019s") not in _NEVER
    )


def _kind(name: str, before: str, after: str) -> EntityKind:
    words = name.lower().split()
    if any(w in _ORGANISATION for w in words):
        return "organisation"
    if words[-1] in _PLACE_WORDS or before in _PLACE_CUES:
        return "place"
    # A subject's verb, or a past tense after it ("Sarah adopted"); "and" says nothing of kind.
    acts = (_VERBS.match(after) and after != "and") or (after.endswith("ed") and len(after) > 3)
    if acts or after in (",", "!", "'s") or before in _PERSON_CUES:
        return "person"
    return "thing"


def guess_kind(name: str) -> EntityKind:
    """A name's kind without its sentence: by its own words, else a thing."""
    kind = _kind(name, "", "")
    return kind if kind != "person" or len(name.split()) == 1 else "thing"
