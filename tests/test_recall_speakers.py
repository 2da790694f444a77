"""A question that names a speaker favours that speaker's turns, and between a user and an
assistant its person says whose (smemd.engine.recall.speakers): through the real daemon, and
what counts as a speaker at the start of a document."""

from __future__ import annotations

from smemd.engine.recall.speakers import ASSISTANT_ROLES, USER_ROLES, Asked, speaker_of
from tests.conftest import Running
from tests.test_memory_api import add, search, settle


def test_a_speaker_is_a_short_name_and_a_colon_at_the_start() -> None:
    assert speaker_of("Caroline: I went to a support group.") == {"caroline"}
    assert speaker_of("  Dr. Lee: take two of these") == {"dr", "lee"}
    assert speaker_of("user: how do I undo a commit?") == {"user"}
    assert speaker_of("J. R. R. Tolkien: x") == set()  # more than three words
    assert speaker_of("Mary J: hi") == {"mary"}  # an initial names nobody
    for not_a_speaker in (
        "The plan for our Monday meeting: coffee.",  # a sentence before a colon
        "12:30 lunch with Sam",
        "https://example.com/a: b",
        "Caroline:no space after the colon",
        "I said to Caroline: go.",
        "",
    ):
        assert speaker_of(not_a_speaker) == set(), not_a_speaker


def test_the_question_s_person_points_at_the_user_or_the_assistant() -> None:
    assert Asked("What did Caroline's sister say?").names >= {"caroline", "sister"}
    assert Asked("What did Caroline's sister say?").roles == set()
    for mine in ("Which tent did I pick?", "What's my sister's name?", "Remind me of the plan"):
        assert Asked(mine).roles == USER_ROLES, mine
    for yours in (
        "What was the hotel you recommended?",
        "I wanted to confirm the eggs you\u2019ve said we need",
        "How many eggs did you say we need?",
        "You mentioned a few apps; which used mnemonics?",
    ):
        assert Asked(yours).roles == ASSISTANT_ROLES, yours
    # A request asks for something new: it points at no one unless it speaks of the user.
    assert Asked("Can you recommend a hotel?").roles == set()
    assert Asked("Can you recommend a hotel for me?").roles == USER_ROLES
    assert Asked("What did the assistant suggest?").wants(frozenset({"assistant"}))
    assert not Asked("What did Melanie paint?").wants(frozenset({"caroline"}))


async def test_a_question_naming_a_speaker_finds_their_turn_first(running: Running) -> None:
    # Each turn addresses the other speaker by name and says the same: words and meaning cannot
    # tell them apart, only who said which.
    caroline = "Caroline: Melanie, I paint the lake at dawn most weekends."
    melanie = "Melanie: Caroline, I paint the lake at dawn most weekends."
    await add(running, caroline)
    await add(running, melanie)
    await settle(running)

    async def first(query: str) -> str:
        results = await search(running, query, threshold=0)
        return str(results[0].get("memory") or results[0].get("chunk"))

    assert (await first("What does Caroline paint at dawn?")).startswith("Caroline:")
    assert (await first("What does Melanie paint at dawn?")).startswith("Melanie:")
    # A question that names neither leaves both in the list, in whatever order they score.
    results = await search(running, "Who paints the lake?", threshold=0)
    texts = {str(r.get("memory") or r.get("chunk")) for r in results}
    assert {caroline, melanie} <= texts


async def test_between_a_user_and_an_assistant_the_question_s_person_picks_the_turn(
    running: Running,
) -> None:
    # The same words said by each side: only whose turn it is tells them apart.
    user = "User: The blue tent is the one for the lake trip."
    assistant = "Assistant: The blue tent is the one for the lake trip."
    await add(running, user)
    await add(running, assistant)
    await settle(running)

    async def first(query: str) -> str:
        results = await search(running, query, threshold=0)
        return str(results[0].get("memory") or results[0].get("chunk"))

    assert (await first("Which tent did I pick for the lake trip?")).startswith("User:")
    assert (await first("Which tent did you recommend for the lake trip?")).startswith("Assistant:")
