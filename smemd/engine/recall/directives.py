"""What a query says about its answer rather than about what to find.

An agent often searches with the user's message as it came: "What did I name the cat? Answer in
one word.", "In what order did I try the three diets? Mention only the names." The second
sentence is about the answer's form. Its words match passages that speak of answers, words and
names, BM25 and the embedder alike, and draw the query's vector away from what it asks: trailing
such sentences cost evidence recall (README: Benchmarks). A sentence made only of the words of
such a directive — an order, the form of an answer, numbers and small words — is left out of
what recall searches for, as long as the query says something else.
"""

from __future__ import annotations

import re

import msgspec

from smemd.engine.index.words import STOPWORDS
from smemd.engine.recall.query import Query

# The words of a directive about the answer: the order, and the form it asks for.
_DIRECTIVE_WORDS = frozenset(
    """
    answer answers respond reply mention list give keep use format write limit include provide
    return state output make show tell please kindly just only exactly strictly simply else
    nothing more less than under over at least most brief briefly concise concisely short shortly
    long clear clearly plain simple detail details detailed sentence sentences word words line
    lines paragraph paragraphs item items point points bullet bullets bulleted numbered number
    step steps character characters token tokens name names form json markdown table prose
    explanation explanations reasoning commentary preamble summary key main one two three four
    five six seven eight nine ten first sure yes no not don't do need needed add anything extra
    additional specific specifically precise precisely possible direct directly single quick
    quickly full fully complete elaborate verbose explain summarize summarise repeat question
    title titles date dates order chronological chronologically count total skip final succinct
    """.split()
)
# A sentence of a query ends at . ! ? and the spaces after; a question is never a directive.
_SENTENCE = re.compile(r"[^.!?]+[.!?]*\s*")
_WORD = re.compile(r"[a-z0-9']+")


def without_directives(query: Query) -> Query:
    """The query with the sentences that only say how to answer left out, unless nothing else
    would be left."""
    sentences = _SENTENCE.findall(query.text)
    if len(sentences) < 2:
        return query
    kept = [s for s in sentences if not _directs(s)]
    if not kept or len(kept) == len(sentences):
        return query
    return msgspec.structs.replace(query, text="".join(kept).strip())


def _directs(sentence: str) -> bool:
    if sentence.rstrip().endswith("?"):
        return False
    words = _WORD.findall(sentence.casefold())
    if not any(w in _DIRECTIVE_WORDS and w not in STOPWORDS for w in words):
        return False  # "It was." says nothing, but is no directive either
    return all(w in _DIRECTIVE_WORDS or w in STOPWORDS or w.isdigit() for w in words)
