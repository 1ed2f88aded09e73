"""Random-weight Whisper models in the hub's transformers format (`openai/whisper-*`), for the
forced aligner (`wyoming_multitts/whisper.py`, `alignment.py`), written without transformers.

A folder holds `config.json` (`WhisperConfig` keys), `generation_config.json` (alignment_heads,
lang_to_id, task_to_id, no_timestamps_token_id), `model.safetensors` (transformers'
`WhisperForConditionalGeneration` tensor names; `proj_out` is tied to the token embedding, so it
is not stored, as on the hub) and `tokenizer.json`: a byte-level BPE over a few merges, then
Whisper's special tokens in openai's order (whisper/tokenizer.py:340-351, v20250625):
`<|endoftext|>`, `<|startoftranscript|>`, the language tokens, `<|translate|>`, `<|transcribe|>`,
`<|startoflm|>`, `<|startofprev|>`, `<|nospeech|>`, `<|notimestamps|>`, 1501 timestamps.

The merges include pieces of multi-byte characters and one across two Chinese characters, so the
word split's unicode path (tokenizer.py:286-309) meets incomplete UTF-8. The full-size shape is
large-v3-turbo's (809 M parameters, 1.6 GB fp16) with the special tokens at their real ids.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .files import atomic_path, write_once
from .gguf_lm import gpt2_byte_symbols
from .qwen3tts import _Tensor, gpt2_byte_tokens, write_safetensors

LANGUAGES = (
    "en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no "
    "th ur hr bg lt la mi ml cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw "
    "gl mr pa si km sn yo so af oc ka be tg sd gu am yi lo uz fo ht ps tk nn mt sa lb my bo tl "
    "mg as tt haw ln ha ba jw su yue"
).split()
"""openai's language codes in token order (whisper/tokenizer.py:10-111); 99 before large-v3."""
TIMESTAMPS = 1501
"""`<|0.00|>` … `<|30.00|>`, every 20 ms."""
MERGES = (
    *(b" t", b"he", b" the", b"in", b"er", b" a", b"on", b" w", b"or", b"ld", b"'t"),
    *(b" d", b" don", b"\xc3\xa9", b"\xc3\xa8", b" \xc3\xa9", b"\xe4\xbd", b"\xa0\xe5"),
    *(b"\xe3\x81", b"\xe3\x80", b"\xe3\x80\x82"),
)
"""Merge results in priority order (each is its longest earlier token + another earlier one):
English pieces, "é" and "è", the first two bytes of "你", the last byte of "你" with the first of
"好" (a token across a character boundary), the hiragana lead bytes, and "。"."""
TEXT_POSITIONS = 448
AUDIO_POSITIONS = 1500
SEED = 1977


@dataclass(frozen=True)
class WhisperDims:
    """What a random Whisper is made of."""

    d_model: int
    heads: int
    encoder_layers: int
    decoder_layers: int
    num_mel_bins: int
    languages: int
    alignment_heads: tuple[tuple[int, int], ...]
    first_special: int | None
    """Id of `<|endoftext|>`: fillers pad the BPE vocabulary up to it (None: right after it)."""
    dtype: str


SHAPES = {
    "tiny": WhisperDims(64, 4, 2, 2, 128, 100, ((0, 3), (1, 0), (1, 2)), None, "F32"),
    "full-size": WhisperDims(
        1280, 20, 32, 4, 128, 100, ((2, 4), (2, 11), (3, 3), (3, 6), (3, 11), (3, 14)), 50257, "F16"
    ),
}
"""tiny: turbo-like (128 mels, 100 languages), 2 + 2 layers of width 64; full-size:
large-v3-turbo's dimensions and alignment heads."""


def write_whisper(folder: Path, shape: str = "tiny") -> Path:
    """Write a random Whisper of `shape` (a SHAPES key) into `folder`; return it. A full-size
    folder that exists is kept (it takes a minute and 1.6 GB)."""
    dims = SHAPES[shape]
    if shape == "full-size":
        return write_once(folder, lambda partial: _write(partial, dims))
    folder.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder) as partial:
        _write(partial, dims)
    return folder


