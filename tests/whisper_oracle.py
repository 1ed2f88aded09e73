"""Reference word timings from openai's own Whisper (openai-whisper 20250625), hub-format model.

Runs under the Whisper oracle venv (`local/whisper-oracle-venv`, made by
`script/make-whisper-oracle-env`), never under the project's own venv: it imports `whisper`.

    python tests/whisper_oracle.py MODEL_DIR CASES.json OUT.npz

MODEL_DIR is a transformers-format Whisper (tools/modelgen/whisper.py). Its tensors are renamed
to openai's and loaded strictly into `whisper.model.Whisper`; its tokenizer.json becomes a
`tiktoken.Encoding` (the BPE vocabulary as ranks, the added tokens as special tokens). CASES.json
holds "cases", a list of {"audio": PATH.npy (16 kHz float32), "text", "language"}, each aligned
as `transcribe` does with word_timestamps=True for one window (transcribe.py:139-141, 281-286,
402) except that the text tokens are given; and "crafted", lists of [word, tokens, start step,
end step] that stand in for `find_alignment`'s result (times in 20 ms steps), so that
`add_word_timestamps` adjusts them. Writes OUT.npz:
    qk/I           (heads, T, 1500) f32 the alignment heads' cross-attention logits (pre-softmax)
    mel_filters/N  (N, 201) f32        assets/mel_filters.npz, N = 80 and 128
    log_mel/N/I    (N, 3000) f32        the window of case I at N mels (both front ends)
and OUT.json: per case the text tokens and openai's words [[word, start, end], …], the same
words for each crafted alignment, the encodings of the "probe" strings, and openai's
`_ALIGNMENT_HEADS` decoded to (layer, head) pairs. Prints a one-line JSON summary last.
Torch runs on the CPU with 2 threads, float32.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import sys
import types
from pathlib import Path

import numpy as np
import torch

# numba is not installed (it pulls llvmlite); `jit` as the identity runs openai's DTW loops in
# Python on the same numpy arrays and dtypes.
_numba = types.ModuleType("numba")
_numba.jit = lambda *args, **kwargs: (lambda function: function)  # type: ignore[attr-defined]
sys.modules["numba"] = _numba

import tiktoken  # noqa: E402
import whisper  # noqa: E402
from whisper.audio import (  # noqa: E402
    HOP_LENGTH,
    N_FRAMES,
    N_SAMPLES,
    SAMPLE_RATE,
    log_mel_spectrogram,
    mel_filters,
    pad_or_trim,
)
from whisper.model import ModelDimensions, Whisper, disable_sdpa  # noqa: E402
from whisper.timing import WordTiming, add_word_timestamps  # noqa: E402
from whisper.tokenizer import LANGUAGES, Tokenizer  # noqa: E402

THREADS = 2
PAT_STR = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
"""openai's pre-tokenizer pattern (whisper/tokenizer.py:360)."""
UNSPACED = {"zh", "ja", "th", "lo", "my", "yue"}
"""Languages whose text is encoded without a leading space (our aligner's rule)."""
HEAD_SHAPES = {
    "tiny": (4, 6),
    "base": (6, 8),
    "small": (12, 12),
    "medium": (24, 16),
    "large-v3": (32, 20),
    "large-v3-turbo": (4, 20),
}
"""Decoder (layers, heads) of the models whose `_ALIGNMENT_HEADS` the tests compare."""
PROBES = [" Hello, world!", " don't stop-gap", " été à l'école", "你好，世界。", "こんにちは。"]
RENAMES = [
    ("model.encoder.embed_positions.weight", "encoder.positional_embedding"),
    ("model.decoder.embed_positions.weight", "decoder.positional_embedding"),
    ("model.decoder.embed_tokens.", "decoder.token_embedding."),
    ("model.encoder.layer_norm.", "encoder.ln_post."),
    ("model.decoder.layer_norm.", "decoder.ln."),
    ("model.encoder.layers.", "encoder.blocks."),
    ("model.decoder.layers.", "decoder.blocks."),
    ("model.encoder.", "encoder."),
    (".self_attn_layer_norm.", ".attn_ln."),
    (".encoder_attn_layer_norm.", ".cross_attn_ln."),
    (".final_layer_norm.", ".mlp_ln."),
    (".self_attn.", ".attn."),
    (".encoder_attn.", ".cross_attn."),
    (".q_proj.", ".query."),
    (".k_proj.", ".key."),
    (".v_proj.", ".value."),
    (".out_proj.", ".out."),
    (".fc1.", ".mlp.0."),
    (".fc2.", ".mlp.2."),
]
"""transformers → openai tensor names (transformers' convert_openai_to_hf.py, reversed)."""


