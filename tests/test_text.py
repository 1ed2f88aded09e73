"""Tests for the shared text front end (`wyoming_multitts.text`)."""

from __future__ import annotations

import random
import time

import pytest

from wyoming_multitts.text import (
    SPOKEN_MARKS,
    SentenceSplitter,
    SpokenWord,
    is_speakable,
    normalize,
    split_sentences,
    split_to_length,
    spoken_words,
    text_pieces,
)

# Seed for the random word soup, so a failure can be reproduced.
_RANDOM_SEED = 1234

# Length of the long unpunctuated sentence (characters).
_LONG_TEXT_CHARS = 2000

# A text with every kind of sentence end (and of non-end) the splitter knows, and its sentences.
_MIXED_TEXT = (
    "Hello world. How are you? Fine!! Ask Dr. Smith or St. Mary's (A. B. Jones).\n\n"
    "Steps: 1. Open it. 2) Close it. It is 3.14, e.g. exactly... Right? “Quoted.” Next\n"
    "**Bold** and *it*.\n* item one\n* item two\r\n\r\n你好。我很好！“是的。”他说…… Ok… then "
    "क्या हाल है। ठीक है؟ نعم. Ende"
)
_MIXED_SENTENCES = [
    "Hello world.",
    "How are you?",
    "Fine!!",
    "Ask Dr. Smith or St. Mary's (A. B. Jones).",
    "Steps: 1.",
    "Open it.",
    "2) Close it.",
    "It is 3.14, e.g. exactly...",
    "Right? “Quoted.”",
    "Next\nBold and it.\n item one\n item two",
    "你好。",
    "我很好！",
    "“是的。”",
    "他说……",
    "Ok…",
    "then क्या हाल है।",
    "ठीक है؟",
    "نعم.",
    "Ende",
]

# Empty chunks a stream may interleave (clients send them; each must cost next to nothing).
_EMPTY_CHUNKS = 10_000

# Patterns that, repeated, made some step of the front end take quadratic time (or could have):
# runs of one character, unclosed markup, number separators, sentence ends and abbreviations.
# fmt: off
_ADVERSARIAL_PATTERNS = [
    "*", "_", "1", "1,", ",000", "1.", "$1", "<", "<a", "[", "[a", ":", "1:", " ", "\n", "\r",
    "a.", "A. ", ". ", "…", "。", "。a", "*a ", "_a ", "**a", "* ", "\n* ", "1.2", "1. a ",
    "*a_ 1,2.3 $4 <b [c 5:6 A. 。\n",
]
# fmt: on

# Length of each adversarial text (characters), and the time the whole chain may take on it:
# generous for a slow, shared machine, while a quadratic step takes minutes at this length.
_ADVERSARIAL_CHARS = 200_000
_ADVERSARIAL_SECONDS = 2.0

# A long stream for the splitter (characters), and the time it may take to split it.
_LONG_STREAM_CHARS = 1 << 20
_LONG_STREAM_SECONDS = 1.0

# Piece length used with the adversarial texts (that of most engines).
_ENGINE_MAX_CHARS = 200


def _squeeze(text: str) -> str:
    """The text without any whitespace, to compare contents up to whitespace."""
    return "".join(text.split())


def _word_soup(n_chars: int, seed: int = _RANDOM_SEED) -> str:
    """Exactly n_chars of lowercase words of 1–12 letters separated by single spaces."""
    rng = random.Random(seed)
    words: list[str] = []
    while sum(len(word) + 1 for word in words) < n_chars:
        words.append("".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 12))))
    return " ".join(words)[:n_chars].strip()


def _stream(chunks: list[str]) -> list[str]:
    """The sentences a splitter hands out for these chunks, then at the end."""
    splitter = SentenceSplitter()
    sentences = [sentence for chunk in chunks for sentence in splitter.add(chunk)]
    return sentences + splitter.finish()


def _random_chunks(text: str, seed: int, empty_chunks: int = 0) -> list[str]:
    """The text cut at random places into chunks of 1–20 characters, with empty ones between."""
    rng = random.Random(seed)
    chunks = []
    start = 0
    while start < len(text):
        size = rng.randint(1, 20)
        chunks.append(text[start : start + size])
        start += size
    for _ in range(empty_chunks):
        chunks.insert(rng.randint(0, len(chunks)), "")
    return chunks


