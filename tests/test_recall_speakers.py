"""A question that names a speaker favours that speaker's turns, and between a user and an
assistant its person says whose (smemd.engine.recall.speakers): through the real daemon, and
what counts as a speaker at the start of a document."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from smemd.engine.recall.speakers import (
    ASSISTANT_ROLES,
    USER_ROLES,
    QuerySpeakers,
    may_name_someone,
    without_speakers,
)
from smemd.engine.transcripts import speaker_of
from tests.conftest import Running
from tests.test_memory_api import add, first_text, search, settle


def test_a_speaker_is_a_short_name_and_a_colon_at_the_start() -> None:
    assert speaker_of("Caroline: I went to a support group.") == {"caroline"}
    assert speaker_of("  Dr. Lee: take two of these") == {"dr", "lee"}
    assert speaker_of("user: how do I undo a commit?") == {"user"}
    assert speaker_of("[10:32] Sam: on my way") == {"sam"}
    assert speaker_of("[2023-05-08 10:32] **Sam**: on my way") == {"sam"}
    assert speaker_of("**Sam:** on my way") == {"sam"}
    assert speaker_of("The Lord Of The Rings: x") == set()  # more than four words
    # An initial is kept: it tells apart speakers whose other words are the same.
    assert speaker_of("Mary J: hi") == {"mary", "j"}
    assert speaker_of("Speaker A: hi") != speaker_of("Speaker B: hi")
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
    assert QuerySpeakers("What did Caroline's sister say?").names >= {"caroline", "sister"}
    assert QuerySpeakers("What did Caroline's sister say?").roles == set()
    for mine in ("Which tent did I pick?", "What's my sister's name?", "Remind me of the plan"):
        assert QuerySpeakers(mine).roles == USER_ROLES, mine
    for yours in (
        "What was the hotel you recommended?",
        "I wanted to confirm the eggs you\u2019ve said we need",
        "How many eggs did you say we need?",
        "You mentioned a few apps; which used mnemonics?",
    ):
        assert QuerySpeakers(yours).roles == ASSISTANT_ROLES, yours
    # A request asks for something new: it points at no one unless it speaks of the user.
    assert QuerySpeakers("Can you recommend a hotel?").roles == set()
    assert QuerySpeakers("Can you recommend a hotel for me?").roles == USER_ROLES
    assert QuerySpeakers("What did the assistant suggest?").wants(frozenset({"assistant"}))
    assert not QuerySpeakers("What did Melanie paint?").wants(frozenset({"caroline"}))
    # Words like "the" and "am" in a speaker's name name nobody, unless they are all of it.
    chair, minister = speaker_of("The Chair: order."), speaker_of("Vaughan Gething AM: yes.")
    assert not QuerySpeakers("What did the minister say about students?").wants(chair)
    assert QuerySpeakers("What did the chair rule?").wants(chair)
    assert not QuerySpeakers("What am I allergic to?").wants(minister)
    assert QuerySpeakers("What did Gething think of the plan?").wants(minister)
    assert QuerySpeakers("What will Will bring?").wants(speaker_of("Will: the cake"))


def test_a_query_wants_the_speakers_it_names_most_fully() -> None:
    grads = [speaker_of(f"Grad {letter}: yes.") for letter in "AEF"]
    professor = speaker_of("Professor B: no.")
    wanted = QuerySpeakers("What did Grad E think of the corpus?", [*grads, professor])
    assert [wanted.wants(grad) for grad in grads] == [False, True, False]
    assert not wanted.wants(professor)
    # Named by no initial, every grad is named alike; an initial alone names nobody.
    assert all(QuerySpeakers("What did Grad students say?", grads).wants(g) for g in grads)
    assert not QuerySpeakers("What is E?", grads).wants(grads[1])
    assert not QuerySpeakers("Is A a letter?", [speaker_of("A: hi")]).wants(speaker_of("A: hi"))
    # Both people a query names are wanted, however many others there are.
    both = QuerySpeakers("Did Caroline and Melanie meet?", [frozenset({"caroline"}),
                         frozenset({"melanie"}), frozenset({"jon"})])  # fmt: skip
    assert both.wants(frozenset({"caroline"})) and both.wants(frozenset({"melanie"}))
    assert not both.wants(frozenset({"jon"}))


class Pair(NamedTuple):
    turns: tuple[dict[str, Any], dict[str, Any]]
    firsts: dict[str, int]  # a question, and the turn it must find first
    neutral: str  # a question about neither speaker


# Words and meaning cannot tell a pair's turns apart for its questions: only who said which.
# Named speakers address each other, so BM25 finds each name in both turns; the user and the
# assistant say the same; a speaker kept in the metadata is named in neither text.
PAIRS = {
    "names": Pair(
        (
            {"content": "Caroline: Melanie, I paint the lake at dawn most weekends."},
            {"content": "Melanie: Caroline, I paint the lake at dawn most weekends."},
        ),
        {"What does Caroline paint at dawn?": 0, "What does Melanie paint?": 1},
        "Who paints the lake?",
    ),
    "roles": Pair(
        (
            {"content": "User: The blue tent is the one for the lake trip."},
            {"content": "Assistant: The blue tent is the one for the lake trip."},
        ),
        {"Which tent did I pick for the lake trip?": 0, "Which tent did you recommend?": 1},
        "Which tent is for the lake trip?",
    ),
    "metadata": Pair(
        (
            {"content": "I paint the lake at dawn.", "metadata": {"speaker": "Caroline"}},
            {"content": "I paint the river at dusk.", "metadata": {"speaker": "Melanie"}},
        ),
        {"What does Caroline paint?": 0, "What does Melanie paint?": 1},
        "Who paints?",
    ),
}


@pytest.mark.parametrize("pair", PAIRS)
async def test_the_turn_of_the_speaker_a_question_asks_about_comes_first(
    running: Running, pair: str
) -> None:
    turns, firsts, neutral = PAIRS[pair]
    for turn in turns:
        await add(running, **turn)
    await settle(running)
    contents = [str(turn["content"]) for turn in turns]
    for question, expected in firsts.items():
        first = await first_text(running, question, threshold=0)
        assert [c for c in contents if first in c] == [contents[expected]], (question, first)
    # A question about neither leaves both in the list, in whatever order they score.
    results = await search(running, neutral, threshold=0)
    assert set(contents) <= {str(r.get("memory") or r.get("chunk")) for r in results}


def test_a_query_s_vector_leaves_out_the_speakers_it_names() -> None:
    speakers = [speaker_of("Caroline: hi"), speaker_of("The Chair: order"), frozenset({"user"})]
    assert without_speakers("What did Caroline research?", speakers) == "What did research?"
    assert without_speakers("Where did Caroline's sister go?", speakers) == "Where did sister go?"
    assert without_speakers("What did the Chair rule?", speakers) == "What did the rule?"
    # Only a name as the query writes one: capitalised; and never the whole query.
    assert without_speakers("What did the user pick?", speakers) is None
    assert without_speakers("What did the chair rule?", speakers) is None
    assert without_speakers("Caroline?", speakers) is None
    assert without_speakers("Where is Oscar?", speakers) is None
    assert without_speakers("Where is Caroline?", []) is None
    # Whether to look for speakers first: a capitalised word that is no small word.
    assert may_name_someone("What did Caroline research?")
    assert may_name_someone("Caroline's sister?")
    assert not may_name_someone("What did I say about the lake?")
    assert not may_name_someone("how do i undo a commit")


async def test_a_question_that_names_a_speaker_finds_what_they_said_not_their_name(
    running: Running,
) -> None:
    # Each of Caroline's turns opens with her name, and the question's vector was mostly that
    # name: "I have been thinking about it a lot." came before the answer. BM25 finds no word of
    # the question but her name in her turns, and the speaker signal lifts all of them alike.
    turns = [
        "Caroline: I have been thinking about it a lot.",
        "Caroline: It means a lot to me.",
        "Caroline: Let me know what you decide.",
        "Caroline: I looked into adoption agencies last week.",
        "Melanie: I went to a pottery class yesterday.",
        "Melanie: Caroline, did you see the game?",
    ]
    for day, turn in enumerate(turns, start=1):  # a day apart: each its own session, alone
        await add(
            running, content=turn, date=f"2024-05-{day:02d}T13:56:00", metadata={"chat": "c1"}
        )
    await settle(running)
    # A filtered search learns her name is a speaker's while the store says what it may see.
    mine = {"operator": "and", "operands": [{"field": "chat", "operator": "eq", "value": "c1"}]}
    for question in ("How does Caroline want to grow her family?",
                     "What did Caroline do about having kids?"):  # fmt: skip
        for narrowed in ({}, {"filter": mine}):
            first = await first_text(running, question, threshold=0, **narrowed)
            assert "adoption agencies" in first, (question, narrowed, first)


async def test_a_question_about_grad_e_finds_grad_e_not_every_grad(running: Running) -> None:
    # A meeting's speakers share a word ("Grad A", "Grad E"): the one the question names in full
    # is favoured, not every grad (the other grad's turn has the question's word "data").
    turns = [
        "Grad A: The data should be cleaned before we use it.",
        "Grad E: We should record all of it again in the other room.",
        "Professor B: Let us come back to that next week.",
    ]
    for turn in turns:
        await add(running, content=turn, date="2024-05-02T10:00:00")
    await settle(running)
    first = await first_text(running, "What did Grad E want done with the data?", threshold=0)
    assert first.startswith("Grad E:"), first
