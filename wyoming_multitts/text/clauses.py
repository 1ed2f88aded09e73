"""Where the first clause of a request's first sentence ends: a piece that can be spoken before
the rest of the sentence has arrived (docs/text.md, "An earlier first piece").

Home Assistant streams an LLM's answer at 15 to 40 words a second, and a satellite gives up if
playback has not started 2 s after it gets the URL; waiting for a 20-word first sentence costs
up to a second before the engine even starts. So a fast voice starts on the first clause.

The rule depends only on the text up to the cut and the word after it, so a sentence cut while
it streams in is cut at the same place as the same sentence received whole: a streamed text says
exactly what the same text sent at once says. It reads raw text, before numbers and
abbreviations are spelled out, and never cuts where that would change what is said: inside
Markdown emphasis, code, a link or a tag, or between two numbers ("12 000").
"""

from __future__ import annotations

import re

MIN_CLAUSE_WORDS = 4
"""Words a first clause has at least ("Hi, I am …" is not cut after "Hi,")."""
MAX_FIRST_WORDS = 12
"""A first sentence with no clause mark in its first 12 words is cut after the 12th (at 15
words a second, what an LLM writes in under a second)."""
MAX_FIRST_CHARS = 400
"""Only this much of a sentence is looked at: a longer stretch without 12 words (a URL, CJK
without marks) is spoken as it is, and the rule stays linear in the text."""

# A word: a run of non-space characters, or one CJK character (Chinese and Japanese put no
# spaces between words, so each character counts as one).
_CJK = "\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff"
_WORD_RE = re.compile(f"[{_CJK}]|[^\\s{_CJK}]+")

# A word that ends a clause: Latin, Arabic and Devanagari clause marks need the space after
# them (so "1,000" and "3,5" are not cut); CJK ones end the word themselves.
_CLAUSE_END_RE = re.compile(r"[,;:–—،؛][\"'”’»)\]]*\Z|[，、；：]\Z")

# Marks that open something which must close inside the clause: runs of Markdown emphasis, code
# and strikethrough marks ("**", "`", "~~": an even number of runs of each), and brackets and
# tags (as many closed as opened).
_MARK_RUNS = tuple(re.compile(re.escape(mark) + "+") for mark in "*_`~")
_BRACKETS = (("[", "]"), ("(", ")"), ("<", ">"))


def first_clause_end(sentence: str) -> int | None:
    """Where the first clause of `sentence` (its text so far, or whole) ends: after the first
    word with a clause mark that has at least MIN_CLAUSE_WORDS words, within MAX_FIRST_WORDS
    words; else after word MAX_FIRST_WORDS. None when no such cut exists yet: it also needs a
    whole word after it (followed by a space or a mark), so that the same cut is found in a
    longer text, and it must leave what `_safe_cut` asks."""
    words = list(_WORD_RE.finditer(sentence, 0, MAX_FIRST_CHARS))
    for index, word in enumerate(words[:MAX_FIRST_WORDS]):
        clause = _CLAUSE_END_RE.search(word[0]) is not None
        last_allowed = index + 1 == MAX_FIRST_WORDS
        if not (clause and index + 1 >= MIN_CLAUSE_WORDS) and not last_allowed:
            continue
        following = words[index + 1] if index + 1 < len(words) else None
        if following is None or following.end() >= min(len(sentence), MAX_FIRST_CHARS):
            return None  # the next word may still grow: wait for more text
        if clause or not (_has_digit(word[0]) and _has_digit(following[0])):
            if _safe_cut(sentence[: word.end()]):
                return word.end()
        if clause:
            continue  # an unsafe clause mark: a later one may do
        return None
    return None


def _has_digit(word: str) -> bool:
    return any(char.isdigit() for char in word)


def _safe_cut(clause: str) -> bool:
    """Whether `clause` closes every Markdown mark, bracket and tag it opens."""
    if any(len(runs.findall(clause)) % 2 for runs in _MARK_RUNS):
        return False
    return all(clause.count(open_) == clause.count(close) for open_, close in _BRACKETS)
