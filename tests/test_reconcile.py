"""The heuristic reconciler: duplicates by cosine, updates by a changed value on the same subject."""

from __future__ import annotations

import msgspec
import pytest

from smemd.engine.judgement.reconcile_by_rules import Decision, decide


class Near(msgspec.Struct, frozen=True):
    """A neighbour as the vector search might return it."""

    id: str
    text: str
    cosine: float


def test_a_moved_person_updates_the_old_place() -> None:
    decision = decide("Alex moved to Portland.", [Near("m1", "Alex lives in Seattle.", 0.80)])
    assert decision.kind == "updates" and decision.target == "m1" and decision.score == 0.80
    assert "changed value: Seattle -> Portland" in decision.reason


def test_a_changed_number_is_an_update() -> None:
    decision = decide("Alex is 31 years old.", [Near("m1", "Alex is 30 years old.", 0.93)])
    assert (decision.kind, decision.target) == ("updates", "m1")
    assert "30 -> 31" in decision.reason


def test_a_changed_lowercase_value_is_distinct() -> None:
    """Only numbers, dates and proper names are trusted as values; both facts may be true."""
    decision = decide("Alex likes coffee.", [Near("m1", "Alex likes tea.", 0.90)])
    assert (decision.kind, decision.target, decision.score) == ("distinct", None, 0.90)


def test_a_near_identical_neighbour_is_a_duplicate_of_the_most_similar() -> None:
    neighbours = [
        Near("m1", "Alex lives in Seattle, WA.", 0.975),
        Near("m2", "Alex lives in Seattle.", 0.98),
        Near("m3", "Alex lives in Portland.", 0.85),
    ]
    decision = decide("Alex lives in Seattle.", neighbours)
    assert (decision.kind, decision.target, decision.score) == ("duplicate", "m2", 0.98)


def test_the_same_words_are_a_duplicate_whatever_the_cosine() -> None:
    decision = decide("alex  lives in Seattle", [Near("m1", "Alex lives in Seattle.", 0.5)])
    assert (decision.kind, decision.target, decision.reason) == ("duplicate", "m1", "same words")


def test_another_subject_in_another_place_is_distinct() -> None:
    decision = decide("Alex lives in Seattle.", [Near("m1", "Bob lives in Portland.", 0.80)])
    assert (decision.kind, decision.target) == ("distinct", None)


def test_no_neighbours_is_distinct() -> None:
    assert decide("Alex lives in Seattle.", []) == Decision(
        kind="distinct", target=None, score=0.0, reason="no neighbours"
    )


def test_a_change_below_the_update_threshold_is_distinct() -> None:
    near = [Near("m1", "Alex lives in Seattle.", 0.70)]
    assert decide("Alex moved to Portland.", near).kind == "distinct"
    assert decide("Alex moved to Portland.", near, update_at=0.6).kind == "updates"


def test_the_thresholds_are_the_callers() -> None:
    near = [Near("m1", "Alex lives in Seattle.", 0.92)]
    assert decide("Alex lives in Seattle now.", near, duplicate_at=0.9).kind == "duplicate"


def test_the_best_qualifying_neighbour_is_updated() -> None:
    neighbours = [
        Near("weak", "Alex lives in Denver.", 0.78),
        Near("other", "Bob lives in Denver.", 0.92),  # closer, but another subject
        Near("strong", "Alex lives in Seattle.", 0.85),
        Near("far", "Alex lives in Boston.", 0.60),
    ]
    decision = decide("Alex lives in Portland.", neighbours)
    assert (decision.kind, decision.target, decision.score) == ("updates", "strong", 0.85)


def test_only_adding_a_value_is_not_a_change() -> None:
    near = [Near("m1", "Alex lives in Seattle.", 0.9)]
    assert decide("Alex lives in Seattle with Sam.", near).kind == "distinct"


@pytest.mark.parametrize(
    ("old", "new", "change"),
    [
        ("Alex lives in New York.", "Alex lives in Los Angeles.", "New York -> Los Angeles"),
        (
            "The launch is on 2024-03-05.",
            "The launch is on 2024-04-01.",
            "2024-03-05 -> 2024-04-01",
        ),
        ("I live in Seattle.", "I moved to Portland.", "Seattle -> Portland"),
        ("My sister works at Google.", "My sister works at Apple.", "Google -> Apple"),
        ("Alex's sister lives in Lyon.", "Alex's sister moved to Paris.", "Lyon -> Paris"),
        ("The team has 1,200 users.", "The team has 1500 users.", "1200 -> 1500"),
        ("Alex met Sam in March.", "Alex met Sam in June.", "March -> June"),
    ],
)
def test_subjects_and_values_the_heuristic_recognises(old: str, new: str, change: str) -> None:
    decision = decide(new, [Near("m1", old, 0.85)])
    assert decision.kind == "updates", decision.reason
    assert decision.reason.endswith(f"changed value: {change}")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Alex's sister lives in Lyon.", "Alex's brother lives in Paris."),
        ("My sister works at Google.", "My brother works at Apple."),
        ("She lives in Seattle.", "He lives in Portland."),
        ("Alex is 30 years old.", "Alex is thirty years old."),  # words are not values
    ],
)
def test_different_subjects_or_unseen_values_stay_distinct(old: str, new: str) -> None:
    assert decide(new, [Near("m1", old, 0.85)]).kind == "distinct"
