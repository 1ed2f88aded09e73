"""Tests for the shared text front end (`wyoming_multitts.text`)."""

from __future__ import annotations

import random

import pytest

from wyoming_multitts.text import (
    SPOKEN_MARKS,
    SentenceSplitter,
    SpokenWord,
    TextFrontEnd,
    TextPolicy,
    is_speakable,
    split_sentences,
    split_to_length,
    spoken_sentences,
    spoken_words,
)

from .conftest import FAST_SECONDS, assert_linear_time, repeated, seconds

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
    "Right?",
    "“Quoted.”",
    "Next\n**Bold** and *it*.\n* item one\n* item two",
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
    # Markdown: line markers, unclosed links and code, bare URLs and addresses, emoji
    "- ", "# ", "> ", "|", "| a |\n", "```\n", "1. ", "`", "**a** ", "[a](", "![", "~~",
    "http://a.", "a@b.", "www.a", "🙂", "<br>",
]
# fmt: on

# Length of each adversarial text (characters): a quadratic step takes minutes at this length.
_ADVERSARIAL_CHARS = 200_000


# Length of the adversarial texts for the whole front end (over twice `--max-text-chars`): it
# parses Markdown and spells numbers in Python, some 10 µs a character on the worst of them.
_FRONT_END_CHARS = 50_000

# A long stream for the splitter (characters).
_LONG_STREAM_CHARS = 1 << 20

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


def _assert_valid_parts(text: str, parts: list[str], max_chars: int) -> None:
    """Parts are non-empty, stripped, short enough, and together are the text up to whitespace."""
    assert parts, "no parts"
    for part in parts:
        assert part and part == part.strip()
        assert len(part) <= max_chars, (len(part), part)
    assert _squeeze(" ".join(parts)) == _squeeze(text)


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
    text = repeated(pattern, 300)
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
        ("**Bold** text. Quiet *now*", ["**Bold** text.", "Quiet *now*"]),
        # emphasis, quotes and Spanish's inverted marks may open a sentence
        ("Done. **Next** one. ¿Qué tal? ¡Bien!", ["Done.", "**Next** one.", "¿Qué tal?", "¡Bien!"]),
        # closers after … stay with their sentence, and a run of end marks is one end
        # (sentence-stream handed out '" he said.' and "!" as sentences of their own)
        ('"Wait…" he said.', ['"Wait…"', "he said."]),
        ("真的吗？! 是的。", ["真的吗？!", "是的。"]),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_split_sentences_holds_a_languages_titles() -> None:
    text = "Frag Prof. Meier, z. B. heute. Ja"
    assert split_sentences(text) == ["Frag Prof.", "Meier, z.", "B. heute.", "Ja"]
    titles = frozenset(("Prof.", "z. B."))
    assert split_sentences(text, titles) == ["Frag Prof. Meier, z. B. heute.", "Ja"]


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


# ---------------------------------------------------------------------------
# The front end: Markdown, tags, emoji, policies (numbers: tests/test_front_end_languages.py)

_ENGLISH = TextPolicy(("en",))


def _streamed(text: str, policy: TextPolicy, seed: int, empty_chunks: int = 0) -> list[str]:
    """The spoken sentences of the text streamed in random chunks."""
    front_end = TextFrontEnd(policy)
    chunks = _random_chunks(text, seed, empty_chunks)
    return [sentence for chunk in chunks for sentence in front_end.add(chunk)] + front_end.finish()


