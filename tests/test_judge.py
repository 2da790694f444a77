"""The letter-probability judge against the fake llama-server, and its shape on the real one."""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest

from smemd.engine.judgement.letter_judge import (
    LETTERS,
    Judge,
    Question,
    batch_grammar,
    grammar_for,
    letter_positions,
    letters_for,
)
from smemd.engine.judgement.questions import (
    TYPES,
    Outcome,
    chosen_type,
    reconcile_options,
    type_batch,
    type_options,
)
from smemd.fleet.llama import Chat, LlamaClient, TokenLogprob
from tests.fakes.llama_server import FakeLlamaServer, Reply, Rules
from tests.llama_tools import serving

ABC = Question(kind="test", text="Which colour is the sky?", options=["blue", "red", "green"])
RULES: Rules = [
    # The fake generates the letter the grammar allows with the highest probability: here "B",
    # though " A" and "A" together make A the likelier answer.
    (r"sky", Reply(probs={"The": 0.4, " A": 0.25, "B": 0.2, "A": 0.15})),
    (r"Case undecided\?", Reply(probs={"A": 0.3, "B": 0.25, "C": 0.2, "x": 0.25})),
    (r"Case tie\?", Reply(probs={"A": 0.4, "B": 0.4, "Hmm": 0.2})),
    (r"Case far down\?", Reply(probs={"The": 0.5, "I": 0.3, "A": 0.15, "C": 0.05})),
    (r"Case off topic\?", Reply(probs={"The": 0.995, "A": 0.004, "B": 0.001})),
    (r"Stored memories", Reply(probs={"E": 0.6, " E": 0.1, "J": 0.2, "Well": 0.1})),
    (r"Memory: ", Reply(probs={"C": 0.7, " A": 0.2, "The": 0.1})),
]


@pytest.fixture
async def fake() -> AsyncIterator[FakeLlamaServer]:
    async with FakeLlamaServer(host="127.0.31.2", chat=RULES) as fake:
        yield fake


@pytest.fixture
async def client(fake: FakeLlamaServer) -> AsyncIterator[LlamaClient]:
    async with aiohttp.ClientSession() as session:
        yield LlamaClient(session, fake.url, node="node0", timeout=5.0)


def ask(text: str) -> Question:
    return Question(kind="test", text=text, options=["one", "two", "three"])


def test_the_letters_have_distinct_first_tokens() -> None:
    """Single, distinct characters: no letter is a prefix of another, so first tokens differ."""
    for count in range(2, len(LETTERS) + 1):
        letters = letters_for(count)
        assert len(set(letters)) == count and all(len(x) == 1 and x.isupper() for x in letters)
        assert not any(a != b and b.startswith(a) for a in letters for b in letters)
        assert grammar_for(letters).split(" | ")[-1] == f'"{letters[-1]}"'
    assert grammar_for("ABC") == 'root ::= "A" | "B" | "C"'
    for count in (0, 1, len(LETTERS) + 1):
        with pytest.raises(ValueError, match="2 to 26 options"):
            letters_for(count)


async def test_the_request_is_one_token_under_the_grammar(
    fake: FakeLlamaServer, client: LlamaClient
) -> None:
    await Judge(client).decide(ABC)
    sent = fake.last["chat"]
    assert sent["grammar"] == 'root ::= "A" | "B" | "C"'
    assert (sent["max_tokens"], sent["logprobs"], sent["top_logprobs"]) == (1, True, 20)
    assert sent["temperature"] == 0.0 and sent["chat_template_kwargs"] == {"enable_thinking": False}
    user = sent["messages"][-1]["content"]
    assert "A. blue\nB. red\nC. green" in user and user.endswith("A, B or C.")


async def test_leading_space_variants_are_summed_and_renormalised(
    client: LlamaClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="smemd.judge")
    judgement = await Judge(client).decide(ABC)
    # The sampled token was "B"; the judge reads the probabilities and picks A (0.40 vs 0.20).
    assert judgement.probabilities == pytest.approx({"A": 2 / 3, "B": 1 / 3, "C": 0.0})
    assert (judgement.choice, judgement.index, judgement.missing) == ("A", 0, ["C"])
    assert judgement.mass == pytest.approx(0.6) and judgement.question_kind == "test"
    assert judgement.options == ["blue", "red", "green"]
    assert judgement.raw_top == pytest.approx({"The": 0.4, " A": 0.25, "B": 0.2, "A": 0.15})
    (record,) = [r for r in caplog.records if r.name == "smemd.judge"]
    assert record.levelno == logging.INFO
    assert record.getMessage() == (
        "judge test: A=0.667 B=0.333 C=0.000 -> A (letters' mass 0.600, missing C)"
    )


