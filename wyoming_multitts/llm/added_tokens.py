"""Plain text that spells an added token must stay text.

llama.cpp matches a vocabulary's user-defined tokens (added tokens that are not special, as its
converter marks them: Orpheus's `<custom_token_N>` audio codes, for example) inside text even
when special tokens are not parsed (`tokenizer_st_partition`, src/llama-vocab.cpp in
llama-cpp-python 0.3.36). Text from a user or an LLM answer must never turn into such a token:
`AddedTokenTexts` cuts it right after the first character of every such spelling, and the
pieces are tokenized apart, so no piece holds one whole. Text without such a spelling is one
piece, tokenized exactly as before.
"""

from __future__ import annotations

from typing import Iterable


class AddedTokenTexts:
    """The spellings of a vocabulary's user-defined tokens, looked up by first character."""

    def __init__(self, texts: Iterable[str]) -> None:
        self._by_first: dict[str, set[str]] = {}
        self._lengths: dict[str, list[int]] = {}
        for text in texts:
            if len(text) > 1:  # one character cannot be cut (none of our engines has such)
                self._by_first.setdefault(text[0], set()).add(text)
        for first, group in self._by_first.items():
            self._lengths[first] = sorted({len(text) for text in group})

    def __bool__(self) -> bool:
        return bool(self._by_first)

    def pieces(self, text: str) -> list[str]:
        """`text` cut after the first character of each added token's spelling in it."""
        pieces, start = [], 0
        for i, char in enumerate(text):
            group = self._by_first.get(char)
            if group and any(text[i : i + n] in group for n in self._lengths[char]):
                pieces.append(text[start : i + 1])
                start = i + 1
        pieces.append(text[start:])
        return [piece for piece in pieces if piece]
