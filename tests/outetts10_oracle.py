"""Reference OuteTTS 1.0 prompts from the official package (outetts 0.4.4, "v3" prompt processor).

Runs under the outetts oracle venv (`local/outetts-oracle-venv`, made by
`script/make-outetts-oracle-env`), never under the project's own venv: it imports `outetts` and
`ftfy`, which the server does not use.

    python tests/outetts10_oracle.py REQUEST.json OUT.json

REQUEST.json holds what to compute:
    normalize   [text, ...]                        `text_normalizations(text)`
    merge       [[text, speaker_text], ...]        `merge_speaker_text(text, speaker_text)`
    prompts     [{"text", "speaker", "layout"}]    the prompt string: `get_completion_prompt(text,
                speaker)` for layout "inline", `get_training_prompt(speaker) +
                get_completion_prompt(text)` for "turn"; speaker is a profile JSON path or null
    c1, c2      {token id: code}                   the maps `get_audio_token_map` would build
    reply       [token id, ...]                    `extract_audio_from_tokens(reply)`
OUT.json gets the answers, lists in request order: `normalized`, `merged`, `marks`, `prompts`,
and the reply's `c1` and `c2` codes. The last line printed is a summary.

The package's `__init__` imports torch, transformers and every backend; the prompt processor
needs none of them. So `outetts` is registered as a bare namespace over its folder (its
subpackages' `__init__` files are empty), and `transformers` is a stub whose AutoTokenizer is
never called: the processor loads a tokenizer only when given a path, and we give none.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
import types
from pathlib import Path


def _prompt_processor() -> type:
    """`outetts.version.v3.prompt_processor.PromptProcessor`, imported without the package's
    heavy `__init__`."""
    spec = importlib.util.find_spec("outetts")  # finds the package without running it
    if spec is None or spec.origin is None:
        raise SystemExit("outetts is not installed: run script/make-outetts-oracle-env")
    package = types.ModuleType("outetts")
    package.__path__ = [str(Path(spec.origin).parent)]
    sys.modules["outetts"] = package

    class AutoTokenizer:  # pylint: disable=too-few-public-methods
        """Stands in for transformers' class, which the processor uses only with a path."""

        @classmethod
        def from_pretrained(cls, path: str) -> None:
            raise RuntimeError(f"the oracle loads no tokenizer (asked for {path!r})")

    transformers = types.ModuleType("transformers")
    setattr(transformers, "AutoTokenizer", AutoTokenizer)
    sys.modules["transformers"] = transformers
    from outetts.version.v3.prompt_processor import PromptProcessor

    return PromptProcessor


def main() -> None:
    """Answer REQUEST.json into OUT.json."""
    request_path, out_path = map(Path, sys.argv[1:3])
    request = json.loads(request_path.read_text(encoding="utf-8"))
    processor = _prompt_processor()(tokenizer_path="")

    normalized = [processor.text_normalizations(text) for text in request.get("normalize", [])]
    merges = [
        processor.merge_speaker_text(text, speaker) for text, speaker in request.get("merge", [])
    ]
    prompts = []
    for case in request.get("prompts", []):
        speaker = None
        if case["speaker"] is not None:
            # the processor appends the separator to the last word in place: a fresh copy each
            speaker = json.loads(Path(case["speaker"]).read_text(encoding="utf-8"))
        if case["layout"] == "inline":
            prompts.append(processor.get_completion_prompt(case["text"], copy.deepcopy(speaker)))
        else:
            prompts.append(
                processor.get_training_prompt(speaker)
                + processor.get_completion_prompt(case["text"])
            )
    processor.c1 = {int(token): code for token, code in request.get("c1", {}).items()}
    processor.c2 = {int(token): code for token, code in request.get("c2", {}).items()}
    c1, c2 = processor.extract_audio_from_tokens(request.get("reply", []))

    answers = {
        "normalized": normalized,
        "merged": [merged for merged, _ in merges],
        "marks": [mark for _, mark in merges],
        "prompts": prompts,
        "c1": c1,
        "c2": c2,
    }
    out_path.write_text(json.dumps(answers, ensure_ascii=False), encoding="utf-8")
    print(f"outetts 1.0 oracle: {len(normalized)} texts, {len(prompts)} prompts, {len(c1)} frames")


if __name__ == "__main__":
    main()