def load_model(folder: Path) -> Whisper:
    """openai's Whisper with the folder's weights (strict) and alignment heads."""
    from safetensors.torch import load_file

    config = json.loads((folder / "config.json").read_text())
    dims = ModelDimensions(
        n_mels=config["num_mel_bins"],
        n_audio_ctx=config["max_source_positions"],
        n_audio_state=config["d_model"],
        n_audio_head=config["encoder_attention_heads"],
        n_audio_layer=config["encoder_layers"],
        n_vocab=config["vocab_size"],
        n_text_ctx=config["max_target_positions"],
        n_text_state=config["d_model"],
        n_text_head=config["decoder_attention_heads"],
        n_text_layer=config["decoder_layers"],
    )
    state = {}
    for name, tensor in load_file(str(folder / "model.safetensors")).items():
        for old, new in RENAMES:
            name = name.replace(old, new)
        state[name] = tensor.float()
    model = Whisper(dims)
    model.load_state_dict(state, strict=True)
    heads = json.loads((folder / "generation_config.json").read_text())["alignment_heads"]
    mask = torch.zeros(dims.n_text_layer, dims.n_text_head, dtype=torch.bool)
    for layer, head in heads:
        mask[layer, head] = True
    model.register_buffer("alignment_heads", mask.to_sparse(), persistent=False)
    return model.eval()


def load_encoding(path: Path) -> tiktoken.Encoding:
    """tokenizer.json as a tiktoken Encoding: byte-level tokens → ranks, added → special."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    shifted = [byte for byte in range(256) if byte not in printable]
    symbols = {chr(b): b for b in printable} | {chr(0x100 + n): b for n, b in enumerate(shifted)}
    ranks = {bytes(symbols[c] for c in token): i for token, i in doc["model"]["vocab"].items()}
    specials = {token["content"]: token["id"] for token in doc["added_tokens"]}
    return tiktoken.Encoding(
        name=path.parent.name,
        explicit_n_vocab=len(ranks) + len(specials),
        pat_str=PAT_STR,
        mergeable_ranks=ranks,
        special_tokens=specials,
    )


def window(audio: np.ndarray, n_mels: int) -> tuple[torch.Tensor, int]:
    """The first window's log-mel and content frames, as `transcribe` makes them."""
    mel = log_mel_spectrogram(torch.from_numpy(audio), n_mels, padding=N_SAMPLES)
    segment_size = min(N_FRAMES, mel.shape[-1] - N_FRAMES)
    return pad_or_trim(mel[:, :segment_size], N_FRAMES), segment_size


def cross_qk(model: Whisper, mel: torch.Tensor, tokens: list[int]) -> torch.Tensor:
    """The alignment heads' cross-attention logits, captured as `find_alignment` does."""
    qks: list = [None] * model.dims.n_text_layer
    hooks = [
        block.cross_attn.register_forward_hook(
            lambda _, ins, outs, index=i: qks.__setitem__(index, outs[-1][0])
        )
        for i, block in enumerate(model.decoder.blocks)
    ]
    with torch.no_grad(), disable_sdpa():
        model(mel.unsqueeze(0), torch.tensor(tokens).unsqueeze(0))
    for hook in hooks:
        hook.remove()
    return torch.stack([qks[layer][head] for layer, head in model.alignment_heads.indices().T])


