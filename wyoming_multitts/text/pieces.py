"""Cutting a sentence that is too long for an engine at the most natural place."""

from __future__ import annotations

import re

from .sentences import SPACE_RUN_RE, end_of_run

# Clause punctuation after which a long sentence is best cut (when a space follows).
_CLAUSE_BREAKS = ",;:-–—"

# CJK clause punctuation: a cut may follow it directly, since CJK text has no spaces.
_CJK_CLAUSE_BREAKS = "，、；："

# A clause break is preferred to a plain space only if the part before it is at least this
# fraction of max_chars (otherwise "Hi, …" would make a two-word part).
_MIN_CLAUSE_PART = 0.5

# When the last part would be shorter than this fraction of max_chars, an earlier cut that
# leaves it longer is chosen, so a long sentence does not end with a clipped word or two.
_MIN_LAST_PART = 0.25

# Where a long sentence may be cut: before whitespace, and after clause punctuation (CJK clause
# marks anywhere, the others when whitespace follows).
_SPACE_CUT_RE = re.compile(r"(?=\s)")
_CLAUSE_CUT_RE = re.compile(
    rf"(?<=[{_CJK_CLAUSE_BREAKS}])|(?<=[{re.escape(_CLAUSE_BREAKS)}])(?=\s)"
)


def _cut_candidates(window: str) -> tuple[list[int], list[int]]:
    """Cut positions inside window, not at its ends: (after clause punctuation, at a space)."""
    clause_cuts = [match.start() for match in _CLAUSE_CUT_RE.finditer(window, 1)]
    space_cuts = [match.start() for match in _SPACE_CUT_RE.finditer(window, 1)]
    return [cut for cut in clause_cuts if cut < len(window)], space_cuts


def _pick_cut(length: int, cuts: list[int], max_chars: int, shortest_part: float) -> int | None:
    """The latest usable cut of a text of `length`, avoiding a tiny last part when another cut
    allows; None if none."""
    usable = [cut for cut in cuts if cut >= shortest_part]
    roomy = [cut for cut in usable if length - cut >= max_chars * _MIN_LAST_PART]
    return max(roomy or usable, default=None)


def _cut_position(text: str, start: int, max_chars: int) -> int:
    """Where to cut text[start:] (stripped, longer than max_chars), counted from start: at a
    clause break, a space, or hard. Only max_chars + 1 characters are looked at."""
    clause_cuts, space_cuts = _cut_candidates(text[start : start + max_chars + 1])
    length = len(text) - start
    cut = _pick_cut(length, clause_cuts, max_chars, max_chars * _MIN_CLAUSE_PART)
    if cut is None:
        cut = _pick_cut(length, space_cuts, max_chars, 1)
    return max_chars if cut is None else cut


def _check_max_chars(max_chars: int) -> None:
    """Raise ValueError for a piece length no text fits in."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")


def split_to_length(text: str, max_chars: int) -> list[str]:
    """Cut text into parts of at most max_chars, at clause breaks, spaces, or hard if need be."""
    _check_max_chars(max_chars)
    parts = []
    text = text.strip()
    start = 0  # the text not cut yet (kept in place: copying it for each part is quadratic)
    while len(text) - start > max_chars:
        cut = start + _cut_position(text, start, max_chars)
        parts.append(text[start:cut].rstrip())
        start = end_of_run(SPACE_RUN_RE, text, cut)
    if start < len(text):
        parts.append(text[start:])
    return parts