def _repeated(pattern: str, n_chars: int) -> str:
    """The pattern repeated to exactly n_chars characters."""
    return (pattern * (n_chars // len(pattern) + 1))[:n_chars]


def _assert_valid_parts(text: str, parts: list[str], max_chars: int) -> None:
    """Parts are non-empty, stripped, short enough, and together are the text up to whitespace."""
    assert parts, "no parts"
    for part in parts:
        assert part and part == part.strip()
        assert len(part) <= max_chars, (len(part), part)
    assert _squeeze(" ".join(parts)) == _squeeze(text)


# ---------------------------------------------------------------------------
# normalize: English


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # integers, separators, signs, decimals
        ("0", "zero"),
        ("7", "seven"),
        ("13", "thirteen"),
        ("40", "forty"),
        ("99", "ninety-nine"),
        ("100", "one hundred"),
        ("101", "one hundred one"),
        ("1,234", "one thousand two hundred thirty-four"),
        ("1000000", "one million"),
        ("1,000,001", "one million one"),
        ("-5", "minus five"),
        ("It is -3 outside", "It is minus three outside"),
        ("3.14", "three point one four"),
        ("0.5", "zero point five"),
        ("007", "zero zero seven"),
        ("10-20", "ten-twenty"),
        ("COVID-19", "COVID-nineteen"),
        # up to 10^15 as words, then digit by digit
        ("1000000000000000", "one quadrillion"),
        (
            "999999999999999999",
            "nine hundred ninety-nine quadrillion nine hundred ninety-nine trillion "
            "nine hundred ninety-nine billion nine hundred ninety-nine million "
            "nine hundred ninety-nine thousand nine hundred ninety-nine",
        ),
        (
            "12345678901234567890",
            "one two three four five six seven eight nine zero "
            "one two three four five six seven eight nine zero",
        ),
        # ordinals
        ("1st", "first"),
        ("2nd", "second"),
        ("3rd", "third"),
        ("4th", "fourth"),
        ("11th", "eleventh"),
        ("12th", "twelfth"),
        ("20th", "twentieth"),
        ("22nd", "twenty-second"),
        ("103rd", "one hundred third"),
        ("100th", "one hundredth"),
        ("1,000th", "one thousandth"),
        ("the 21ST century", "the twenty-first century"),
        # percent
        ("50%", "fifty percent"),
        ("2.5 %", "two point five percent"),
        ("-1%", "minus one percent"),
        ("100% sure.", "one hundred percent sure."),
        # currency
        ("$5", "five dollars"),
        ("$1", "one dollar"),
        ("$3.50", "three dollars fifty cents"),
        ("$3.5", "three dollars fifty cents"),
        ("$0.01", "one cent"),
        ("$0.50", "fifty cents"),
        ("$1.00", "one dollar"),
        ("$1,250", "one thousand two hundred fifty dollars"),
        ("$1.5 million", "one point five million dollars"),
        ("-$5", "minus five dollars"),
        ("€1", "one euro"),
        ("€20.99", "twenty euros ninety-nine cents"),
        ("£1", "one pound"),
        ("£2.01", "two pounds one penny"),
        ("£3.20", "three pounds twenty pence"),
        ("It costs $5.", "It costs five dollars."),
        # years
        ("1984", "nineteen eighty-four"),
        ("2024", "twenty twenty-four"),
        ("1100", "eleven hundred"),
        ("1900", "nineteen hundred"),
        ("1905", "nineteen oh five"),
        ("2000", "two thousand"),
        ("2005", "two thousand five"),
        ("2010", "twenty ten"),
        ("2099", "twenty ninety-nine"),
        ("2100", "two thousand one hundred"),
        ("1099", "one thousand ninety-nine"),
        ("In 1984, we", "In nineteen eighty-four, we"),
        ("1,984", "one thousand nine hundred eighty-four"),
        ("1984.5", "one thousand nine hundred eighty-four point five"),
        # times
        ("3:30", "three thirty"),
        ("7:05", "seven oh five"),
        ("10:00", "ten o'clock"),
        ("14:00", "fourteen hundred"),
        ("23:45", "twenty-three forty-five"),
        ("at 3:30pm", "at three thirty pm"),
        # symbols
        ("salt & pepper", "salt and pepper"),
        ("2 + 2 = 4", "two plus two equals four"),
        ("a+b=c", "a plus b equals c"),
        ("me@home", "me at home"),
        ("C++", "C plus plus"),
        ("a % b", "a percent b"),
        ("just %.", "just percent."),
        # letters next to digits, versions
        ("mp3", "mp three"),
        ("H2O", "H two O"),
        ("version 1.10.2", "version one dot ten dot two"),
    ],
)
def test_normalize_english(text: str, expected: str) -> None:
    assert normalize(text) == expected
    assert normalize(text, "en_US") == expected


