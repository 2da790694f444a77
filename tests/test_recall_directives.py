"""A query's sentences that only say how to answer ("Answer in one word.") are left out of what
recall searches for (smemd.engine.recall.directives): what is left out, and through the real
daemon, what that changes."""

from __future__ import annotations

from smemd.engine.recall.directives import without_directives
from smemd.engine.recall.query import Query
from tests.conftest import Running
from tests.test_memory_api import add, first_text, settle


def searched(text: str) -> str:
    return without_directives(Query(text=text)).text


def test_a_sentence_about_the_answer_s_form_is_left_out() -> None:
    assert searched("What did I name the cat? Answer in one word.") == "What did I name the cat?"
    assert searched("Which trips did I take? Just the names, nothing else.") == (
        "Which trips did I take?"
    )
    assert searched("In what order did I try the diets? Mention only three items.") == (
        "In what order did I try the diets?"
    )
    assert searched("Keep it brief. Where did Melanie camp?") == "Where did Melanie camp?"


def test_what_the_query_asks_is_kept() -> None:
    for kept in (
        "Answer in one short sentence.",  # nothing else would be left
        "I'm baking tonight. Give me a short list of cakes.",  # cakes: what to find
        "Tell me about the trip. What did we eat?",
        "What did Caroline research?",
        "I went to Paris. It was.",  # says nothing, but is no directive either
        "Is one word enough? Which did I pick?",  # a question is never a directive
    ):
        assert searched(kept) == kept, kept


# The second turn has the directive's words; only the first says what the cat is called.
TURNS = (
    "User: We named the cat Tom.",
    "User: They said one word was the answer, so I wrote one word.",
)


async def test_a_directive_does_not_pull_its_own_words(running: Running) -> None:
    for turn in TURNS:
        await add(running, content=turn)
    await settle(running)
    first = await first_text(running, "What is the cat called? Answer in one word.", threshold=0)
    assert [t for t in TURNS if first in t] == [TURNS[0]], first
