"""Common English given names and their usual short forms, so "Bob" and "Robert" read as one
given name. Only forms in wide use: a rare nickname missed costs a suggestion, a loose one here
would make every "Al" look like every "Alan", "Albert" and "Alice"."""

from __future__ import annotations

_FORMS = """
abigail abby abbie | alexander alex sasha xander | alexandra alex sasha lexi |
andrew andy drew | anthony tony | barbara barb babs | benjamin ben benji |
catherine cathy cat kate katie | charles charlie chuck chas | christine chris chrissy |
christopher chris kit topher | daniel dan danny | david dave davey | deborah deb debbie |
donald don donnie | edward ed eddie ted ned | elizabeth liz lizzie beth betty eliza libby |
emily em emmy | frederick fred freddie | gregory greg | henry harry hank | isabella bella izzy |
jacob jake | james jim jimmy jamie | jennifer jen jenny | jessica jess jessie |
john johnny jack | jonathan jon jonny | joseph joe joey | joshua josh |
katherine kate katie kathy kat kit | kathleen kathy kate | kenneth ken kenny |
lawrence larry | leonard leo len lenny | margaret meg maggie peggy maisie | matthew matt |
michael mike mikey mick | nathaniel nate nat | nathan nate | nicholas nick nicky |
patricia pat patty tricia trish | patrick pat paddy | peter pete | rebecca becca becky |
richard rich rick ricky dick | robert rob robbie bob bobby bert | ronald ron ronnie |
samantha sam sammy | samuel sam sammy | stephen steve stevie | steven steve stevie |
susan sue susie | theodore theo ted teddy | thomas tom tommy | timothy tim timmy |
victoria vicky tori | william will bill billy willy liam | zachary zach zack
"""


def _table() -> dict[str, frozenset[str]]:
    """Each form to the full names it may stand for (a full name to itself)."""
    found: dict[str, set[str]] = {}
    for group in _FORMS.split("|"):
        full, *short = group.split()
        for form in (full, *short):
            found.setdefault(form, set()).add(full)
    return {form: frozenset(fulls) for form, fulls in found.items()}


_FULL = _table()


def same_given_name(a: str, b: str) -> bool:
    """Whether two lower-case words can be one given name ("bob", "robert"; "kate", "katie")."""
    if a == b:
        return True
    return bool(_FULL.get(a, frozenset({a})) & _FULL.get(b, frozenset({b})))


def full_forms(word: str) -> frozenset[str]:
    """The full given names a lower-case word may stand for (none if it is not one we know)."""
    return _FULL.get(word, frozenset())
