"""The first clause of a request, spoken before its first sentence has arrived whole
(`text/clauses.py`): where it is cut, where it never is, and that a streamed text says exactly
what the same text sent at once says, however it is chunked."""

from __future__ import annotations

import random

import pytest

from wyoming_multitts.text import TextFrontEnd, TextPolicy, spoken_sentences
from wyoming_multitts.text.clauses import MAX_FIRST_WORDS, first_clause_end

ENGLISH = TextPolicy(languages=("en",))


def first_piece(text: str) -> str:
    return spoken_sentences(text, ENGLISH, first_clause=True)[0]


@pytest.mark.parametrize(
    ("text", "first"),
    [
        # at the first clause mark after four words or more
        ("I checked the weather for you, and it will be sunny.", "I checked the weather for you,"),
        ("The lights are off now; the heating is on.", "The lights are off now;"),
        ("Your package arrived today – it is at the door.", "Your package arrived today –"),
        # not after fewer words: the next mark, or the sentence whole
        ("Hi, I checked the weather for you, and it is fine.",
         "Hi, I checked the weather for you,"),
        ("Sure, the lights are off.", "Sure, the lights are off."),
        # after the 12th word when no mark comes
        (
            "The forecast shows mild temperatures and light rain in the afternoon hours across "
            "the whole region.",
            "The forecast shows mild temperatures and light rain in the afternoon hours",
        ),
        # a short sentence is spoken whole
        ("It is sunny.", "It is sunny."),
        # numbers are spelled out whole: no cut inside "1,000" or between "12" and "000"
        ("We counted 1,000 birds at the lake, which is a lot.",
         "We counted one thousand birds at the lake,"),
        # Markdown: never inside emphasis or a link
        ("The **lights in the kitchen, hall** and garden are on.",
         "The lights in the kitchen, hall and garden are on."),
        ("See [the page about lights, heating](x) for the details, or ask me.",
         "See the page about lights, heating for the details,"),
        # Chinese: each character counts as a word, the clause mark ends it
        ("今天天气很好，我们去公园散步吧。", "今天天气很好，"),
    ],
)  # fmt: skip
def test_where_the_first_clause_ends(text: str, first: str) -> None:
    if any("\u4e00" <= char <= "\u9fff" for char in text):
        assert spoken_sentences(text, TextPolicy(languages=("zh",)), True)[0] == first
    else:
        assert first_piece(text) == first


def test_two_numbers_in_a_row_are_not_cut_apart() -> None:
    words = " ".join(["word"] * (MAX_FIRST_WORDS - 1))
    assert first_clause_end(f"{words} 12 000 more words follow here") is None
    assert first_clause_end(f"{words} twelve thousand more") == len(f"{words} twelve")


def test_only_the_first_sentence_is_cut_and_nothing_is_lost() -> None:
    text = (
        "I checked the weather for you, and it will be sunny. Later today, in the evening hours, "
        "it will rain a little."
    )
    whole = spoken_sentences(text, ENGLISH)
    cut = spoken_sentences(text, ENGLISH, first_clause=True)
    assert cut[2:] == whole[1:]
    assert " ".join(cut[:2]) == whole[0]


def test_the_next_word_must_be_whole_before_a_cut() -> None:
    """A cut needs the word after it complete: a stream that stops right after the mark, or
    inside the next word, waits; a text that ends there is spoken whole."""
    assert first_clause_end("I checked the weather for you,") is None
    assert first_clause_end("I checked the weather for you, an") is None
    assert first_clause_end("I checked the weather for you, and ") == len(
        "I checked the weather for you,"
    )


TEXTS = [
    "I checked the weather for you, and it will be sunny with 21 degrees tomorrow. Enjoy **your** "
    "day!",
    "The forecast for the next few days shows mild temperatures and light rain in the afternoon "
    "hours across the region.",
    "Dr. Smith, the doctor at the clinic, said 1,000 people came on 3. May. Thanks!",
    "Turn on the lights in the `kitchen, hall` and garden, then lock the door.",
    "## Summary\n\n- Lights: off, all of them\n- Heating: on, 21 °C\n\nAnything else?",
    "OK.",
]


@pytest.mark.parametrize("text", TEXTS)
def test_a_streamed_text_says_what_the_same_text_sent_at_once_says(text: str) -> None:
    """Whatever the chunking (HA's chunks are not on word boundaries), the same pieces."""
    whole = spoken_sentences(text, ENGLISH, first_clause=True)
    rng = random.Random(text)
    for _ in range(20):
        front_end = TextFrontEnd(ENGLISH, first_clause=True)
        pieces, start = [], 0
        while start < len(text):
            end = start + rng.randint(1, 12)
            pieces += front_end.add(text[start:end])
            start = end
        pieces += front_end.finish()
        assert pieces == whole


def test_the_first_clause_comes_out_before_its_sentence_ends() -> None:
    front_end = TextFrontEnd(ENGLISH, first_clause=True)
    assert front_end.add("I checked the weather for you, and") == []
    assert front_end.add(" it will") == ["I checked the weather for you,"]
    assert front_end.add(" be sunny. Then") == ["and it will be sunny."]
    assert front_end.finish() == ["Then"]