def test_normalize_very_long_number_digit_by_digit() -> None:
    assert normalize("9" * 5000) == " ".join(["nine"] * 5000)
    assert normalize("$" + "1" * 30) == " ".join(["one"] * 30) + " dollars"


# ---------------------------------------------------------------------------
# normalize: every language


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  hello \n\n world \t again  ", "hello world again"),
        ("line one\nline two", "line one line two"),
        ("**bold** text", "bold text"),
        ("*it* and ***both***", "it and both"),
        ("_x_ and __y__", "x and y"),
        ("snake_case_name stays", "snake_case_name stays"),
        ("- milk\n- eggs\n* bread", "milk eggs bread"),
        ("", ""),
        ("   ", ""),
    ],
)
@pytest.mark.parametrize("language", ["en", "de", "fr", "zh"])
def test_normalize_cleanup_every_language(text: str, expected: str, language: str) -> None:
    assert normalize(text, language) == expected


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("Il a 5 ans & 3,50 €", "fr", "Il a 5 ans & 3,50 €"),
        ("Es ist 3:30 Uhr, 50%", "de", "Es ist 3:30 Uhr, 50%"),
        ("我有 2 个", "zh", "我有 2 个"),
    ],
)
def test_normalize_other_languages_keep_digits(text: str, language: str, expected: str) -> None:
    assert normalize(text, language) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Well <laugh> that is 5", "Well <laugh> that is five"),
        ("<laugh>", "<laugh>"),
        ("<sigh> ok <chuckle>", "<sigh> ok <chuckle>"),
        ("[laughs] 2 times [clears throat]", "[laughs] two times [clears throat]"),
        ("<tag_1> and [item_2 *x*]", "<tag_1> and [item_2 *x*]"),
        ("<|im_start|>", "<|im_start|>"),
        ("3 < 5", "three < five"),
    ],
)
def test_normalize_keeps_tags(text: str, expected: str) -> None:
    assert normalize(text) == expected


# ---------------------------------------------------------------------------
# is_speakable


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello", True),
        ("5", True),
        ("Привет", True),
        ("你好", True),
        ("٣", True),
        ("<laugh> ha", True),
        ("[laughs]", True),
        ("", False),
        ("  ", False),
        ("...", False),
        ("?!", False),
        ("— * —", False),
        ("<laugh>", False),
        ("<laugh> <sigh> !", False),
    ],
)
def test_is_speakable(text: str, expected: bool) -> None:
    assert is_speakable(text) is expected


# ---------------------------------------------------------------------------
# SentenceSplitter and split_sentences


def test_splitter_streams_chunks_cut_mid_word() -> None:
    splitter = SentenceSplitter()
    emitted = [splitter.add(chunk) for chunk in ["Hello wor", "ld. How are", " you? I am", " fine"]]
    assert [sentence for batch in emitted for sentence in batch] == ["Hello world.", "How are you?"]
    assert emitted[0] == []
    assert splitter.finish() == ["I am fine"]


def test_splitter_finish_empty_and_reusable() -> None:
    splitter = SentenceSplitter()
    assert splitter.finish() == []
    assert splitter.add("   ") == []
    assert splitter.finish() == []
    assert splitter.add("Hello there. Sec") == ["Hello there."]
    assert splitter.add("ond one") == []
    assert splitter.finish() == ["Second one"]
    assert splitter.finish() == []
    assert splitter.add("Yes. No") == []  # "Yes." could still be an abbreviation like "Mr."
    assert splitter.finish() == ["Yes. No"]


def test_splitter_holds_back_abbreviations() -> None:
    splitter = SentenceSplitter()
    assert splitter.add("Ask Dr. Smith now. Then") == ["Ask Dr. Smith now."]
    assert splitter.finish() == ["Then"]


