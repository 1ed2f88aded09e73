"""The text front end every engine shares: what an LLM writes → what a person would say.

- `front_end`: the whole chain, streamed (`TextFrontEnd`) or at once (`spoken_sentences`), with
  a voice's `TextPolicy` (its languages and the `normalize` and `emoji` options);
- `markdown`: Markdown read aloud (line structure as it streams, inline markup per sentence);
- `sentences`: where a streamed text's sentences end;
- `detect`: which of a voice's languages a sentence is in;
- `verbalize` and `languages`: numbers, dates, times, money, units and abbreviations in words,
  per language;
- `pieces`: a sentence too long for an engine cut at the most natural place;
- `words`: the word lists word-aligned models read;
- `tags`: emotive tags (`<laugh>`, `[sighs]`), which pass through untouched.

Nothing here knows about a particular engine. All of it takes time linear in the length of the
text a client chose (docs/text.md).
"""

from .front_end import TextFrontEnd, TextPolicy, spoken_sentences
from .pieces import split_to_length
from .sentences import SentenceSplitter, split_sentences
from .tags import is_speakable
from .verbalize import verbalize
from .words import SPOKEN_MARKS, SpokenWord, spoken_words

__all__ = [
    "SPOKEN_MARKS",
    "SentenceSplitter",
    "SpokenWord",
    "TextFrontEnd",
    "TextPolicy",
    "is_speakable",
    "spoken_sentences",
    "spoken_words",
    "split_sentences",
    "split_to_length",
    "verbalize",
]