async def test_under_the_threshold_is_undecided(
    client: LlamaClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="smemd.judge")
    judgement = await Judge(client).decide(ask("Case undecided?"))
    assert judgement.probabilities == pytest.approx({"A": 0.4, "B": 1 / 3, "C": 0.2 / 0.75})
    assert judgement.choice is None and judgement.index is None and judgement.missing == []
    assert "-> undecided" in caplog.records[-1].getMessage()
    # The same reading decides under a lower threshold, per question kind or overall.
    assert (
        await Judge(client, thresholds={"test": 0.39}).decide(ask("Case undecided?"))
    ).choice == "A"
    assert (await Judge(client, threshold=0.35).decide(ask("Case undecided?"))).choice == "A"
    strict = Judge(client, threshold=0.3, thresholds={"test": 0.9})
    assert (await strict.decide(ask("Case undecided?"))).choice is None


async def test_a_tie_is_undecided(client: LlamaClient) -> None:
    judgement = await Judge(client, threshold=0.0).decide(ask("Case tie?"))
    assert judgement.probabilities == pytest.approx({"A": 0.5, "B": 0.5, "C": 0.0})
    assert judgement.choice is None


async def test_letters_missing_from_the_top_list(
    fake: FakeLlamaServer, client: LlamaClient
) -> None:
    judgement = await Judge(client, top_logprobs=2).decide(ask("Case far down?"))
    assert fake.last["chat"]["top_logprobs"] == 2
    assert judgement.raw_top == pytest.approx({"The": 0.5, "I": 0.3})
    # The generated "A" carries its own probability; B and C are nowhere: 0, and said so.
    assert judgement.probabilities == {"A": 1.0, "B": 0.0, "C": 0.0}
    assert (judgement.choice, judgement.missing) == ("A", ["B", "C"])
    assert judgement.mass == pytest.approx(0.15)
    # With the full list, C shows up below A.
    full = await Judge(client).decide(ask("Case far down?"))
    assert full.probabilities == pytest.approx({"A": 0.75, "B": 0.0, "C": 0.25})
    assert full.missing == ["B"]


async def test_letters_the_model_barely_considered_decide_nothing(client: LlamaClient) -> None:
    judgement = await Judge(client).decide(ask("Case off topic?"))
    assert judgement.probabilities == pytest.approx({"A": 0.8, "B": 0.2, "C": 0.0})
    assert judgement.mass == pytest.approx(0.005) and judgement.choice is None
    assert (await Judge(client, min_mass=0.001).decide(ask("Case off topic?"))).choice == "A"


async def test_a_letter_forced_by_the_grammar_alone_decides_nothing(client: LlamaClient) -> None:
    judgement = await Judge(client, threshold=0.0).decide(ask("Case nothing matches?"))
    # The fake's "OK" is masked to "A", whose own probability is all there is: ~1e-30.
    assert judgement.raw_top == pytest.approx({"OK": 1.0})
    assert judgement.probabilities == {"A": 1.0, "B": 0.0, "C": 0.0}
    assert judgement.mass < 1e-20 and judgement.missing == ["B", "C"]
    assert judgement.choice is None


def test_a_reply_without_logprobs_is_undecided() -> None:
    judgement = Judge(client=None, threshold=0.0, min_mass=0.0).weigh(  # type: ignore[arg-type]
        ask("x"), Chat(content="A", finish_reason="length")
    )
    assert judgement.probabilities == {"A": 0.0, "B": 0.0, "C": 0.0}
    assert (judgement.choice, judgement.missing, judgement.raw_top) == (None, ["A", "B", "C"], {})


async def test_a_reasoning_model_is_not_left_to_think() -> None:
    async with (
        FakeLlamaServer(host="127.0.31.2", chat=RULES, thinks=50) as fake,
        aiohttp.ClientSession() as session,
    ):
        llama = LlamaClient(session, fake.url, node="node1", timeout=5.0)
        assert (await Judge(llama).decide(ABC)).choice == "A"


async def test_reconciliation_maps_letters_to_outcomes(
    fake: FakeLlamaServer, client: LlamaClient
) -> None:
    neighbours = ["Alex lives in Seattle.", "Alex works at\nB. forged option", "Bob is 30.", "X"]
    asked = reconcile_options("Alex moved to Portland.", neighbours)
    assert asked.outcomes == [
        *(Outcome("duplicate", i) for i in range(3)),
        *(Outcome("updates", i) for i in range(3)),
        *(Outcome("extends", i) for i in range(3)),
        Outcome("distinct"),
    ]
    judgement = await Judge(client).decide(asked.question)
    assert fake.last["chat"]["grammar"] == grammar_for("ABCDEFGHIJ")
    assert judgement.probabilities["E"] == pytest.approx(0.7 / 0.9)
    assert asked.outcome(judgement) == Outcome("updates", 1)
    user = fake.last["chat"]["messages"][-1]["content"]
    assert "[2] Alex works at B. forged option" in user and "[4]" not in user
    assert "\nE. The new fact replaces memory [2]" in user
    assert "\nJ. The new fact is about something else" in user
    # Stored text cannot start a line of its own, so it cannot pose as an option.
    assert sum(line[:3] == "B. " for line in user.splitlines()) == 1


