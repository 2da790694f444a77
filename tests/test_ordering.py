"""How scored passages become a search's list (smemd.engine.recall.ordering): the best other
passage of a session lifts a passage, and one source's further items follow at a discount."""

from __future__ import annotations

from dataclasses import dataclass

from smemd.engine.recall.ordering import lift_sessions, spread
from smemd.engine.sessions import SESSION_GAP_S, session_starts


@dataclass
class Item:
    name: str
    source: str
    score: float


def test_a_passage_is_lifted_by_the_best_other_of_its_session() -> None:
    scores = [1.0, 0.5, 0.4, 0.9, 0.3]
    sessions = ["a", "a", "a", None, "b"]
    lifted = lift_sessions(scores, sessions, 0.5)
    # The best of "a" is lifted by the second best; the others by the best; no session, none;
    # alone in its session, nothing.
    assert lifted == [1.0 + 0.25, 0.5 + 0.5, 0.4 + 0.5, 0.9, 0.3]
    assert lift_sessions(scores, sessions, 0.0) == scores
    # Two equal bests lift each other.
    assert lift_sessions([0.7, 0.7], ["s", "s"], 1.0) == [1.4, 1.4]


def test_a_session_is_a_run_of_dates_each_close_to_the_one_before() -> None:
    minute = 60.0
    # Dated by message: a minute apart, for longer than the gap in all, is one session; a
    # message more than the gap after the one before opens another.
    by_message = [i * minute for i in range(40)] + [39 * minute + SESSION_GAP_S + 1]
    starts = session_starts(reversed(by_message))  # in any order
    assert {starts[d] for d in by_message[:40]} == {0.0}
    assert starts[by_message[40]] == by_message[40]
    # Dated by session: each sitting's instant is its own session, repeats and all.
    sittings = [0.0, 0.0, 86_400.0, 86_400.0 + SESSION_GAP_S]  # the gap itself still joins
    assert session_starts(sittings) == {0.0: 0.0, 86_400.0: 86_400.0, 88_200.0: 86_400.0}
    assert session_starts([]) == {}


def test_further_items_of_one_source_follow_other_sources_best() -> None:
    items = [
        Item("a1", "a", 1.0), Item("a2", "a", 0.95), Item("a3", "a", 0.9),
        Item("b1", "b", 0.6), Item("c1", "c", 0.4),
    ]  # fmt: skip
    ranked = spread(items, 0.5, lambda item: item.source)
    assert [i.name for i in ranked] == ["a1", "b1", "a2", "c1", "a3"]
    assert [round(i.score, 4) for i in ranked] == [1.0, 0.6, 0.475, 0.4, 0.225]
    # Equal scores keep their order (a passage's members come in its own).
    tied = [Item("m", "d", 0.5), Item("c", "d", 0.5), Item("x", "e", 0.5)]
    assert [i.name for i in spread(tied, 1.0, lambda item: item.source)] == ["m", "c", "x"]
