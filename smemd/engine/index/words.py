"""Words as BM25 sees them: unicode61-style tokens, folded, lower-cased and Porter-stemmed."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from smemd.engine.index.stemmer import stem

_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # letters and digits; "_" separates, as in unicode61

# Words that match nearly every row: in a query they only add noise to BM25.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves""".split()
)


@lru_cache(maxsize=65536)
def _term(word: str) -> str:
    if not word.isascii():  # "café" and "cafe" are one word, as unicode61 folds them
        word = "".join(
            c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c)
        )
    return stem(word)


def tokens(text: str) -> list[str]:
    """Every token of a stored text, stopwords included: they count in its length."""
    return [_term(w) for w in _WORD.findall(text.lower())]


def query_terms(text: str) -> list[str]:
    """A query's distinct content terms in order; all its words if every one is a stopword."""
    words = _WORD.findall(text.lower())
    content = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(_term(w) for w in content))
