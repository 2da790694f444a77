"""A fact's parts as the heuristic judge reads them: its subject, its values, what it says about
the subject, and whether it states a change or a negation.

Values are what a fact can disagree on that the embedder barely sees: numbers ("two" is 2),
dates and proper names. "Person232 owns 235 kites." and "Person233 owns 236 kites." are
0.975 apart by cosine, and share no value but the kites. Attributes are families of words that
name the same thing about a subject ("lives" and "moved", "works at" and "joined"), so a change
can be recognised when the new fact says it with other words than the old one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import cached_property

from smemd.engine.index.words import STOPWORDS, tokens
from smemd.engine.judgement.vocabulary import (
    ADVERBIAL_OPENINGS,
    ANAPHORS,
    ARTICLES,
    CHANGE_CUES,
    FIRST_PERSON,
    FUNCTION_WORDS,
    LIGHT,
    MONTHS,
    NEGATIONS,
    NOT_COUNTING,
    NUMBER_WORDS,
    PRONOUNS,
    PURE_CUES,
    QUALIFIERS,
    VERBS,
    attributes_of,
)
from smemd.engine.transcripts import speaker_line

_TOKEN = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # an address
    r"|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|\d+(?:,\d{3})*(?:\.\d+)?|[^\W\d_][\w'-]*"
)
# Letters and digits in one word, or an address: a code, a model, a password.
_CODE = re.compile(r"(?=.*\d)(?=.*[^\W\d_])[\w'-]+|.+@.+")
_MONTH = "(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_DAY_MONTH_YEAR = re.compile(
    rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+(?P<year>\d{{4}})\b", re.IGNORECASE
)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+(?P<year>\d{{4}})\b", re.IGNORECASE)
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$", re.IGNORECASE)


@dataclass(frozen=True)
class FactParts:
    """The parts of one fact's text, computed on first use."""

    text: str

    @cached_property
    def words(self) -> list[str]:
        """Dates (as YYYY-MM-DD however written), numbers and words in order; no punctuation."""
        return _TOKEN.findall(_dates_as_iso(self.text))

    @cached_property
    def folded(self) -> list[str]:
        return [w.casefold() for w in self.words]

    @cached_property
    def subject(self) -> tuple[str, ...]:
        """The fact's subject, lowercased.

        Articles are skipped. A leading pronoun is the subject ("I", "she"), and every first
        person is one ("I", "my", "we"). A leading run of capitalised words is a name ("Alex",
        "New York"), and a possessive name takes the next word too ("Alex's sister"). Otherwise
        the subject runs up to and including the first word that is not a possessive or
        demonstrative ("my sister", "meeting" in "The meeting is at 3pm").
        """
        speaker, text = _speaker(self.text)
        if text.startswith("["):  # "[image: a photo of …]": a caption, about no one
            return ()
        words = _TOKEN.findall(_after_adverbial(text))
        while words and words[0].lower() in ARTICLES:
            words = words[1:]
        if not words:
            return ()
        first = words[0].lower()
        if first in ANAPHORS:
            return ()  # "It was fun.": about whatever came before, which the fact does not say
        if first in PRONOUNS and first not in FIRST_PERSON:
            return (first,)
        if first in FIRST_PERSON and first not in ("my", "our"):
            return (speaker, "i") if speaker else ("i",)
        if _is_name(words[0]):
            name = [w.lower() for w in _takewhile_names(words)]
            rest = [w for w in words[len(name) :] if w.lower() not in QUALIFIERS]
            if name[-1].endswith("'s") and rest:
                name.append(rest[0].lower())
            return tuple(name)
        subject: list[str] = [speaker] if speaker and first in ("my", "our") else []
        for word in words:
            lowered = word.lower()
            if lowered in QUALIFIERS:
                continue
            subject.append("i" if lowered in ("my", "our") else lowered)
            if lowered not in FUNCTION_WORDS:
                break
        return tuple(subject)

    @cached_property
    def values(self) -> frozenset[str]:
        """Numbers (digits or words), dates and proper names: capitalised runs not opening it."""
        values: set[str] = set()
        run: list[str] = []
        for i, word in enumerate(self.words):
            if i > 0 and _is_name(word):
                run.append(_without_possessive(word))
                continue
            if run:
                values.add(" ".join(run))
                run = []
            if word[0].isdigit():
                values.add(word.replace(",", ""))  # "1,000" and "1000" are one value
            elif _CODE.fullmatch(word):
                values.add(word.lower())
            elif (ordinal := _ORDINAL.match(word)) is not None:
                values.add(ordinal.group(1))
            elif (number := _number(word, self.folded[i - 1] if i else "")) is not None:
                values.add(number)
        if run:
            values.add(" ".join(run))
        return frozenset(values)

    @cached_property
    def content(self) -> frozenset[str]:
        """What it says of its subject: `said` without the subject's words."""
        subject = {stem for word in self.subject for stem in tokens(word)}
        return self.said - subject

    @cached_property
    def said(self) -> frozenset[str]:
        """Stems of what the fact says, its subject included: no stopwords, values or cues."""
        in_values = {w.lower() for v in self.values for w in v.split()}
        return frozenset(
            term
            for word in self.folded
            if word not in STOPWORDS and word not in in_values and word not in PURE_CUES
            and word not in LIGHT and _number(word, "") is None and not word[0].isdigit()
            and _without_possessive(word) not in in_values
            for term in tokens(word)
        )  # fmt: skip

    @cached_property
    def attributes(self) -> frozenset[str]:
        return frozenset(
            attribute
            for word in self.folded
            for term in tokens(word)
            for attribute in attributes_of(term)
        )

    @cached_property
    def negated(self) -> bool:
        folded = self.folded
        return any(
            w in NEGATIONS or w.endswith("n't") or (w == "longer" and i and folded[i - 1] == "no")
            for i, w in enumerate(folded)
        )

    @cached_property
    def cues(self) -> frozenset[str]:
        """The words in it that say a value changed."""
        return frozenset(w for w in self.folded if w in CHANGE_CUES)

    @cached_property
    def naming(self) -> frozenset[str]:
        """Values inside the subject phrase: which thing it is ("office in Berlin")."""
        end = next((i for i, w in enumerate(self.folded) if w in VERBS), 0)
        head = " ".join(self.words[:end]).lower()
        return frozenset(v for v in self.values if v.lower() in head)

    def mentions(self, value: str) -> bool:
        """Whether the text says `value` anywhere, at the start of a sentence or inside a
        longer name ("Lyon is where…", "Honda Civic" has "Civic"). Numbers and codes must be
        there as they are; names as words."""
        if any(c.isdigit() or c == "@" for c in value):
            return value.casefold() in {_without_possessive(w) for w in self.folded}
        return all(self.says(word) for word in value.split())

    def says_subject_of(self, other: FactParts) -> bool:
        """Every word of the other fact's subject is in this one ("i": any first person)."""
        mine = bool(set(self.folded) & FIRST_PERSON)
        return all((w == "i" and mine) or self.says(w) for w in other.subject)

    def says(self, word: str) -> bool:
        """Whether a word of this fact is `word`, as a stem ("kids'" is "kid", "passwords" is
        "password")."""
        return any(meets(term, mine) for term in tokens(word) for mine in self.stems)

    @cached_property
    def stems(self) -> frozenset[str]:
        return frozenset(tokens(self.text))


