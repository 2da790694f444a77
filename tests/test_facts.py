"""Facts without an LLM: sentence splitting, small-talk filtering, and the three kinds."""

from __future__ import annotations

import pytest

from smemd.engine.ingest.sentence_facts import candidate_facts, classify, is_chatter


def test_a_chat_turn_keeps_the_event_and_drops_the_greetings() -> None:
    turn = (
        "Hey Mel! Good to see you! "
        "I went to a LGBTQ support group yesterday and it was so powerful."
    )
    facts = candidate_facts(turn)
    assert facts == ["I went to a LGBTQ support group yesterday and it was so powerful."]
    assert classify(facts[0]) == "episode"


@pytest.mark.parametrize(
    ("text", "chatter"),
    [
        ("lol", True),
        ("so cool!", True),
        ("Thanks, Caroline! Take care.", True),
        ("really?", True),
        ("\U0001f602\U0001f602", True),
        ("yesss, see ya!", True),  # a stretched word, chat's own words
        ("awww ikr", True),
        ("Yesss! I got the job.", False),
        ("What did you get?", False),  # a question that needs the turn before
        ("What breed?", False),  # a question of its own
        ("Since 2016.", False),
        ("89", False),  # an answer, with the question before it
        ("```python\nprint(1)\n```", False),
        ("Wow, that is great! We adopted a puppy.", False),
        ("haha " * 100, False),  # past CHATTER_MAX_CHARS: never read word by word
    ],
)
def test_a_message_of_small_talk_alone_says_nothing_of_its_own(text: str, chatter: bool) -> None:
    assert is_chatter(text) is chatter


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "Dr. Smith lives in Boston. He works at MIT.",
            ["Dr. Smith lives in Boston.", "He works at MIT."],
        ),
        ("Alex moved to the U.S. in 2019 for work.", ["Alex moved to the U.S. in 2019 for work."]),
        ("Use a kettle, e.g. the red one, for tea.", ["Use a kettle, e.g. the red one, for tea."]),
        ("The model scored 3.5 points on the test.", ["The model scored 3.5 points on the test."]),
        ("I was thinking... maybe not today.", ["I was thinking... maybe not today."]),
        ("Wait... The store closed early.", ["The store closed early."]),
        (
            'She said "I adopted a cat." Then she left.',
            ['She said "I adopted a cat."', "Then she left."],
        ),
        ('"Is the cat fine?" she asked twice.', ['"Is the cat fine?" she asked twice.']),
        (
            "We sold apples, pears, etc. and then left.",
            ["We sold apples, pears, etc. and then left."],
        ),
        ("J. R. Tolkien wrote books.", ["J. R. Tolkien wrote books."]),
    ],
)
def test_sentences_survive_abbreviations_decimals_ellipses_and_quotes(
    text: str, sentences: list[str]
) -> None:
    assert candidate_facts(text) == sentences


def test_lines_and_bullets_are_boundaries_but_wrapped_lines_join() -> None:
    text = (
        "# Team notes\n"
        "- Alex leads the platform team\n"
        "* Bob joined from Berlin\n"
        "2. Carol runs the on-call rota.\n"
        "> Dana wrote the migration\n"
        "The report was long and it\n"
        "wrapped over two lines.\n"
    )
    assert candidate_facts(text) == [
        "Alex leads the platform team",
        "Bob joined from Berlin",
        "Carol runs the on-call rota.",
        "Dana wrote the migration",
        "The report was long and it wrapped over two lines.",
    ]


def test_markdown_noise_code_and_tables_are_not_facts() -> None:
    text = (
        "## Setup\n\n---\n\n```sh\necho the server runs on port 80\n```\n\n"
        "| name | age |\n|---|---|\n| Alex | 30 |\n\n"
        "**Alex** keeps notes in [Obsidian](https://obsidian.md).\n"
    )
    assert candidate_facts(text) == ["Alex keeps notes in Obsidian."]


@pytest.mark.parametrize(
    "filler",
    [
        "ok",
        "Okay.",
        "thanks!",
        "Thank you so much!",
        "haha",
        "Hahaha!!",
        "lol",
        "sounds good",
        "Wow, that's great!",
        "Wow, that\u2019s great!",
        "Hi Caroline!",
        "Good morning!",
        "Good to see you!",
        "Nice one!",
        "Got it.",
        "Me too!",
        "---",
        "42",
        "\U0001f389\U0001f389",
        "What do you do for work?",
    ],
)
def test_questions_fillers_and_acknowledgements_are_dropped(filler: str) -> None:
    assert candidate_facts(filler) == []


def test_short_sentences_with_content_are_kept() -> None:
    assert candidate_facts("Alex is 30. I love tea. Paris!") == [
        "Alex is 30.",
        "I love tea.",
        "Paris!",
    ]


def test_a_leading_greeting_is_trimmed_from_a_sentence_that_says_something() -> None:
    assert candidate_facts("Hey Mel, I moved to Portland last week!") == [
        "I moved to Portland last week!"
    ]


@pytest.mark.parametrize(
    "talk",
    [
        "Yep, Joanna.",
        "Thanks, Nate!",
        "Wow, that's cool, Caroline!",
        "Jon, that is so cool!",
        "See ya Nate!",
        "Bye Joanna!",
        "Congrats Joanna!",
    ],
)
def test_a_name_spoken_to_is_not_content(talk: str) -> None:
    assert candidate_facts(talk) == []


def test_names_in_what_is_said_still_are() -> None:
    text = "I love Seattle! Mel, I moved to Portland. I met Alex, Sam."
    assert candidate_facts(text) == [
        "I love Seattle!",
        "Mel, I moved to Portland.",
        "I met Alex, Sam.",
    ]


def test_whitespace_collapses_and_duplicates_go_case_insensitively_in_order() -> None:
    text = "Alex   likes\ttea.\n\n- alex likes tea\nBob likes coffee. ALEX LIKES TEA!"
    assert candidate_facts(text) == ["Alex likes tea.", "Bob likes coffee."]


def test_text_in_any_script_is_content() -> None:
    assert candidate_facts("Café Müller is in Köln. 東京に住んでいます") == [
        "Café Müller is in Köln.",
        "東京に住んでいます",
    ]


@pytest.mark.parametrize(
    ("fact", "kind"),
    [
        ("I love hiking in the mountains.", "preference"),
        ("Alex likes tea.", "preference"),
        ("Bob hates mornings.", "preference"),
        ("My favorite color is blue.", "preference"),
        ("Carol prefers trains to planes.", "preference"),
        ("I want a dog.", "preference"),
        ("I'd like to visit Japan.", "preference"),
        ("It looks like rain today.", "fact"),
        ("I went to a LGBTQ support group yesterday.", "episode"),
        ("We visited Rome last summer.", "episode"),
        ("She met her sister on Monday.", "episode"),
        ("They attended the conference in 2022.", "episode"),
        ("Alex moved to Portland two weeks ago.", "episode"),
        ("I loved the concert on Friday.", "episode"),  # a past liking is an event
        ("I visited Rome.", "fact"),  # no time cue
        ("I am going to Rome next week.", "fact"),  # not in the past
        ("Alex lives in Seattle.", "fact"),
        ("The cluster has 3 nodes.", "fact"),
        ("We need speed in 2025.", "fact"),  # "need" and "speed" are not past tense
    ],
)
def test_classify(fact: str, kind: str) -> None:
    assert classify(fact) == kind
