"""Redaction: strings that look like keys, tokens or passwords replaced before text leaves the store.

Recalled text goes to a model and back to a caller, and neither needs a credential that happens to
be stored in it. The rules lean towards redacting (a lost word costs less than a leaked key), but
prose about credentials ("the token is valid", "password: see the vault") stays readable. Every
pattern is linear in the text: it runs on each recalled item of each request.
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"

_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)",
    re.DOTALL,
)
# A JWT's header and payload are base64url JSON that decodes to its claims: all of it goes. The
# first two dots are always there (a part may be empty); an encrypted JWT has two parts more.
_JWT = re.compile(
    r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2}"
)
# scheme://user:password@host: the user may be empty (redis://:pw@…), the password may hold an @.
_URL_PASSWORD = re.compile(r"(?<=://)([^\s:/?#@]{0,128}):([^\s/?#]{1,256})@")
_PREFIXED = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic (sk-ant-…), sk-proj-…
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key ids
    r"|AIza[0-9A-Za-z_-]{35})"  # Google API keys
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+([A-Za-z0-9._~+/=-]{8,})")
# A name may end a longer one (DB_PASSWORD, aws_secret_access_key), so only a letter or digit
# before it stops it; longer names come before their prefixes (secret_key before secret). Testing
# for a letter first lets the scan pass over spaces and punctuation quickly.
_ASSIGNED = re.compile(
    r"(?i)(?=[a-z])(?<![a-z0-9])((passw(?:or)?d|passphrase|passcode|pwd|pass|secret[ _-]?key|secret|token"
    r"|api[ _-]?key|access[ _-]?key|client[ _-]?secret|auth[ _-]?token|private[ _-]?key)[\"']?\s*)"
    r"([=:])(\s*)(\"[^\"\n]*\"|'[^'\n]*'|[^\s,;]+)"
)
# "the deploy token is tok-…", "the password for the guest wifi was: …". Not a bare "key" or
# "pin": "the key is to practise", "the reset pin is GPIO17".
_STATED = re.compile(
    r"(?i)(?=[a-z])(?<![a-z0-9])((passw(?:or)?d|passphrase|passcode|pin[ _-]?code|secret|token"
    r"|(?:api|access|secret|private|licen[cs]e|ssh|deploy|encryption|signing|master)[ _-]?key)"
    r"(?:\s+(?:for|of|on)(?:\s+[\w.@-]+){1,3}?)?\s+(?:is|was):?\s+)"
    r"(\"[^\"\n]*\"|'[^'\n]*'|\S+)"
)
# Names that are also words of prose ("token: the unit a model reads", "the secret is out").
_PROSE_NAMES = frozenset({"token", "secret", "pass"})
# Another word that is not itself a name ("password: see the vault", not "password: x login: y").
_PROSE_GOES_ON = re.compile(r"[ \t]+[^\W\d_]+\b(?![ \t]*[:=])")
_HEX = re.compile(r"\b[0-9a-fA-F]{32,}\b")
_TOKENISH = re.compile(r"[A-Za-z0-9+/_=-]{32,}")
_WORD = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{3,}(?![a-z])")
# Longer than almost every English word: a run of letters this long is a passphrase.
_LONGEST_WORD = 16


def redact(text: str) -> str:
    """The text with strings that look like keys, tokens, passwords or private keys replaced."""
    text = _PRIVATE_KEY.sub(REDACTED, text)
    text = _JWT.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: f"{m[1]}:{REDACTED}@", text)
    text = _PREFIXED.sub(REDACTED, text)
    # "the ring bearer traditionally walks first" is prose: a token is not all letters.
    text = _BEARER.sub(lambda m: m[0] if m[2].isalpha() else f"{m[1]} {REDACTED}", text)
    text = _ASSIGNED.sub(_assigned, text)
    text = _STATED.sub(_stated, text)
    text = _HEX.sub(REDACTED, text)
    return _TOKENISH.sub(lambda m: REDACTED if _looks_random(m[0]) else m[0], text)


def _assigned(match: re.Match[str]) -> str:
    head, name, sign, space, value = match.groups()
    if value == REDACTED or value.strip("\"'") == "":
        return match[0]
    # "password: hunter2" is a credential, "token: the unit a model reads" is prose.
    if sign == ":" and value.isalpha() and not _passphrase(name, value, match):
        return match[0]
    return f"{head}{sign}{space}{REDACTED}"


def _passphrase(name: str, word: str, match: re.Match[str]) -> bool:
    """Whether a one-word value is a password rather than the first word of prose."""
    if name.lower() in _PROSE_NAMES:
        return False
    # After a name that means a credential, a word that ends the line or clause is the credential.
    return len(word) >= _LONGEST_WORD or _PROSE_GOES_ON.match(match.string, match.end()) is None


def _stated(match: re.Match[str]) -> str:
    head, name, value = match.groups()
    quoted = len(value) > 1 and value[0] in "\"'" and value[-1] == value[0]
    # A sentence goes on after the value: "… is hunter2." keeps its full stop.
    word = value if quoted else value.rstrip(".,;:)")
    if _credential(name.lower(), word.strip("\"'") if quoted else word, quoted):
        return f"{head}{REDACTED}{value[len(word) :]}"
    return match[0]


def _credential(name: str, word: str, quoted: bool) -> bool:
    """Whether `word`, stated as the value of `name`, is the credential rather than prose about it."""
    if not word or word == REDACTED or word[0] in "<~/":
        return False  # markup, a placeholder or a path: "the BOS token is <s>", "… is ~/.pgpass"
    if quoted and name not in _PROSE_NAMES:
        return True  # 'the password is "swordfish"' means it literally
    if word.isdigit():
        return len(word) >= 4  # "the password is 12 characters long" is a count
    # Prose words hold letters and maybe a hyphen or apostrophe ("well-formed", "Alex's").
    if any(not (c.isalpha() or c in "-'") for c in word):
        return True
    return name not in _PROSE_NAMES and len(word) >= _LONGEST_WORD


def _looks_random(run: str) -> bool:
    """A base64-ish run with both cases well mixed and a digit: a token, not a path or an identifier."""
    letters = [c for c in run if c.isalpha()]
    upper = sum(c.isupper() for c in letters)
    lower = len(letters) - upper
    # CamelCaseIdentifiers have few capitals; random text about as many as small letters.
    mixed = upper >= 0.2 * len(letters) and lower >= 0.2 * len(letters)
    if not mixed or not any(c.isdigit() for c in run):
        return False
    if max(len(piece) for piece in re.split(r"[+/_=-]", run)) >= 20:
        return True
    # Split by / and + (an AWS secret key), a key's pieces are short like a path's, but a path is
    # made of words and acronyms; in random base64 most letters fall outside them.
    return sum(len(word) for word in _WORD.findall(run)) < 0.75 * len(letters)