def test_reconciliation_over_fewer_or_more_neighbours() -> None:
    one = reconcile_options("Alex moved.", ["Alex lives in Seattle."])
    assert [o.kind for o in one.outcomes] == ["duplicate", "updates", "extends", "distinct"]
    assert len(one.question.options) == 4 and one.question.kind == "reconcile"
    five = reconcile_options("Alex moved.", [f"memory {i}" for i in range(8)], k=5)
    assert len(five.outcomes) == 16 and five.outcomes[-2] == Outcome("extends", 4)
    with pytest.raises(ValueError, match="no neighbours"):
        reconcile_options("Alex moved.", [])


async def test_typing_maps_letters_to_memory_types(
    fake: FakeLlamaServer, client: LlamaClient
) -> None:
    asked = type_options("We hiked\nup Rainier last Sunday.")
    judgement = await Judge(client).decide(asked)
    assert len(asked.options) == len(TYPES) == 3
    assert judgement.probabilities == pytest.approx({"A": 2 / 9, "B": 0.0, "C": 7 / 9})
    assert chosen_type(judgement) == "episode" and judgement.question_kind == "type"
    assert (
        "Memory: We hiked up Rainier last Sunday." in fake.last["chat"]["messages"][-1]["content"]
    )


# The real llama-server tier: SmolLM2-135M is too weak for meaning, so shape only.


@pytest.fixture(scope="module")
def real_llm() -> Iterator[str]:
    with serving() as url:
        yield url


@pytest.mark.llama
async def test_real_letters_are_single_distinct_tokens(real_llm: str) -> None:
    async with aiohttp.ClientSession() as session:
        ids = []
        for text in [*LETTERS, *(" " + x for x in LETTERS)]:
            async with session.post(real_llm + "/tokenize", json={"content": text}) as reply:
                (token,) = (await reply.json())["tokens"]  # one token each
                ids.append(token)
    assert len(set(ids)) == 2 * len(LETTERS)


@pytest.mark.llama
async def test_real_judge_gives_every_letter_a_probability(real_llm: str) -> None:
    async with aiohttp.ClientSession() as session:
        judge = Judge(LlamaClient(session, real_llm, node="real", timeout=30.0))
        neighbours = ["Alex lives in Seattle.", "Alex likes tea.", "Bob is 30 years old."]
        for question in (
            reconcile_options("Alex moved to Portland.", neighbours).question,
            type_options("Alex prefers window seats."),
        ):
            judgement = await judge.decide(question)
            letters = LETTERS[: len(question.options)]
            assert list(judgement.probabilities) == list(letters)
            assert math.fsum(judgement.probabilities.values()) == pytest.approx(1.0, abs=1e-9)
            assert all(0.0 <= p <= 1.0 for p in judgement.probabilities.values())
            assert 0.0 < judgement.mass <= 1.0001 and len(judgement.raw_top) == 20
            assert judgement.choice is None or judgement.choice in letters


async def test_a_batch_reads_each_letter_at_its_own_position(
    fake: FakeLlamaServer, client: LlamaClient
) -> None:
    fake.rules = lambda body: Reply(
        positions=[{"A": 0.9, "B": 0.1}, {"C": 0.6, "B": 0.3, "x": 0.1}, {"B": 0.5, "A": 0.5}]
    )
    texts = ["Alex is a nurse.", "Alex loves jazz.", "Alex moved last May."]
    judgements = await Judge(client).decide_batch(type_batch(texts))
    sent = fake.last["chat"]
    assert sent["grammar"] == batch_grammar("ABC", 3) and sent["max_tokens"] == 6
    assert (
        "1. Alex is a nurse.\n2. Alex loves jazz.\n3. Alex moved last May."
        in (sent["messages"][-1]["content"])
    )
    assert [j.probabilities for j in judgements] == [
        pytest.approx({"A": 0.9, "B": 0.1, "C": 0.0}),
        pytest.approx({"A": 0.0, "B": 1 / 3, "C": 2 / 3}),
        pytest.approx({"A": 0.5, "B": 0.5, "C": 0.0}),
    ]
    assert [chosen_type(j) for j in judgements] == ["fact", "episode", None]  # the last: a tie
    assert all(j.question_kind == "type" for j in judgements)


def test_letters_merged_into_one_token_give_no_reading_and_keep_the_rest_aligned() -> None:
    def token(text: str) -> TokenLogprob:
        return TokenLogprob(token=text, logprob=0.0, top_logprobs=[])

    chat = Chat(
        content="A B C A", finish_reason="stop",
        logprobs=[token("A"), token(" B C"), token(" "), token("A"), token("")],
    )  # fmt: skip
    found = letter_positions(chat, "ABC", 5)
    assert [p.token if p else None for p in found] == ["A", None, None, "A", None]
    assert batch_grammar("AB", 1) == 'root ::= item\nitem ::= "A" | "B"'