def _write(folder: Path, dims: WhisperDims) -> None:
    folder.mkdir(parents=True)
    tokens = _vocabulary(dims)
    ids = {token: token_id for token_id, token in enumerate(tokens)}
    _write_json(folder / "tokenizer.json", _tokenizer(tokens, dims))
    _write_json(folder / "config.json", _config(dims, ids, len(tokens)))
    _write_json(folder / "generation_config.json", _generation_config(dims, ids))
    write_safetensors(folder / "model.safetensors", _plan(dims, len(tokens)), dims.dtype, SEED)


def _specials(dims: WhisperDims) -> list[str]:
    """Whisper's special tokens in id order (tokenizer.py:340-351)."""
    return [
        "<|endoftext|>",
        "<|startoftranscript|>",
        *(f"<|{code}|>" for code in LANGUAGES[: dims.languages]),
        *("<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>"),
        *("<|nospeech|>", "<|notimestamps|>"),
        *(f"<|{i * 0.02:.2f}|>" for i in range(TIMESTAMPS)),
    ]


def _vocabulary(dims: WhisperDims) -> list[str]:
    """Token strings by id: bytes (GPT-2 order), merges, fillers (letters then digits, which the
    pre-tokenizer always splits, so no text maps to one), special tokens."""
    tokens = gpt2_byte_tokens() + [_symbols(merged) for merged in MERGES]
    first_special = dims.first_special or len(tokens)
    tokens += [f"{_symbols(b' ')}filler{i}" for i in range(len(tokens), first_special)]
    return tokens + _specials(dims)


def _symbols(data: bytes) -> str:
    """Bytes in GPT-2's byte-level alphabet."""
    alphabet = gpt2_byte_symbols()
    return "".join(alphabet[byte] for byte in data)


def _merge_pairs(known: list[bytes]) -> list[tuple[str, str]]:
    """Each merge as (left, right): the longest earlier token that starts it and is followed by
    an earlier token."""
    pairs = []
    for index, merged in enumerate(MERGES):
        earlier = {bytes([b]) for b in range(256)} | set(known[:index])
        split = max(n for n in range(1, len(merged)) if {merged[:n], merged[n:]} <= earlier)
        pairs.append((_symbols(merged[:split]), _symbols(merged[split:])))
    return pairs


def _tokenizer(tokens: list[str], dims: WhisperDims) -> dict[str, Any]:
    """tokenizer.json as transformers writes Whisper's (ByteLevel pre-tokenizer and decoder, the
    `<|startoftranscript|><|notimestamps|> … <|endoftext|>` template)."""
    specials = _specials(dims)
    first = len(tokens) - len(specials)
    ids = {token: token_id for token_id, token in enumerate(tokens)}
    byte_level = {"add_prefix_space": False, "trim_offsets": True, "use_regex": True}

    def special(name: str) -> dict[str, Any]:
        return {"SpecialToken": {"id": name, "type_id": 0}}

    template = ["<|startoftranscript|>", "<|notimestamps|>"]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": first + i, "content": name, "single_word": False, "lstrip": False}
            | {"rstrip": False, "normalized": False, "special": True}
            for i, name in enumerate(specials)
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", **byte_level},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [*map(special, template), {"Sequence": {"id": "A", "type_id": 0}}]
            + [special("<|endoftext|>")],
            "pair": [*map(special, template), {"Sequence": {"id": "A", "type_id": 0}}]
            + [{"Sequence": {"id": "B", "type_id": 1}}, special("<|endoftext|>")],
            "special_tokens": {
                name: {"id": name, "ids": [ids[name]], "tokens": [name]}
                for name in [*template, "<|endoftext|>"]
            },
        },
        "decoder": {"type": "ByteLevel", **byte_level},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {token: token_id for token_id, token in enumerate(tokens[:first])},
            "merges": [f"{left} {right}" for left, right in _merge_pairs(list(MERGES))],
        },
    }