# An LLM's answer with every kind of Markdown the front end reads.
_MARKDOWN_ANSWER = (
    "# Your evening\n\n"
    "Here is what I found, see https://www.example.com/a?b=c for more.\n"
    "## Lights\n"
    "- The **kitchen** light is *on*\n"
    "- The `light.hall` is off\n"
    "* [ ] Buy milk\n"
    "* [x] Call _Anna_\n"
    "1. First step\n"
    "2) Second step\n"
    "> A quoted **line**\n"
    "> > nested\n\n"
    "```yaml\n"
    "light: on  # code is skipped\n"
    "```\n"
    "~~~\n"
    "more code\n"
    "~~~\n"
    "| Room | State |\n"
    "|:-----|------:|\n"
    "| Hall | off |\n"
    "\n---\n\n"
    "Read [the docs](https://example.org/docs) or ![a chart](chart.png). Mail me at "
    "anna@example.net. ~~Old~~ New<br>line &amp; more \\*stars\\*."
)
_MARKDOWN_SPOKEN = [
    "Your evening",
    "Here is what I found, see example dot com for more.",
    "Lights",
    "The kitchen light is on",
    "The light dot hall is off",
    "Buy milk",
    "Call Anna",
    "First step",
    "Second step",
    "A quoted line",
    "nested",
    "Room, State",
    "Hall, off",
    "Read the docs or a chart.",
    "Mail me at anna at example dot net.",
    "Old New line and more stars.",
]


def test_markdown_is_read_aloud() -> None:
    assert spoken_sentences(_MARKDOWN_ANSWER, _ENGLISH) == _MARKDOWN_SPOKEN


def test_markdown_streamed_in_any_chunks_says_the_same() -> None:
    for seed in range(50):
        assert _streamed(_MARKDOWN_ANSWER, _ENGLISH, seed) == _MARKDOWN_SPOKEN
    assert _streamed(_MARKDOWN_ANSWER, _ENGLISH, 0, empty_chunks=_EMPTY_CHUNKS) == _MARKDOWN_SPOKEN


def test_a_long_line_is_spoken_before_it_ends() -> None:
    front_end = TextFrontEnd(_ENGLISH)
    assert front_end.add("- **First** sentence of a list item. Sec") == [
        "First sentence of a list item."
    ]
    assert front_end.add("ond one") == []
    assert front_end.add(".\n") == ["Second one."]
    assert front_end.finish() == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # emotive tags pass untouched, HTML tags go
        ("Well <laugh> that is it [sighs] ok", ["Well <laugh> that is it [sighs] ok"]),
        ("<sigh> ok <chuckle>", ["<sigh> ok <chuckle>"]),
        ("<b>Bold</b> and <br/> <i>it</i>", ["Bold and it"]),
        ("[laughs] a [link](https://x.org)", ["[laughs] a link"]),
        # unpaired emphasis (a span cut at a sentence end) is dropped; snake_case stays
        ("**Two sentences. In bold.** Yes", ["Two sentences.", "In bold.", "Yes"]),
        ("my_var_name stays, 5 * 3 too", ["my_var_name stays, five * three too"]),
        ("C# and # not a heading, __init__ and _x", ["C# and not a heading, init and x"]),
        # nothing to say
        ("```\ncode only\n```", []),
        ("<laugh>", []),
        ("--- * ---", []),
        ("", []),
    ],
)
def test_front_end_cases(text: str, expected: list[str]) -> None:
    assert spoken_sentences(text, _ENGLISH) == expected


def test_emoji_dropped_or_named() -> None:
    text = "It is sunny ☀️ today 🙂, enjoy!"
    assert spoken_sentences(text, _ENGLISH) == ["It is sunny today, enjoy!"]
    named = TextPolicy(("en",), emoji="name")
    assert spoken_sentences(text, named) == ["It is sunny sun today slightly smiling face, enjoy!"]
    german = TextPolicy(("de",), emoji="name")
    assert spoken_sentences("Sonnig 🙂!", german) == ["Sonnig leicht lächelndes gesicht!"]


def test_normalize_off_leaves_the_text_as_written() -> None:
    text = "It is **21 °C** at 7:30.\n- item 1\n\nNext 🙂"
    off = TextPolicy(("en",), normalize="off")
    assert spoken_sentences(text, off) == ["It is **21 °C** at 7:30. - item 1", "Next 🙂"]


