"""The Porter stemmer against the examples of Porter's paper."""

from __future__ import annotations

import pytest

from smemd.engine.index.stemmer import stem

PAPER = """caresses caress ponies poni ties ti caress caress cats cat feed feed agreed agre
plastered plaster bled bled motoring motor sing sing conflated conflat troubled troubl sized size
hopping hop tanned tan falling fall hissing hiss fizzed fizz failing fail filing file happy happi
sky sky relational relat conditional condit rational ration valenci valenc digitizer digit
conformabli conform radicalli radic differentli differ vileli vile analogousli analog
vietnamization vietnam predication predic operator oper feudalism feudal decisiveness decis
hopefulness hope callousness callous formaliti formal sensitiviti sensit sensibiliti sensibl
triplicate triplic formative form formalize formal electriciti electr electrical electr hopeful
hope goodness good revival reviv allowance allow inference infer airliner airlin gyroscopic
gyroscop adjustable adjust defensible defens irritant irrit replacement replac adjustment adjust
dependent depend adoption adopt homologou homolog communism commun activate activ angulariti
angular homologous homolog effective effect bowdlerize bowdler probate probat rate rate cease
ceas controll control roll roll generalizations gener oscillators oscil""".split()


@pytest.mark.parametrize(("word", "expected"), list(zip(PAPER[::2], PAPER[1::2], strict=True)))
def test_paper_examples(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_forms_of_one_verb_meet() -> None:
    assert len({stem(w) for w in ("move", "moved", "moves", "moving")}) == 1


def test_short_and_non_ascii_words_are_their_own_stem() -> None:
    assert [stem(w) for w in ("is", "a", "café", "2024", "r2d2")] == [
        "is",
        "a",
        "café",
        "2024",
        "r2d2",
    ]
