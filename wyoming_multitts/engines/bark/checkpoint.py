"""Bark's release checkpoint: config.json and the three GPT stages in `pytorch_model.bin`
(the transformers layout of `suno/bark` and `suno/bark-small`), read as plain tensors and
assigned to our modules without a copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, TypeVar

import torch
from torch import nn

from ...errors import EngineError
from .gpt import CausalGPT, FineGPT, GPTConfig, repacked_linears

StageT = TypeVar("StageT", CausalGPT, FineGPT)
"""The module class of a stage."""

STAGE_PREFIXES = {"semantic": "semantic.", "coarse": "coarse_acoustics.", "fine": "fine_acoustics."}
"""Stage → prefix of its tensors in `pytorch_model.bin`."""
STAGE_CONFIGS = {
    "semantic": "semantic_config",
    "coarse": "coarse_acoustics_config",
    "fine": "fine_acoustics_config",
}
"""Stage → its sub-config in config.json."""
CAUSAL_MASK_SUFFIX = ".attn.bias"
"""transformers stores each causal layer's mask as a buffer; SDPA builds it instead."""


def read_config(folder: Path) -> dict[str, Any]:
    """config.json of the release, checked to hold the three stages' and the codec's configs."""
    path = folder / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(config.get("codec_config"), dict):
            raise ValueError("no codec_config mapping")
        for key in STAGE_CONFIGS.values():
            GPTConfig.from_json(config[key])
        return config
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise EngineError(f"{path} is not a Bark config.json ({err!r})") from err


def load_weights(path: Path) -> dict[str, torch.Tensor]:
    """The state dict of `pytorch_model.bin`, read with `weights_only=True`: tensors and plain
    containers only, so a file that would run code when unpickled is refused."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as err:  # pickle, zip and torch errors alike: the file is unusable
        raise EngineError(
            f"cannot load {path} as plain tensors ({type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}); delete it to download it again"
        ) from err
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise EngineError(f"{path} is not a state dict of tensors")
    return state


def load_stage(
    kind: type[StageT],
    name: str,
    config: Mapping[str, Any],
    state: Mapping[str, torch.Tensor],
) -> StageT:
    """Stage `name` as a `kind` module with its weights (built on the meta device, then given
    the loaded tensors themselves: no random init, no copy)."""
    gpt_config = GPTConfig.from_json(config[STAGE_CONFIGS[name]])
    prefix = STAGE_PREFIXES[name]
    weights = {
        key.removeprefix(prefix): value
        for key, value in state.items()
        if key.startswith(prefix) and not key.endswith(CAUSAL_MASK_SUFFIX)
    }
    with torch.device("meta"):
        module = kind(gpt_config)
    tied = {key for key in module.state_dict() if key.startswith("lm_heads.")}
    missing, unexpected = module.load_state_dict(weights, strict=False, assign=True)
    missing = [key for key in missing if key not in tied]
    if missing or unexpected:
        raise EngineError(
            f"the {name} stage's tensors ({prefix}*) do not match its config: missing "
            f"{', '.join(missing[:5]) or 'none'}; unexpected {', '.join(unexpected[:5]) or 'none'}"
        )
    if isinstance(module, FineGPT):
        module.tie_weights()  # the heads take the (assigned) embeddings again
    for key, value in module.state_dict().items():
        if value.is_meta:
            raise EngineError(f"no weights for {prefix}{key}")
    return module.eval()


def point_repacked_weights(
    stage: CausalGPT | FineGPT, name: str, state: Mapping[str, torch.Tensor]
) -> None:
    """Give the `repacked_linears` of stage `name` their weights from `state` (the same file,
    mapped again): what then reads them (`quantize_int8`, `onednn_linears`) touches that
    mapping's pages, which go when it goes, not the model's, which stays while the embeddings on
    it are in use."""
    for key in repacked_linears(stage):
        weight = state[f"{STAGE_PREFIXES[name]}{key}.weight"]
        stage.get_submodule(key).weight = nn.Parameter(weight, requires_grad=False)


VOCAB_TXT = "vocab.txt"
TOKENIZER_JSON = "tokenizer.json"
"""The tokenizer's two forms in a transformers release: the WordPiece vocabulary, and the
fast tokenizer transformers writes from it (normalizer, pre-tokenizer, WordPiece, post-processor).
A repo may ship either (docs/engines.md, "Bark: tokenizer")."""


def read_tokenizer(folder: Path) -> Any:
    """bert-base-multilingual-cased's WordPiece (cased, no accent stripping), as
    `BertTokenizer.from_pretrained` builds it in the reference: from `vocab.txt`, or from
    `tokenizer.json` where the folder has no `vocab.txt`. Both give the same ids
    (tests/test_bark.py); `encode(text, add_special_tokens=False)` works on either."""
    from tokenizers import BertWordPieceTokenizer, Tokenizer

    path = folder / VOCAB_TXT
    if not path.is_file():
        path = folder / TOKENIZER_JSON
    if not path.is_file():
        raise EngineError(
            f"{folder} has neither {VOCAB_TXT} nor {TOKENIZER_JSON}: download the model again"
        )
    try:
        if path.name == VOCAB_TXT:
            return BertWordPieceTokenizer(str(path), lowercase=False, strip_accents=False)
        return Tokenizer.from_file(str(path))
    except Exception as err:  # the tokenizers library raises its own exception types
        raise EngineError(f"cannot read the tokenizer {path}: {err}") from err
