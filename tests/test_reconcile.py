"""The heuristic reconciler: duplicates by cosine, updates by a changed value on the same subject."""

from __future__ import annotations

import pytest

from smemd.engine.judgement.reconcile_by_rules import Decision, decide
from smemd.engine.judgement.reconcile_by_rules import Neighbour as Near


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


def test_a_change_below_the_update_threshold_is_distinct_unless_stated() -> None:
    near = [Near("m1", "Alex lives in Seattle.", 0.70)]
    assert decide("Alex lives in Portland.", near).kind == "distinct"
    assert decide("Alex lives in Portland.", near, update_at=0.6).kind == "updates"
    # "moved to" says the home changed, however far apart the embedder puts the two.
    assert decide("Alex moved to Portland.", near).kind == "updates"


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


def test_only_adding_a_value_extends() -> None:
    near = [Near("m1", "Alex lives in Seattle.", 0.9)]
    decision = decide("Alex lives in Seattle with Sam.", near)
    assert (decision.kind, decision.target) == ("extends", "m1")


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
        ("Person232 owns 235 kites.", "Person233 owns 236 kites."),  # however close
        ("Room 101 is booked for Friday.", "Room 102 is booked for Friday."),  # which room
    ],
)
def test_different_subjects_or_unseen_values_stay_distinct(old: str, new: str) -> None:
    assert decide(new, [Near("m1", old, 0.85)]).kind == "distinct"


# Cosines as all-MiniLM-L6-v2 puts these pairs: the rules must hold at the embedder's distances.
@pytest.mark.parametrize(
    ("old", "new", "cosine", "kind"),
    [
        ("Jane is allergic to peanuts.", "Jane has a peanut allergy.", 0.928, "duplicate"),
        ("Maria works as a nurse.", "Maria is a nurse.", 0.964, "duplicate"),
        ("Alex is 30 years old.", "Alex is thirty years old.", 0.95, "duplicate"),
        ("Mr. Patel is our landlord.", "Our landlord is called Mr. Patel.", 0.935, "duplicate"),
        ("Alex likes tea.", "Alex likes coffee.", 0.811, "distinct"),
        ("I work at Google.", "I joined Microsoft last month.", 0.234, "updates"),
        ("I work at Google.", "I left Google and joined Microsoft.", 0.549, "updates"),
        ("My son is 7 years old.", "My son turned 8.", 0.639, "updates"),
        ("Tom has two cats.", "Tom has three cats.", 0.960, "updates"),
        ("Alex likes tea.", "Alex no longer likes tea.", 0.869, "updates"),
        ("I play chess.", "I started playing the piano.", 0.45, "distinct"),  # no change stated
        ("My phone number is 555-0142.", "My new phone number is 555-0199.", 0.89, "updates"),
        ("Alex lives in Seattle.", "Alex lives in Seattle with his partner Sam.", 0.916, "extends"),
        ("Alex's sister lives in Rome.", "Alex's brother lives in Rome.", 0.933, "distinct"),
        ("I live in Oslo.", "My sister lives in Bergen.", 0.6, "distinct"),
        ("My flight to Oslo is on Monday.", "My flight to Bergen is on Monday.", 0.708, "distinct"),
        ("I bought a bike in March.", "I bought a kayak in March.", 0.8, "distinct"),
        # A date however it is written: the same day is the same value, another day a change.
        (
            "The dentist is on 2024-09-12.",
            "The dentist is on 12 September 2024.",
            0.95,
            "duplicate",
        ),
        (
            "The dentist is on Sept. 12th, 2024.",
            "The dentist was moved to 19 September 2024.",
            0.85,
            "updates",
        ),
    ],
)
def test_the_rules_on_pairs_at_the_embedders_distances(
    old: str, new: str, cosine: float, kind: str
) -> None:
    decision = decide(new, [Near("m1", old, cosine)])
    assert decision.kind == kind, decision.reason
