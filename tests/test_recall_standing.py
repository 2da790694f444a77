"""A request for something new favours what someone said they prefer, avoid, always or never do
(smemd.engine.recall.standing): through the real daemon, and what counts as a request and as a
standing preference."""

from __future__ import annotations

from smemd.engine.recall.standing import asks_for_something_new, states_standing
from tests.conftest import Running
from tests.test_memory_api import add, first_text, settle

USER = frozenset({"user"})


def test_a_request_asks_for_something_new_of_its_own() -> None:
    for request in (
        "I'll be in Rome soon. What restaurants would you recommend for me?",
        "Can you suggest a hotel for my trip to Miami?",
        "What are some good cardio workouts for me?",
        "Write a function that merges two sorted lists.",
        "I'm anxious about getting around Tokyo. Any tips?",
    ):
        assert asks_for_something_new(request), request
    for not_a_request in (
        "What did Caroline paint?",
        "Can you remind me of the restaurant you recommended?",  # asks back what was said
        "What advice does Gina give to Jon?",  # about a conversation, not for the asker
        "How many days did I spend in Japan?",
        "Which hotel did you suggest last time?",
    ):
        assert not asks_for_something_new(not_a_request), not_a_request


def test_a_standing_preference_is_said_in_the_first_person_or_as_a_rule() -> None:
    for standing in (
        "I strictly avoid gluten because of a severe intolerance.",
        "I have a strong preference for vegan skincare.",
        "The hiking option sounds good; the boat trips aren't really my thing.",
        "From now on, end all your function names with '_b'.",
        "Please always add type hints.",
    ):
        assert states_standing(standing, USER), standing
    for said_once in (
        "I went to the market yesterday.",
        "Rome has wonderful restaurants.",
        "I'd like to try the new bakery.",  # wants it once
        "I love the idea of a reading habit.",
        "I'll try a few podcasts to see what I enjoy.",
    ):
        assert not states_standing(said_once, USER), said_once
    # An assistant's "always" is advice, not the user's preference.
    assert not states_standing("You should always back up first.", frozenset({"assistant"}))
    assert states_standing("Always back up first, from now on.", frozenset())


# The second turn is nearer the request in words and meaning (it says "recommend"): only that
# the first says what the user always does, the second what they did once, puts the first first.
TURNS = (
    "User: I always order the gluten-free pasta in Rome.",
    "User: Once I ordered the gluten-free pasta in Rome they recommend.",
)


async def test_a_request_finds_the_standing_preference_first(running: Running) -> None:
    for turn in TURNS:
        await add(running, content=turn)
    await settle(running)
    first = await first_text(running, "Can you recommend pasta in Rome for me?", threshold=0)
    assert [t for t in TURNS if first in t] == [TURNS[0]], first
    # A question about what was done is no request: the nearer turn comes first.
    first = await first_text(
        running, "Which pasta did I order in Rome they recommend?", threshold=0
    )
    assert [t for t in TURNS if first in t] == [TURNS[1]], first
