"""What one write did to the rows the in-memory indexes mirror, collected while it runs and
applied by `Indexes.writing` once it has committed: the index follows the store, never leads it.

A write records its changes in the order it made them (a chunk re-added after its removal stays
added); a namespace removed or moved is dropped whole. Changes to a namespace whose indexes are
neither loaded nor loading are never applied: its load reads the rows as committed. Those that
commit while a load runs are applied again once it ends (`again`): it may have read them or not.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

import numpy as np

from smemd.engine.index.kinds import KindIndex
from smemd.store.records import IndexKind

STEP = 64  # rows added at a time: 9,000 chunks added at once held the event loop for a second


@dataclass(frozen=True, slots=True)
class Added:
    keys: Sequence[int]
    vectors: np.ndarray
    texts: Sequence[str]
    live: Sequence[bool]
    replacing: bool  # the index may hold these keys already

    def apply(self, index: KindIndex) -> None:
        if self.replacing:
            index.remove(self.keys)
        index.add(self.keys, self.vectors, self.texts, self.live)


@dataclass(frozen=True, slots=True)
class LiveSet:
    key: int
    live: bool

    def apply(self, index: KindIndex) -> None:
        index.set_live(self.key, self.live)


@dataclass(frozen=True, slots=True)
class Removed:
    keys: Collection[int]

    def apply(self, index: KindIndex) -> None:
        index.remove(self.keys)


Change = Added | LiveSet | Removed


def again(change: Change) -> Change:
    """The change, safe to apply to indexes that may show it already. Each change sets a row
    (added, removed) or its flag, so applying those of a span again, in order, to indexes that
    read the store somewhere in that span ends where the store ends; only an add must first
    remove what a load may have read."""
    if isinstance(change, Added) and not change.replacing:
        return replace(change, replacing=True)
    return change


class IndexChanges:
    __slots__ = ("dropped", "made")

    def __init__(self) -> None:
        self.made: list[tuple[str, IndexKind, Change]] = []
        self.dropped: list[str] = []  # namespaces whose indexes and files go

    def add(
        self, namespace: str, kind: IndexKind, keys: Sequence[int], vectors: np.ndarray,
        texts: Sequence[str], live: Sequence[bool], *, replacing: bool = False,
    ) -> None:  # fmt: skip
        """Rows with their vectors (one per row, or a matrix) and texts, live or not;
        `replacing` when the index may hold some already (a step tried again, a load that read
        them)."""
        if not keys:
            return
        vectors = np.asarray(vectors).reshape(len(keys), -1)
        for start in range(0, len(keys), STEP):
            end = start + STEP
            step = Added(
                keys[start:end], vectors[start:end], texts[start:end], live[start:end], replacing
            )
            self.made.append((namespace, kind, step))

    def set_live(self, namespace: str, kind: IndexKind, key: int, live: bool) -> None:
        self.made.append((namespace, kind, LiveSet(key, live)))

    def remove(self, namespace: str, kind: IndexKind, keys: Collection[int]) -> None:
        if keys:
            self.made.append((namespace, kind, Removed(keys)))

    def drop(self, namespace: str) -> None:
        """The namespace is gone or moved: its indexes are forgotten, not updated."""
        self.dropped.append(namespace)