def test_splitter_one_character_at_a_time() -> None:
    text = "First one. Second one! Third one? Last"
    splitter = SentenceSplitter()
    sentences = [sentence for char in text for sentence in splitter.add(char)]
    assert sentences + splitter.finish() == split_sentences(text)


def test_splitter_ends_at_blank_line_without_waiting() -> None:
    splitter = SentenceSplitter()
    assert splitter.add("A paragraph.\n") == []
    assert splitter.add("\n") == ["A paragraph."]
    assert splitter.add("Next one\r\n\r\n") == ["Next one"]
    assert splitter.finish() == []


def test_splitter_holds_chinese_end_until_something_follows() -> None:
    splitter = SentenceSplitter()
    assert splitter.add("你好。") == []  # a closing quote may still follow
    assert splitter.add("”") == []
    assert splitter.add("他说") == ["你好。”"]
    assert splitter.finish() == ["他说"]


def test_splitter_same_sentences_whatever_the_chunking() -> None:
    assert split_sentences(_MIXED_TEXT) == _MIXED_SENTENCES
    assert _stream(list(_MIXED_TEXT)) == _MIXED_SENTENCES
    for seed in range(10):
        assert _stream(_random_chunks(_MIXED_TEXT, seed)) == _MIXED_SENTENCES
        chunks = _random_chunks(_MIXED_TEXT, seed, empty_chunks=_EMPTY_CHUNKS)
        assert _stream(chunks) == _MIXED_SENTENCES


@pytest.mark.parametrize("pattern", ["A. ", ". ", "。", "\n", "\r\n", "1. A ", "*a", "…x"])
def test_splitter_same_sentences_whatever_the_chunking_adversarial(pattern: str) -> None:
    text = _repeated(pattern, 300)
    expected = split_sentences(text)
    assert _stream(list(text)) == expected
    assert _stream(_random_chunks(text, seed=len(pattern))) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("   ", []),
        ("Just one", ["Just one"]),
        ("Hello world. How are you? Fine!", ["Hello world.", "How are you?", "Fine!"]),
        ("Dr. Smith is here. He waits.", ["Dr. Smith is here.", "He waits."]),
        ("It is 3.14 exactly. Yes.", ["It is 3.14 exactly.", "Yes."]),
        ("你好。我很好。", ["你好。", "我很好。"]),
        ("Items: 1. Milk. 2) Eggs", ["Items: 1.", "Milk.", "2) Eggs"]),
        ("Wait… what? No.\n\nSee Dr.\n\nOk", ["Wait…", "what?", "No.", "See Dr.", "Ok"]),
        ("**Bold** text. Quiet *now*", ["Bold text.", "Quiet now"]),
        # closers after … stay with their sentence, and a run of end marks is one end
        # (sentence-stream handed out '" he said.' and "!" as sentences of their own)
        ('"Wait…" he said.', ['"Wait…"', "he said."]),
        ("真的吗？! 是的。", ["真的吗？!", "是的。"]),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


# ---------------------------------------------------------------------------
# split_to_length


def test_split_long_sentence_without_punctuation() -> None:
    text = _word_soup(_LONG_TEXT_CHARS)
    assert len(text) >= _LONG_TEXT_CHARS - 1
    for max_chars in (50, 150, 400):
        parts = split_to_length(text, max_chars)
        _assert_valid_parts(text, parts, max_chars)
        assert len(parts) >= len(text) // max_chars
        # cut at spaces only: no word is broken
        assert " ".join(parts).split() == text.split()


def test_split_without_spaces_is_a_hard_cut() -> None:
    text = "x" * 25
    assert split_to_length(text, 10) == ["x" * 10, "x" * 10, "x" * 5]
    text = "a" * _LONG_TEXT_CHARS
    parts = split_to_length(text, 128)
    assert "".join(parts) == text and max(map(len, parts)) == 128


def test_split_prefers_clause_breaks() -> None:
    text = "This is a rather long sentence, with a comma here; and a semicolon there, ok."
    parts = split_to_length(text, 40)
    _assert_valid_parts(text, parts, 40)
    # "with a comma here;" would be under half of max_chars, so the space is used there
    assert parts == [
        "This is a rather long sentence,",
        "with a comma here; and a semicolon",
        "there, ok.",
    ]


