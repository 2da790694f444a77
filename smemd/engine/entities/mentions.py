"""The entities a new memory mentions, as the store links them: the names extraction gave when a
model read the fact (kinds from the finder where it agrees, else from the name alone), or else
the names the finder sees in the text."""

from __future__ import annotations

from collections.abc import Sequence

from smemd.engine.entities.finder import find, guess_kind
from smemd.store.records import Mention


def mentions(text: str, named: Sequence[str]) -> list[Mention]:
    found = {f.name.lower(): f for f in find(text)}
    if not named:
        return [Mention(name=f.name, kind=f.kind) for f in found.values()]
    return [
        Mention(
            name=name, kind=found[name.lower()].kind if name.lower() in found else guess_kind(name)
        )
        for name in named
    ]
