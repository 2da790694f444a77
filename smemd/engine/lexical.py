"""The lexical side of recall: a free-text query as an FTS5 MATCH expression."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)

# Words that match nearly every row: in an OR query they only add noise to BM25.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves""".split()
)


def terms(text: str) -> list[str]:
    """Lower-cased content words in order, without repeats; all words if every one is a stopword."""
    words = [w.lower() for w in _WORD.findall(text)]
    content = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(content))


def match_expression(text: str) -> str:
    """`"alex" OR "seattle"`: each term quoted, so no user text is read as FTS5 syntax."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms(text))