def test_split_ignores_clause_break_too_early() -> None:
    text = "Hi, " + " ".join(["word"] * 30)
    parts = split_to_length(text, 60)
    _assert_valid_parts(text, parts, 60)
    assert parts[0] != "Hi,"


def test_split_dash_and_cjk_comma() -> None:
    text = "first part of it — second part of the sentence that is long"
    assert split_to_length(text, 30)[0] == "first part of it —"
    cjk = "我们今天去公园散步，然后去吃饭，最后回家休息一下"
    parts = split_to_length(cjk, 12)
    assert parts[0] == "我们今天去公园散步，"
    assert "".join(parts) == cjk


def test_split_avoids_tiny_last_part() -> None:
    text = " ".join(["word"] * 20) + " end"  # 103 characters
    parts = split_to_length(text, 100)
    _assert_valid_parts(text, parts, 100)
    assert len(parts) == 2 and len(parts[-1]) >= 25


@pytest.mark.parametrize(
    ("text", "max_chars", "expected"),
    [
        ("", 10, []),
        ("   ", 10, []),
        ("short", 10, ["short"]),
        ("  exactly10  ", 10, ["exactly10"]),
        ("ab", 1, ["a", "b"]),
        ("a b c", 1, ["a", "b", "c"]),
        ("one two three", 7, ["one two", "three"]),
    ],
)
def test_split_to_length_table(text: str, max_chars: int, expected: list[str]) -> None:
    assert split_to_length(text, max_chars) == expected


@pytest.mark.parametrize("max_chars", [0, -5])
def test_split_to_length_rejects_bad_length(max_chars: int) -> None:
    with pytest.raises(ValueError, match="max_chars"):
        split_to_length("text", max_chars)
    with pytest.raises(ValueError, match="max_chars"):
        text_pieces("text", max_chars)


# ---------------------------------------------------------------------------
# text_pieces


def test_text_pieces_pipeline() -> None:
    pieces = text_pieces("Hello **world**. It costs $5!\n\nBye <laugh>", 100)
    assert pieces == ["Hello world.", "It costs five dollars!", "Bye <laugh>"]


@pytest.mark.parametrize("text", ["", "   ", "...", "?! ...", "<laugh>", "<laugh> <sigh>"])
def test_text_pieces_nothing_to_say(text: str) -> None:
    assert text_pieces(text, 100) == []


def test_text_pieces_never_truncates() -> None:
    soup = _word_soup(_LONG_TEXT_CHARS).capitalize()
    text = f"Start here. {soup}. Then 2 more sentences! The end"
    pieces = text_pieces(text, 120)
    assert all(len(piece) <= 120 for piece in pieces)
    assert _squeeze(" ".join(pieces)) == _squeeze(normalize(text))
    assert pieces[0] == "Start here."
    assert pieces[-1] == "The end"


def test_text_pieces_other_language() -> None:
    assert text_pieces("Ich habe 5 Äpfel. Du auch?", 100, "de") == [
        "Ich habe 5 Äpfel.",
        "Du auch?",
    ]


# ---------------------------------------------------------------------------
# Linear time on any input


@pytest.mark.parametrize("pattern", _ADVERSARIAL_PATTERNS)
def test_front_end_takes_linear_time(pattern: str) -> None:
    text = _repeated(pattern, _ADVERSARIAL_CHARS)
    started = time.perf_counter()
    split_sentences(text)  # as the streamed text is split
    for sentence in split_sentences(normalize(text)):
        split_to_length(sentence, _ENGINE_MAX_CHARS)
    assert time.perf_counter() - started < _ADVERSARIAL_SECONDS


@pytest.mark.parametrize("text", [" " * _ADVERSARIAL_CHARS, "x" * _ADVERSARIAL_CHARS])
def test_split_to_length_takes_linear_time(text: str) -> None:
    started = time.perf_counter()
    parts = split_to_length(f"a{text}b", 10)
    assert time.perf_counter() - started < _ADVERSARIAL_SECONDS
    assert "".join(parts) == f"a{text}b".replace(" ", "")


