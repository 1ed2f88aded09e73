"""Reference codes and audio from Descript's own DAC (descript-audio-codec 1.0.0) for a checkpoint.

Runs under the DAC oracle venv (`local/dac-oracle-venv`, made by `script/make-dac-oracle-env`),
never under the project's own venv: it imports `dac`, which the server cannot install.

    python tests/dac_oracle.py CHECKPOINT OUT.npz [--frames N] [--samples S] [--seed SEED]

Loads CHECKPOINT (a `DAC.save` .pth) with `dac.DAC.load`, as outetts 0.4.4's `DacInterface`
does, then writes OUT.npz:
    codes          (Q, N) int64    random codes (every 7th frame all zeros)
    audio          (M,) f32        `model.decode(model.quantizer.from_codes(codes))`
    encode_input   (S,) f32        random audio, S not a multiple of the hop
    encode_codes   (Q, ceil(S/hop)) int64   `model.encode(model.preprocess(encode_input))` codes
    weight/NAME    every weight-normed conv's weight as the weight_norm hook computed it (NAME is
                   the conv's state-dict prefix, e.g. `decoder.model.0`)
    missing_keys, unexpected_keys   state-dict differences (`DAC.load` does not check: strict=False)
    sample_rate, hop_length
and prints a one-line JSON summary last. Torch runs on the CPU with 2 threads, float32.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import torch

# torchaudio has no build for torch 2.13; audiotools (which `import dac` imports) uses it for file
# I/O and effects only, so an empty module with a __spec__ is enough to load, encode and decode.
_module = types.ModuleType("torchaudio")
_module.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
sys.modules.setdefault("torchaudio", _module)
warnings.filterwarnings("ignore", category=FutureWarning)  # torch.nn.utils.weight_norm

import dac  # noqa: E402

THREADS = 2
ZERO_EVERY = 7
"""Every 7th frame gets code 0 in every codebook."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint", type=Path, help="a DAC.save .pth")
    parser.add_argument("out", type=Path, help="the .npz to write")
    parser.add_argument("--frames", type=int, default=200, help="code frames to decode")
    parser.add_argument("--samples", type=int, default=36_123, help="audio samples to encode")
    parser.add_argument("--seed", type=int, default=0, help="seed of the codes and the audio")
    args = parser.parse_args()

    torch.set_num_threads(THREADS)
    model = dac.DAC.load(str(args.checkpoint)).eval()
    state = torch.load(args.checkpoint, map_location="cpu", weights_only=True)["state_dict"]
    expected = set(model.state_dict())

    rng = np.random.default_rng(args.seed)
    codes = rng.integers(0, model.codebook_size, (model.n_codebooks, args.frames))  # (Q, N)
    codes[:, ::ZERO_EVERY] = 0
    encode_input = (0.3 * rng.standard_normal(args.samples)).astype(np.float32)  # (S,)
    encode_input += 0.5 * np.sin(np.arange(args.samples) * 0.05).astype(np.float32)

    with torch.inference_mode():
        latent = model.quantizer.from_codes(torch.from_numpy(codes)[None])[0]  # (1, D, N)
        audio = model.decode(latent)[0, 0]  # (M,)
        padded = model.preprocess(torch.from_numpy(encode_input)[None, None], None)  # (1, 1, S')
        encode_codes = model.encode(padded)[1][0]  # (Q, S' / hop)

    # the hooks set each weight-normed module's `weight` before its forward; both passes above
    # ran every one of them
    weights = {
        f"weight/{name}": module.weight.detach().numpy()
        for name, module in model.named_modules()
        if hasattr(module, "weight_g")
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        args.out,
        codes=codes,
        audio=audio.numpy().astype(np.float32),
        encode_input=encode_input,
        encode_codes=encode_codes.numpy(),
        missing_keys=np.array(sorted(expected - set(state)), dtype=str),
        unexpected_keys=np.array(sorted(set(state) - expected), dtype=str),
        sample_rate=model.sample_rate,
        hop_length=int(model.hop_length),
        **weights,
    )
    summary = {
        "frames": args.frames,
        "samples": int(audio.numel()),
        "audio_std": round(float(audio.std()), 4),
        "audio_peak": round(float(audio.abs().max()), 4),
        "distinct_encoded_codes": [len(np.unique(row)) for row in encode_codes.numpy()],
        "weight_normed_convs": len(weights),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
