"""Redaction: strings that look like keys, tokens or passwords replaced before text leaves the store.

Recalled text goes to a model and back to a caller, and neither needs a credential that happens to
be stored in it.
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"

_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)",
    re.DOTALL,
)
_PREFIXED = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic (sk-ant-…), sk-proj-…
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key ids
    r"|AIza[0-9A-Za-z_-]{35})"  # Google API keys
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+([A-Za-z0-9._~+/=-]{8,})")
_ASSIGNED = re.compile(
    r"(?i)\b((?:passw(?:or)?d|pwd|pass|secret|token|api[_-]?key|access[_-]?key|client[_-]?secret"
    r"|auth[_-]?token|private[_-]?key)[\"']?\s*)([=:])(\s*)(\"[^\"\n]*\"|'[^'\n]*'|[^\s,;]+)"
)
_HEX = re.compile(r"\b[0-9a-fA-F]{32,}\b")
_TOKENISH = re.compile(r"[A-Za-z0-9+/_=-]{32,}")


def redact(text: str) -> str:
    """The text with strings that look like keys, tokens, passwords or private keys replaced."""
    text = _PRIVATE_KEY.sub(REDACTED, text)
    text = _PREFIXED.sub(REDACTED, text)
    # "the ring bearer traditionally walks first" is prose: a token is not all letters.
    text = _BEARER.sub(lambda m: m[0] if m[2].isalpha() else f"{m[1]} {REDACTED}", text)
    text = _ASSIGNED.sub(_assigned, text)
    text = _HEX.sub(REDACTED, text)
    return _TOKENISH.sub(lambda m: REDACTED if _looks_random(m[0]) else m[0], text)


def _assigned(match: re.Match[str]) -> str:
    key, sign, space, value = match.groups()
    quoted = value[:1] in "\"'"
    # "password: hunter2" is a credential, "token: the unit a model reads" is prose.
    if sign == ":" and not quoted and value.isalpha():
        return match[0]
    if value == REDACTED or value.strip("\"'") == "":
        return match[0]
    return f"{key}{sign}{space}{REDACTED}"


def _looks_random(run: str) -> bool:
    """A base64-ish run with both cases well mixed and a digit: a token, not a path or an identifier."""
    longest = max(len(piece) for piece in re.split(r"[+/_=-]", run))
    letters = [c for c in run if c.isalpha()]
    upper = sum(c.isupper() for c in letters)
    lower = len(letters) - upper
    # CamelCaseIdentifiers have few capitals; random text about as many as small letters.
    mixed = upper >= 0.2 * len(letters) and lower >= 0.2 * len(letters)
    return longest >= 20 and mixed and any(c.isdigit() for c in run)