def _config(dims: WhisperDims, ids: dict[str, int], vocab_size: int) -> dict[str, Any]:
    """config.json with transformers' WhisperConfig keys."""
    return {
        "architectures": ["WhisperForConditionalGeneration"],
        "model_type": "whisper",
        "activation_function": "gelu",
        "d_model": dims.d_model,
        "encoder_layers": dims.encoder_layers,
        "encoder_attention_heads": dims.heads,
        "encoder_ffn_dim": 4 * dims.d_model,
        "decoder_layers": dims.decoder_layers,
        "decoder_attention_heads": dims.heads,
        "decoder_ffn_dim": 4 * dims.d_model,
        "num_mel_bins": dims.num_mel_bins,
        "vocab_size": vocab_size,
        "max_source_positions": AUDIO_POSITIONS,
        "max_target_positions": TEXT_POSITIONS,
        "scale_embedding": False,
        "tie_word_embeddings": True,
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|endoftext|>"],
        "pad_token_id": ids["<|endoftext|>"],
        "decoder_start_token_id": ids["<|startoftranscript|>"],
        "torch_dtype": "float16" if dims.dtype == "F16" else "float32",
    }


def _generation_config(dims: WhisperDims, ids: dict[str, int]) -> dict[str, Any]:
    """generation_config.json: the keys transformers' Whisper generation reads for alignment."""
    return {
        "alignment_heads": [list(pair) for pair in dims.alignment_heads],
        "lang_to_id": {f"<|{c}|>": ids[f"<|{c}|>"] for c in LANGUAGES[: dims.languages]},
        "task_to_id": {"translate": ids["<|translate|>"], "transcribe": ids["<|transcribe|>"]},
        "no_timestamps_token_id": ids["<|notimestamps|>"],
        "decoder_start_token_id": ids["<|startoftranscript|>"],
        "is_multilingual": True,
        "max_length": TEXT_POSITIONS,
    }


def _plan(dims: WhisperDims, vocab_size: int) -> list[_Tensor]:
    """Every tensor of `WhisperForConditionalGeneration` but the tied `proj_out`: linear layers
    N(0, 1/fan_in), norms around 1, embeddings N(0, 1) (positions N(0, 0.5))."""
    width, ffn = dims.d_model, 4 * dims.d_model
    plan = [
        *_conv("model.encoder.conv1", width, dims.num_mel_bins),
        *_conv("model.encoder.conv2", width, width),
        _Tensor("model.encoder.embed_positions.weight", (AUDIO_POSITIONS, width), "normal", 0.5),
        *_norm("model.encoder.layer_norm", width),
        _Tensor("model.decoder.embed_tokens.weight", (vocab_size, width), "normal", 1.0),
        _Tensor("model.decoder.embed_positions.weight", (TEXT_POSITIONS, width), "normal", 0.5),
        *_norm("model.decoder.layer_norm", width),
    ]
    layers = [(f"model.encoder.layers.{i}", False) for i in range(dims.encoder_layers)]
    layers += [(f"model.decoder.layers.{i}", True) for i in range(dims.decoder_layers)]
    for prefix, cross in layers:
        for attention in ("self_attn", "encoder_attn") if cross else ("self_attn",):
            for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
                plan += _linear(f"{prefix}.{attention}.{name}", width, width, name != "k_proj")
            plan += _norm(f"{prefix}.{attention}_layer_norm", width)
        plan += _linear(f"{prefix}.fc1", ffn, width, True) + _linear(
            f"{prefix}.fc2", width, ffn, True
        )
        plan += _norm(f"{prefix}.final_layer_norm", width)
    return plan


def _linear(name: str, out: int, inp: int, bias: bool) -> list[_Tensor]:
    weight = _Tensor(f"{name}.weight", (out, inp), "normal", 1 / math.sqrt(inp))
    return [weight, _Tensor(f"{name}.bias", (out,), "normal", 0.1)] if bias else [weight]


def _conv(name: str, out: int, inp: int, kernel: int = 3) -> list[_Tensor]:
    weight = _Tensor(f"{name}.weight", (out, inp, kernel), "normal", 1 / math.sqrt(inp * kernel))
    return [weight, _Tensor(f"{name}.bias", (out,), "normal", 0.1)]


def _norm(name: str, width: int) -> list[_Tensor]:
    return [
        _Tensor(f"{name}.weight", (width,), "around_one", 0.1),
        _Tensor(f"{name}.bias", (width,), "normal", 0.05),
    ]


def _write_json(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