def test_auto_leaves_numbers_to_an_engine_that_reads_them() -> None:
    text = "今天气温21°C。"
    native = TextPolicy(("zh",), native_languages=frozenset(("zh",)))
    assert spoken_sentences(text, native) == ["今天气温21°C。"]
    full = TextPolicy(("zh",), normalize="full", native_languages=frozenset(("zh",)))
    assert "21" not in spoken_sentences(text, full)[0]


def test_multilingual_voice_reads_each_sentence_in_its_language() -> None:
    policy = TextPolicy(("zh", "en", "de", "fr"))
    text = (
        "Heute sind es 21 Grad in Berlin und es bleibt sonnig. "
        "Today it is 21 degrees in London and rainy. 今天北京21度。"
    )
    german, english, chinese = spoken_sentences(text, policy)
    assert "einundzwanzig" in german
    assert "twenty-one" in english
    assert "二十一" in chinese


def _pieces(text: str, max_chars: int, policy: TextPolicy = _ENGLISH) -> list[str]:
    """What the handler gives the engine: spoken sentences cut to its length."""
    return [
        piece
        for sentence in spoken_sentences(text, policy)
        for piece in split_to_length(sentence, max_chars)
    ]


def test_pieces_never_truncate() -> None:
    soup = _word_soup(_LONG_TEXT_CHARS).capitalize()
    text = f"Start here. {soup}. Then more sentences! The end"
    pieces = _pieces(text, 120)
    assert all(len(piece) <= 120 for piece in pieces)
    assert _squeeze(" ".join(pieces)) == _squeeze(text)
    assert pieces[0] == "Start here."
    assert pieces[-1] == "The end"


# ---------------------------------------------------------------------------
# Linear time on any input


@pytest.mark.parametrize("pattern", _ADVERSARIAL_PATTERNS)
def test_front_end_takes_linear_time(pattern: str) -> None:
    def speak(text: str) -> None:
        for sentence in spoken_sentences(text, _ENGLISH):
            split_to_length(sentence, _ENGINE_MAX_CHARS)

    assert_linear_time(speak, pattern, _FRONT_END_CHARS)


@pytest.mark.parametrize("pattern", ["- ", "|", "```\n", "1. ", "**a", "a. ", "\n", " "])
def test_front_end_streamed_takes_linear_time(pattern: str) -> None:
    def stream(text: str) -> None:
        front_end = TextFrontEnd(_ENGLISH)
        for start in range(0, len(text), 3):
            front_end.add(text[start : start + 3])
        front_end.finish()

    assert_linear_time(stream, pattern, _FRONT_END_CHARS)


@pytest.mark.parametrize("pattern", [" ", "x"])
def test_split_to_length_takes_linear_time(pattern: str) -> None:
    assert_linear_time(lambda text: split_to_length(f"a{text}b", 10), pattern, _ADVERSARIAL_CHARS)
    text = repeated(pattern, _ADVERSARIAL_CHARS)
    assert "".join(split_to_length(f"a{text}b", 10)) == f"a{text}b".replace(" ", "")


def test_splitter_takes_linear_time_on_long_stream() -> None:
    pattern = "Hello there, this is one sentence. Is it? Yes! Dr. Who.\n\n"
    assert_linear_time(lambda text: _stream([text]), pattern, _LONG_STREAM_CHARS)
    text = repeated(pattern, _LONG_STREAM_CHARS)
    alone = seconds(_stream, [text])
    # empty chunks cost a constant each: with 10,000 of them first it is hardly slower
    after_empty = seconds(_stream, [""] * _EMPTY_CHUNKS + [text])
    assert after_empty < max(FAST_SECONDS, 2 * alone), (alone, after_empty)


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
        # digits left in the text spelled out in its language (the reference word lists of
        # outetts spell them in English whatever the language)
        ("29일 관계자", "ko", ["이십구일", "관계자"]),
        ("Ich habe 5 Äpfel", "de", ["ich", "habe", "funf", "apfel"]),
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
