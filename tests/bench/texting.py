"""A set in the LoCoMo format whose turns read the way people type in a messaging app: about
`share` of them lower-cased, without the apostrophes of their contractions or a closing period,
and with the shortenings texters use ("u", "bc", "bday", "tmrw", "idk") for most of the words
and phrases they have one for.

LoCoMo's generated turns are written like a letter; real chats are not, and a memory that only
finds "your favorite picture" misses "ur fav pic". Only a turn's text changes: its speaker,
dia_id, image and the questions stay, so every question still has its evidence. Which turns and
which words are drawn by a seeded hash: the same source gives the same set.
"""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

# Ordinary words and phrases -> how people text them; where there are several, one is drawn for
# each occurrence. The keys are as a turn reads once lower-cased and without the apostrophes of
# its contractions ("youre", "i dont know"). None writes a number for a word ("2nite", "4",
# "b4", "gr8"): next to a turn's own numbers and dates that would change what it says.
SHORTENINGS: dict[str, tuple[str, ...]] = {
    # phrases
    "i dont know": ("idk",), "dont know": ("dunno",), "i dont care": ("idc",),
    "to be honest": ("tbh",), "right now": ("rn",), "by the way": ("btw",),
    "in my opinion": ("imo",), "oh my god": ("omg",), "oh my gosh": ("omg",),
    "as soon as possible": ("asap",), "let me know": ("lmk",), "talk to you later": ("ttyl",),
    "see you later": ("cya",), "whats up": ("sup", "wassup"), "in real life": ("irl",),
    "at the moment": ("atm",), "not going to lie": ("ngl",), "just kidding": ("jk",),
    "for real": ("fr",), "never mind": ("nvm",), "no problem": ("np",),
    "youre welcome": ("yw", "np"), "thank you": ("ty", "thank u"), "what do you mean": ("wdym",),
    "good night": ("gn", "gnight"), "want to": ("wanna",), "kind of": ("kinda",),
    "sort of": ("sorta",), "let me": ("lemme",), "give me": ("gimme",), "a lot": ("alot",),
    "best friend": ("bff", "bestie"),
    # you
    "you": ("u",), "your": ("ur",), "youre": ("ur",), "yours": ("urs",), "yourself": ("urself",),
    # everyday words
    "because": ("bc", "cuz"), "about": ("abt",), "something": ("smth",), "though": ("tho",),
    "although": ("altho",), "through": ("thru",), "probably": ("prob", "prolly"),
    "really": ("rly",), "seriously": ("srsly",), "obviously": ("obv", "obvi"),
    "definitely": ("def", "defo"), "totally": ("totes",), "especially": ("esp",),
    "whatever": ("whatev", "whatevs"), "different": ("diff",), "between": ("btwn",),
    "okay": ("ok", "k"), "yeah": ("ya", "yea"), "please": ("pls", "plz"),
    "thanks": ("thx", "thnx"), "sorry": ("sry",), "congratulations": ("congrats",),
    # time
    "tomorrow": ("tmrw", "tmr"), "tonight": ("tonite",), "yesterday": ("yday",),
    "weekend": ("wknd",), "week": ("wk",), "weeks": ("wks",), "minute": ("min",),
    "minutes": ("mins",), "hour": ("hr",), "hours": ("hrs",), "seconds": ("secs",),
    "year": ("yr",), "years": ("yrs",), "birthday": ("bday",), "christmas": ("xmas",),
    # people and family
    "people": ("ppl",), "boyfriend": ("bf",), "girlfriend": ("gf",), "family": ("fam",),
    "brother": ("bro",), "sister": ("sis",), "husband": ("hubby",), "roommate": ("roomie",),
    # school and work
    "homework": ("hw",), "university": ("uni",), "professor": ("prof",), "biology": ("bio",),
    "chemistry": ("chem",), "psychology": ("psych",), "literature": ("lit",),
    "graduation": ("grad",), "information": ("info",), "application": ("app",),
    "appointment": ("appt",),
    # places
    "apartment": ("apt",), "vacation": ("vacay",),
    # feelings and the like
    "favorite": ("fav", "fave"), "favorites": ("favs", "faves"), "favourite": ("fav", "fave"),
    "awkward": ("awk",), "adorable": ("adorbs",), "ridiculous": ("ridic",),
    "delicious": ("delish",),
    # media
    "picture": ("pic",), "pictures": ("pics",), "photo": ("pic",), "photos": ("pics",),
    "video": ("vid",), "videos": ("vids",), "television": ("tv",), "message": ("msg",),
    "messages": ("msgs",), "instagram": ("insta", "ig"), "facebook": ("fb",),
    "episode": ("ep",), "recommendation": ("rec",), "recommendations": ("recs",),
}  # fmt: skip
# A listed word or phrase standing alone: not inside another word, nor a possessive ("people's").
# Longest first, so a phrase wins over its words.
_SHORTENABLE = re.compile(
    r"(?<![\w'\u2019])(?:"
    + "|".join(
        r"\s+".join(map(re.escape, key.split()))
        for key in sorted(SHORTENINGS, key=len, reverse=True)
    )
    + r")(?![\w'\u2019])"
)
# The apostrophe of a contraction: n't, i'm, 're, 've, 'll, 'd, and 's after a pronoun, where it
# is "is" or "has" (after a noun it is as often a possessive, which keeps it). Kept too where the
# word without it is another that changes what the turn says ("we're" -> "were", "she'll" ->
# "shell"): people leave those as they are more often than not.
_CONTRACTION = re.compile(
    r"(?<![\w'\u2019])"
    r"(?!we['\u2019](?:re|ll|d)\b|s?he['\u2019]ll\b|she['\u2019]d\b|i['\u2019]ll\b)"
    r"(\w+(?:n(?=['\u2019]t)|(?=['\u2019](?:re|ve|ll|d)\b))|i(?=['\u2019]m\b)"
    r"|(?:it|he|she|that|what|there|here|who|where|how|let)(?=['\u2019]s\b))['\u2019]"
)
_SESSION = re.compile(r"session_\d+")


def texting(
    samples: list[dict[str, Any]], share: float, seed: str = "smem", each: float = 0.7
) -> list[dict[str, Any]]:
    """`samples` (LoCoMo's format) with about `share` of the turns typed as in a messaging app,
    each listed word or phrase of those turns shortened with probability `each`."""
    out = copy.deepcopy(samples)
    for sample in out:
        talk = sample["conversation"]
        for key in [k for k in talk if _SESSION.fullmatch(k)]:
            for i, turn in enumerate(talk[key]):
                drawn_by = f"{seed}/{sample['sample_id']}/{key}/{i}"
                if _draw(drawn_by) < share:
                    turn["text"] = _texted(turn["text"], drawn_by, each)
    return out


def _texted(text: str, seed: str, each: float) -> str:
    text = _CONTRACTION.sub(r"\1", text.lower())
    text = _SHORTENABLE.sub(lambda m: _shorten(m, seed, each), text)
    # A closing period goes, an ellipsis ("so cute...") stays: it says something.
    return re.sub(r"(?<!\.)\.\s*$", "", text.rstrip())


def _shorten(match: re.Match[str], seed: str, each: float) -> str:
    """The shortening of the listed word or phrase `match`, or it as it was."""
    drawn_by = f"{seed}/{match.start()}"  # by where it stands: each occurrence is drawn
    if _draw(drawn_by) >= each:
        return match.group()
    ways = SHORTENINGS[" ".join(match.group().split())]
    return ways[int(_draw(f"{drawn_by}/which") * len(ways))]


def _draw(key: str) -> float:
    """A number in [0, 1) drawn by `key`."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") / 2**64