def meets(a: str, b: str) -> bool:
    """Two stems are one word when Porter stopped short of one ("allerg", "allergi"): letters
    only, never codes ("person232", "person233")."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return len(short) >= 5 and long.startswith(short) and long.isalpha()


def _number(word: str, before: str) -> str | None:
    """A number written in words ("three", "thirty-four"), else None."""
    if word == "one" and before in NOT_COUNTING:
        return None
    parts = word.split("-")
    if not all(part in NUMBER_WORDS for part in parts):
        return None
    return str(sum(int(NUMBER_WORDS[part]) for part in parts))


def _without_possessive(word: str) -> str:
    return word[:-2] if word.endswith("'s") else word.rstrip("'")


def _dates_as_iso(text: str) -> str:
    """ "12 September 2024", "Sept. 12th, 2024" and "2024-09-12" written alike: one value."""

    def iso(found: re.Match[str]) -> str:
        parts = found.groupdict()
        try:
            day = date(int(parts["year"]), MONTHS[parts["month"].lower()], int(parts["day"]))
        except ValueError:  # "31 February 2024": not a date, left as it is
            return found.group(0)
        return day.isoformat()

    return _DAY_MONTH_YEAR.sub(iso, _MONTH_DAY_YEAR.sub(iso, text))


def _speaker(text: str) -> tuple[str, str]:
    """A transcript line's speaker, lowercased, and what they said ("Joanna: I moved." is
    Joanna's "I"); no speaker, the whole text."""
    found = speaker_line(text)
    return (found.group(1).lower(), text[found.end() :]) if found else ("", text)


def _after_adverbial(text: str) -> str:
    """The text after an opening adverbial and its comma ("In 2020, Kofi relocated …")."""
    first, comma, rest = text.partition(",")
    opening = first.split(maxsplit=1)[0].lower() if first.strip() else ""
    if comma and opening in ADVERBIAL_OPENINGS and len(first.split()) <= 5:
        return rest
    return text


def _is_name(word: str) -> bool:
    """Capitalised and not a capitalised function word ("My", "In", "I")."""
    return word[:1].isupper() and word.lower() not in FUNCTION_WORDS


def _takewhile_names(words: list[str]) -> list[str]:
    """The leading run of name words."""
    run: list[str] = []
    for word in words:
        if not _is_name(word):
            break
        run.append(word)
    return run
