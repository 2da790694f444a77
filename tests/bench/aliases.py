"""Alias suggestions against tests/data/aliases.jsonl: each world's sentences stored as
memories (MiniLM vectors, the no-model finder's names) in a real store, the suggestions read as
the daemon reads them, and each suggested pair graded against the labelled groups. Precision
and recall are over pairs, micro-averaged over worlds; a suggestion naming a name no group
lists counts as wrong.

    python -m tests.bench.aliases [--misses]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from smemd.engine.entities.mentions import mentions
from smemd.engine.entities.merging import candidates
from smemd.fleet.builtin import Embedder, load_embedder
from smemd.store.records import NewMemory
from smemd.store.sqlite.store import SqliteStore as Store

LABELLED = Path(__file__).parent.parent / "data" / "aliases.jsonl"


@dataclass(frozen=True)
class AliasScore:
    worlds: int
    labelled: int  # same-entity pairs
    suggested: int
    precision: float
    recall: float
    wrong: list[str]  # wrong suggestions and missed pairs, for --misses


def worlds(path: Path = LABELLED) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def suggested_pairs(
    world: dict[str, Any], embedder: Embedder, state: Path
) -> set[frozenset[str]]:
    """The world's suggestions as pairs of lower-case names (an entity's name, as stored)."""
    store = Store(state / f"{world['world']}.sqlite3")
    await store.open()
    try:
        vectors = await embedder.embed(world["sentences"])
        async with store.write() as writer:
            await writer.ensure_namespace("w", 1.0)
            for i, (text, vector) in enumerate(zip(world["sentences"], vectors, strict=True)):
                new = NewMemory(
                    id=f"mem_{i}", namespace="w", text=text, type="fact", root_id=f"mem_{i}",
                    mentions=mentions(text, []), valid_from=float(i),
                )  # fmt: skip
                await writer.insert_memory(new, vector, 1.0)
        async with store.read() as reader:
            found = await candidates(reader, "w")
    finally:
        await store.close()
    return {frozenset((s.keep.names[0].lower(), s.alias.names[0].lower())) for s in found}


async def score(path: Path = LABELLED) -> AliasScore:
    embedder = load_embedder()
    hits = suggested = labelled = 0
    wrong = []
    data = worlds(path)
    with tempfile.TemporaryDirectory() as state:
        for world in data:
            same = {
                frozenset((a.lower(), b.lower()))
                for group in world["entities"] for a, b in combinations(group, 2)
            }  # fmt: skip
            found = await suggested_pairs(world, embedder, Path(state))
            hits += len(found & same)
            suggested += len(found)
            labelled += len(same)
            wrong += [f"{world['world']}: wrong {sorted(p)}" for p in found - same]
            wrong += [f"{world['world']}: missed {sorted(p)}" for p in same - found]
    return AliasScore(
        worlds=len(data), labelled=labelled, suggested=suggested,
        precision=hits / suggested if suggested else 1.0,
        recall=hits / labelled if labelled else 1.0, wrong=sorted(wrong),
    )  # fmt: skip


def main(argv: list[str]) -> int:
    result = asyncio.run(score())
    print(
        f"aliases worlds={result.worlds} labelled_pairs={result.labelled}"
        f" suggested={result.suggested} precision={result.precision:.3f}"
        f" recall={result.recall:.3f}"
    )
    if "--misses" in argv:
        for line in result.wrong:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