def test_splitter_takes_linear_time_on_long_stream() -> None:
    text = _repeated(
        "Hello there, this is one sentence. Is it? Yes! Dr. Who.\n\n", _LONG_STREAM_CHARS
    )
    started = time.perf_counter()
    assert len(_stream([text])) > 0
    assert time.perf_counter() - started < _LONG_STREAM_SECONDS
    started = time.perf_counter()
    assert len(_stream([""] * _EMPTY_CHUNKS + [text])) > 0
    assert time.perf_counter() - started < _LONG_STREAM_SECONDS


# ---------------------------------------------------------------------------
# spoken_words


def _plain(text: str, language: str = "en") -> list[str]:
    return [str(word) for word in spoken_words(text, language)]


def _marked(text: str, language: str = "en") -> list[str]:
    return [str(word) for word in spoken_words(text, language, keep_punctuation=True)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, World!", ["hello", "world"]),
        # numbers, money and times through normalize
        (
            "It's 3:30 and I have $5.",
            ["its", "three", "thirty", "and", "i", "have", "five", "dollars"],
        ),
        ("99 red balloons", ["ninety", "nine", "red", "balloons"]),
        # apostrophes join, every other non-letter separates
        ("don't rock 'n' roll", ["dont", "rock", "n", "roll"]),
        (
            "e-mail a/b c_d x.y (z) back\\slash",
            ["e", "mail", "a", "b", "c", "d", "x", "y", "z", "back", "slash"],
        ),
        # Latin letters folded to ASCII, tags dropped
        ("Naïve café, Straße <laugh> [sighs] ok", ["naive", "cafe", "strasse", "ok"]),
        ("", []),
        ("... ?! --", []),
    ],
)
def test_spoken_words_english(text: str, expected: list[str]) -> None:
    assert _plain(text) == expected


def test_spoken_words_plain_have_no_marks() -> None:
    words = spoken_words("Wait... what?! Yes.")
    assert words == [SpokenWord("wait"), SpokenWord("what"), SpokenWord("yes")]


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        # other scripts are kept, with their combining marks
        ("지난달 민노총", "ko", ["지난달", "민노총"]),
        ("हिन्दी भाषा", "hi", ["हिन्दी", "भाषा"]),
        ("Привет, мир", "ru", ["привет", "мир"]),
        # no word segmentation: a CJK clause is one word
        ("就像小微之行。处理", "zh", ["就像小微之行", "处理"]),
        # plain numbers in English words, also glued to letters, as the reference word lists do
        ("29일 관계자", "ko", ["twenty", "nine", "일", "관계자"]),
        ("Ich habe 5 Äpfel", "de", ["ich", "habe", "five", "apfel"]),
        (
            "Sur l'aérodrome de la Ferté-Allais",
            "fr",
            ["sur", "laerodrome", "de", "la", "ferte", "allais"],
        ),
    ],
)
def test_spoken_words_other_languages(text: str, language: str, expected: list[str]) -> None:
    assert _plain(text, language) == expected


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("Hello, world! Yes.", "en", ["hello,", "world!", "yes."]),
        # every mark goes to the word before it, opening quotes too; leading marks are dropped
        ('"Hello" she said "now".', "en", ['hello"', "she", 'said"', 'now".']),
        ("So ... yes?!", "en", ["so...", "yes?!"]),
        # marks read as the five spoken marks, one entry per mark
        ("¿Qué tal? Bien… gracias", "es", ["que", "tal?", "bien...", "gracias"]),
        ("“Quoted” text„", "en", ['quoted"', 'text"']),
        ("就像小微之行。处理，好！", "zh", ["就像小微之行.", "处理,", "好!"]),
        # other punctuation only separates
        ("a; b: (c) - d «e»", "fr", ["a", "b", "c", "d", "e"]),
        ("x.y", "en", ["x.", "y"]),
    ],
)
def test_spoken_words_keep_punctuation(text: str, language: str, expected: list[str]) -> None:
    assert _marked(text, language) == expected


def test_spoken_words_marks_are_spoken_marks() -> None:
    text = "¡Hola! „Zitat“ — ¿qué? 。！？，、… ؟ ‼ ⁇ “x” ok."
    words = spoken_words(text, "es", keep_punctuation=True)
    assert all(mark in SPOKEN_MARKS for word in words for mark in word.marks)
    assert [word.word for word in words] == _plain(text, "es")