def decoded_heads() -> dict[str, list[list[int]]]:
    """openai's built-in alignment heads (whisper/__init__.py:36-51) as (layer, head) pairs."""
    result = {}
    for name, (layers, heads) in HEAD_SHAPES.items():
        dump = whisper._ALIGNMENT_HEADS[name]
        mask = np.frombuffer(gzip.decompress(base64.b85decode(dump)), dtype=bool)
        result[name] = np.argwhere(mask.reshape(layers, heads)).tolist()
    return result


def adjusted(tokenizer: Tokenizer, crafted: list) -> list[list]:
    """`add_word_timestamps` of one segment with `find_alignment` returning `crafted`."""
    alignment = [
        WordTiming(word, tokens, np.int64(start) / 50, np.int64(end) / 50, 1.0)
        for word, tokens, start, end in crafted
    ]
    segment = {
        "seek": 0,
        "start": 0.0,
        "end": max(end for *_, end in crafted) / 50 + 1.0,  # after every word: no effect
        "tokens": [token for word in alignment for token in word.tokens],
    }
    original = whisper.timing.find_alignment
    whisper.timing.find_alignment = lambda *args, **kwargs: alignment
    try:
        add_word_timestamps(
            segments=[segment],
            model=None,
            tokenizer=tokenizer,
            mel=None,
            num_frames=0,
            last_speech_timestamp=0.0,
        )
    finally:
        whisper.timing.find_alignment = original
    return [[w["word"], float(w["start"]), float(w["end"])] for w in segment["words"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", type=Path, help="a transformers-format Whisper folder")
    parser.add_argument("cases", type=Path, help="JSON list of {audio, text, language}")
    parser.add_argument("out", type=Path, help="the .npz to write (and .json beside it)")
    args = parser.parse_args()

    torch.set_num_threads(THREADS)
    model = load_model(args.model)
    encoding = load_encoding(args.model / "tokenizer.json")
    num_languages = sum(f"<|{code}|>" in encoding._special_tokens for code in LANGUAGES)
    arrays: dict[str, np.ndarray] = {}
    for n_mels in (80, 128):
        arrays[f"mel_filters/{n_mels}"] = mel_filters("cpu", n_mels).numpy()
    cases = json.loads(args.cases.read_text(encoding="utf-8"))
    results = []
    for index, case in enumerate(cases["cases"]):
        audio = np.load(case["audio"]).astype(np.float32)
        tokenizer = Tokenizer(
            encoding=encoding,
            num_languages=num_languages,
            language=case["language"],
            task="transcribe",
        )
        text = case["text"] if case["language"] in UNSPACED else " " + case["text"]
        text_tokens = tokenizer.encode(text)
        for n_mels in (80, 128):
            arrays[f"log_mel/{n_mels}/{index}"] = window(audio, n_mels)[0].numpy()
        mel, num_frames = window(audio, model.dims.n_mels)
        tokens = [*tokenizer.sot_sequence, tokenizer.no_timestamps, *text_tokens, tokenizer.eot]
        arrays[f"qk/{index}"] = cross_qk(model, mel, tokens).numpy()
        segment = {
            "seek": 0,
            "start": 0.0,
            "end": num_frames * HOP_LENGTH / SAMPLE_RATE,
            "tokens": text_tokens,
        }
        add_word_timestamps(
            segments=[segment],
            model=model,
            tokenizer=tokenizer,
            mel=mel,
            num_frames=num_frames,
            last_speech_timestamp=0.0,
        )
        words = [[w["word"], float(w["start"]), float(w["end"])] for w in segment["words"]]
        results.append({"tokens": text_tokens, "words": words, "num_frames": num_frames})
    np.savez(args.out, **arrays)
    probes = {text: encoding.encode(text) for text in PROBES}
    english = Tokenizer(encoding=encoding, num_languages=num_languages, language="en")
    crafted = [adjusted(english, alignment) for alignment in cases["crafted"]]
    summary = {"cases": results, "crafted": crafted, "probes": probes, "heads": decoded_heads()}
    args.out.with_suffix(".json").write_text(json.dumps(summary, ensure_ascii=False))
    print(json.dumps({"cases": len(results), "words": [len(r["words"]) for r in results]}))


if __name__ == "__main__":
    main()
