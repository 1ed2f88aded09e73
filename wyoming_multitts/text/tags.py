"""Emotive tags (`<laugh>`, `[sighs]`) that models read as cues, and whether text says anything.

Tags pass through the front end untouched (Orpheus reads `<laugh>`, Bark `[laughs]`); HTML tags
that an LLM writes (`<br>`, `<b>`) look the same and are dropped.
"""

from __future__ import annotations

import re

# An angle tag: <laugh>, <sigh>, <|tag|>, </b> (no space right after "<", so "a < b" is no tag).
_ANGLE_TAG = r"<[^<>\s][^<>]*>"

# A bracketed tag: [laughs], [clears throat]; not the text of a Markdown link ("[text](url)").
_SQUARE_TAG = r"\[[^\[\]]+\](?!\()"

# Either kind of tag, captured, so re.split keeps the tags at the odd indices.
TAG_RE = re.compile(f"({_ANGLE_TAG}|{_SQUARE_TAG})")

# Angle tags only, removed before deciding whether anything is left to say.
_ANGLE_TAG_RE = re.compile(_ANGLE_TAG)

# The element name of an angle tag: "<br/>" → "br", "</td>" → "td".
_TAG_NAME_RE = re.compile(r"</?\s*([A-Za-z][A-Za-z0-9]*)")

# HTML elements an LLM's answer may carry (in tables above all): markup, never a cue to a model.
# fmt: off
_HTML_ELEMENTS = frozenset((
    "a", "abbr", "b", "blockquote", "br", "code", "del", "details", "div", "em", "font", "h1",
    "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre",
    "s", "small", "span", "strike", "strong", "sub", "summary", "sup", "table", "tbody", "td",
    "th", "thead", "tr", "u", "ul",
))
# fmt: on


def is_html_tag(tag: str) -> bool:
    """Whether an angle tag is an HTML element ("<br>", "</b>") rather than a cue ("<laugh>")."""
    match = _TAG_NAME_RE.match(tag)
    return match is not None and match[1].lower() in _HTML_ELEMENTS


def is_speakable(text: str) -> bool:
    """Whether the text has a letter or digit (any script) outside `<...>` tags."""
    return any(char.isalnum() for char in _ANGLE_TAG_RE.sub(" ", text))
