"""A request for something new favours what someone said they prefer, avoid, always or never do
(smemd.engine.recall.standing): through the real daemon, and what counts as a request and as a
standing preference."""

from __future__ import annotations

import time

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
        "I have an extreme aversion to heights.",
        "The hiking option sounds good; the boat trips aren't really my thing.",
        "From now on, end all your function names with '_b'.",
        "Please always add type hints.",
        "The botanical gardens sound great. I'd prefer to avoid anything with animals.",
        "The others are all bestsellers, which I prefer to avoid.",
        "I'll go with the Fairphone. The other options don't seem to fit what I need.",
        "I have a severe peanut allergy, so nothing with nuts.",
        "I have an ethical objection to leather goods.",
        "I adhere to a strict kosher diet.",
        "I'm uncomfortable with open-plan offices.",
        "I learn best with hands-on projects.",
        "Certification is important to me.",
        "I really don't enjoy horror films.",
    ):
        assert states_standing(standing, USER), standing
    for said_once in (
        "I went to the market yesterday.",
        "Rome has wonderful restaurants.",
        "I'd like to try the new bakery.",  # wants it once
        "I love the idea of a reading habit.",
        "I'll try a few podcasts to see what I enjoy.",
        "I can't decide which I prefer.",  # asks itself, says nothing yet
        "I'll take the kids to school; the others can walk.",  # no choice among options
    ):
        assert not states_standing(said_once, USER), said_once
    # An assistant's "always" is advice, not the user's preference; saying back what the user
    # chose or wants from now on, it states the user's.
    assistant = frozenset({"assistant"})
    assert not states_standing("You should always back up first.", assistant)
    assert not states_standing("Of course! React is a popular choice for dashboards.", assistant)
    assert states_standing("Understood, the synthetic parka is a great choice.", assistant)
    assert states_standing("Got it, I'll keep my answers short from now on.", assistant)
    assert states_standing("I understand your preference for narrated lessons.", assistant)
    assert states_standing("Always back up first, from now on.", frozenset())


def test_a_long_text_of_many_choices_is_read_once() -> None:
    """A choice is looked for, then the others it turns down after it: a text of many "I'll
    take" is not read again from each (a look ahead from each took seconds on this one)."""
    text = "I'll take " * 5000 + "nothing other"
    started = time.perf_counter()
    assert not states_standing.__wrapped__(text, USER)
    assert time.perf_counter() - started < 0.5


def test_an_order_stands_when_said_with_always_or_for_all_work_to_come() -> None:
    for standing in (
        "Always include comments in any code you give me.",
        "Ok. Please, never use global variables.",
        "Remember to only use Python 3 syntax.",
        "In future answers, avoid jargon.",
        "Don't use emojis in any of your replies.",
        "Stick to PEP 8 in the code that you write.",
        "Each time you answer, start with a summary.",
        "Your answers should always be short.",
        "Can you always show the time complexity?",
        "I want all answers to be under 100 words.",
        "When naming functions, start them with 'a_'.",
        "When you show code, add type hints.",
        "Mentor: Always import the 'locale' module.",
    ):
        assert states_standing(standing, USER), standing
    for said_once in (
        "Please format this table as markdown.",  # an order for now
        "Add a docstring to this function.",
        "List all the functions in this file.",
        "Use the second option, it looks better.",
        "Never mind, it works now.",  # not an order about work
        "Always wondered why that happens.",
        "They always make us smile.",  # not opening its clause
        "You always know what to say!",  # not asked of the listener
        "Use it if you like all of them.",
        "Tell me more. Can you write it in Go?",  # a request, not the code one writes
        "When you get a chance, send the file.",
        "Any time is fine for me.",
    ):
        assert not states_standing(said_once, USER), said_once


def test_a_request_for_work_is_asked_in_many_forms() -> None:
    for request in (
        "What is the best way to store user sessions?",
        "What would be a good structure for my routes?",
        "Show me an example of a decorator.",
        "Explain recursion to me.",
        "Could you review this code?",
        "I need a function that validates emails.",
        "Any suggestions for the landing page?",
        "How to implement a binary search in Python?",
        # Asked of no one in particular, and of nobody else.
        "What are some fun things to do in Lisbon?",
        "What are the best museums to visit in New York City?",
        "What's a good hotel to stay at in Kyoto?",
        '"What are the best resources for learning statistics?"',
        "What is a good gift for Mother's Day?",  # an occasion is no one
        "What are some fun traditions for Christmas Eve?",
    ):
        assert asks_for_something_new(request), request
    for not_a_request in (
        "What is the best way Caroline found to relax?",  # about someone else
        "Which library did you show me before?",  # asks back
        "I like a good mystery novel.",  # says, does not ask
        "What are some foods that Audrey likes eating?",  # names someone
        "What would be a good hobby for Tim to pick up?",
        "What are some problems he faced at work?",
        "What are some of the books discussed?",  # about what was said
        "What is a good gift for Audrey on Mother's Day?",  # names someone besides
    ):
        assert not asks_for_something_new(not_a_request), not_a_request


# The second turn is nearer the request in words and meaning (it says "recommend"): only that
# the first says what the user always does, the second what they did once, puts the first first.
TURNS = (
    "User: I always order the gluten-free pasta in Rome.",
    "User: Once I ordered the gluten-free pasta in Rome they recommend.",
)


async def test_a_request_finds_the_standing_preference_first(running: Running) -> None:
    await _add_turns(running, TURNS)
    assert await _found_first(running, TURNS, "Can you recommend pasta in Rome for me?") == TURNS[0]
    # A question about what was done is no request: the nearer turn comes first.
    asked_back = "Which pasta did I order in Rome they recommend?"
    assert await _found_first(running, TURNS, asked_back) == TURNS[1]


# As above, for an order that stands: the second turn shares more of the request's words.
ORDERS = (
    "User: Always write a docstring in the Python functions you give me.",
    "User: Yesterday I wrote a Python function.",
)


async def test_a_request_finds_the_standing_order_first(running: Running) -> None:
    await _add_turns(running, ORDERS)
    request = "Write a Python function that sums a list."
    assert await _found_first(running, ORDERS, request) == ORDERS[0]


async def _add_turns(running: Running, turns: tuple[str, ...]) -> None:
    for turn in turns:
        await add(running, content=turn)
    await settle(running)


async def _found_first(running: Running, turns: tuple[str, ...], query: str) -> str:
    """Which of `turns` a search for `query` finds first."""
    first = await first_text(running, query, threshold=0)
    found = [t for t in turns if first in t]
    assert len(found) == 1, first
    return found[0]
