"""Reference audio from the official Qwen3-TTS 12 Hz speech-tokenizer decoder (qwen-tts 0.1.1).

Runs under the qwen-tts oracle venv (`local/qwen-tts-venv`, made by
`script/make-qwen-tts-oracle-env`), never under the project's own venv: it imports `qwen_tts`,
which pins transformers 4.57.3.

    python tests/qwen3_12hz_oracle.py OUT [--frames N] [--seed S] [--std STD]
                                          [--layers L] [--sliding-window W] [--load FOLDER]

Without `--load` it builds a tiny random `Qwen3TTSTokenizerV2Model` (the tiny config of
docs/engines.md, "Qwen3-TTS: tiny test model", with `--layers`/`--sliding-window` for the
decoder transformer: the defaults 2 and 16 make the receptive field, 2 + 2·15 + 10 = 42 frames,
longer than the official 25-frame chunk context, so the test can see both cases), re-initialises
every parameter with small random values (the default init decodes to a constant; gains around 1,
see UNIT_GAINS), and writes it with `save_pretrained` to OUT/speech_tokenizer/ -- `config.json`
+ `model.safetensors`, the layout of the `speech_tokenizer/` folder of every Qwen3-TTS repo. With
`--load FOLDER` it uses that speech tokenizer as it is and writes no model.

It then draws `--frames` random code frames (T, num_quantizers) and writes OUT/reference.npz:
    codes    (T, Q) int64     the codes decoded
    full     (T·1920,) f32    `model.decoder(codes)`: one pass over all frames (chunking disabled)
    chunked  (T·1920,) f32    `model.decode(codes)`: the official default, `chunked_decode(300, 25)`
    chunk_size, left_context  the chunked_decode arguments of `chunked`
    attn_implementation       which transformers attention ran (str)
Torch runs on the CPU with 2 threads, float32.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import sys
import types
from pathlib import Path

import numpy as np
import torch
import transformers  # noqa: F401  (must be imported before the torchaudio stub below)

# torchaudio has no build for torch 2.13; `import qwen_tts` imports the 25 Hz tokenizer, which only
# needs `torchaudio.compliance.kaldi` to exist. A stub with a __spec__ is enough for the 12 Hz path
# (docs/engines.md, "Qwen3-TTS: tiny test model").
for _name in ["torchaudio", "torchaudio.compliance", "torchaudio.compliance.kaldi"]:
    _module = types.ModuleType(_name)
    _module.__spec__ = importlib.machinery.ModuleSpec(_name, None)
    sys.modules.setdefault(_name, _module)
setattr(sys.modules["torchaudio"], "compliance", sys.modules["torchaudio.compliance"])
setattr(sys.modules["torchaudio.compliance"], "kaldi", sys.modules["torchaudio.compliance.kaldi"])

from qwen_tts.core.tokenizer_12hz.configuration_qwen3_tts_tokenizer_v2 import (  # noqa: E402
    Qwen3TTSTokenizerV2Config,
)
from qwen_tts.core.tokenizer_12hz.modeling_qwen3_tts_tokenizer_v2 import (  # noqa: E402
    Qwen3TTSTokenizerV2Model,
)

CHUNK_SIZE = 300
"""Frames per chunk of the official `chunked_decode` default."""
LEFT_CONTEXT = 25
"""Frames of left context of the official `chunked_decode` default."""
THREADS = 2
UNIT_GAINS = ("layernorm.weight", "norm.weight", "layer_scale.scale")
"""Parameters drawn from N(1, std), not N(0, std): with LayerScales near 0 the transformer's far
reach falls below float32 rounding and short left contexts would look exact."""

TINY_ENCODER = dict(
    hidden_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=8,
    intermediate_size=32,
    num_filters=4,
    codebook_size=32,
    codebook_dim=8,
    num_quantizers=4,
    vector_quantization_hidden_dimension=8,
    upsampling_ratios=[8, 6, 5, 4],
    frame_rate=12.5,
    sliding_window=16,
    upsample_groups=16,
)
"""The tiny encoder (a transformers MimiConfig) of docs/engines.md, "Qwen3-TTS: tiny test model";
only there so the file has encoder keys too."""
TINY_DECODER = dict(
    codebook_size=32,
    codebook_dim=16,
    hidden_size=16,
    latent_dim=16,
    intermediate_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=8,
    num_quantizers=4,
    decoder_dim=32,
    sliding_window=8,
    upsample_rates=[8, 5, 4, 3],
    upsampling_ratios=[2, 2],
)
"""The tiny decoder of docs/engines.md, "Qwen3-TTS: tiny test model" (`--layers`/`--sliding-window`
override its transformer)."""


def build(layers: int, sliding_window: int, std: float, seed: int) -> Qwen3TTSTokenizerV2Model:
    """The tiny tokenizer with every parameter redrawn: N(0, std), gains N(1, std), codebook
    usage U(0.5, 1.5)."""
    torch.manual_seed(seed)
    decoder = dict(TINY_DECODER, num_hidden_layers=layers, sliding_window=sliding_window)
    config = Qwen3TTSTokenizerV2Config(
        encoder_config=TINY_ENCODER,
        decoder_config=decoder,
        encoder_valid_num_quantizers=decoder["num_quantizers"],
    )
    model = Qwen3TTSTokenizerV2Model(config).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("cluster_usage"):
                # usage counts are positive; entry 0 is 0 so the clamp to 1e-5 is exercised,
                # with an embedding_sum row small enough that sum / 1e-5 stays ~std
                parameter.uniform_(0.5, 1.5)
                parameter[0] = 0.0
            elif name.endswith(UNIT_GAINS):
                parameter.normal_(1.0, std)
            else:
                parameter.normal_(0.0, std)
        for name, parameter in model.named_parameters():
            if name.endswith("embedding_sum"):
                parameter[0] *= 1e-5
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="folder for speech_tokenizer/ and reference.npz")
    parser.add_argument("--frames", type=int, default=400, help="code frames to decode")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the codes")
    parser.add_argument("--std", type=float, default=0.1, help="std of the random weights")
    parser.add_argument("--layers", type=int, default=2, help="decoder transformer layers")
    parser.add_argument("--sliding-window", type=int, default=16, help="decoder attention window")
    parser.add_argument("--load", type=Path, help="use this speech_tokenizer folder instead")
    args = parser.parse_args()

    torch.set_num_threads(THREADS)
    if args.load is not None:
        model = Qwen3TTSTokenizerV2Model.from_pretrained(args.load).eval()
    else:
        model = build(args.layers, args.sliding_window, args.std, args.seed)
        model.save_pretrained(args.out / "speech_tokenizer")
    model = model.float()

    decoder_config = model.config.decoder_config
    rng = np.random.default_rng(args.seed)
    codes = rng.integers(
        0, decoder_config.codebook_size, (args.frames, decoder_config.num_quantizers)
    )  # (T, Q) int64
    codes[:: max(1, args.frames // 7)] = 0  # some frames use entry 0 (clamped usage)

    with torch.inference_mode():
        batch = torch.from_numpy(codes)[None]  # (1, T, Q)
        full = model.decoder(batch.transpose(1, 2))[0, 0]  # (T·1920,)
        chunked = model.decode(batch, return_dict=True).audio_values[0]  # (T·1920,)
    args.out.mkdir(parents=True, exist_ok=True)
    np.savez(
        args.out / "reference.npz",
        codes=codes,
        full=full.numpy().astype(np.float32),
        chunked=chunked.numpy().astype(np.float32),
        chunk_size=CHUNK_SIZE,
        left_context=LEFT_CONTEXT,
        attn_implementation=str(decoder_config._attn_implementation),
    )
    print(
        f"wrote {args.out}: {args.frames} frames, full std {float(full.std()):.3f}, "
        f"|full|=1 fraction {float((full.abs() >= 1).float().mean()):.4f}, "
        f"attention {decoder_config._attn_implementation}"
    )


if __name__ == "__main__":
    main()
