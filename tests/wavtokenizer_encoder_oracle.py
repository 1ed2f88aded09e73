"""Reference codes from outetts 0.4.4's own WavTokenizer encoder (`wav_tokenizer/model.py`
`WavEncoder`) for an encoder snapshot.

Runs under the DAC oracle venv (`local/dac-oracle-venv`, made by `script/make-dac-oracle-env`,
with `outetts==0.4.4` installed there with --no-deps), never under the project's own venv.

    python tests/wavtokenizer_encoder_oracle.py FOLDER IN.npz OUT.npz

Loads FOLDER/encoder with `WavEncoder.from_pretrained`, as `AudioCodec.load_encoder` does, and
encodes each array `audio_N` of IN.npz (float32, 24 kHz) as `AudioCodec.encode` does (bandwidth
id 0), writing to OUT.npz:
    codes_N        (T,) int64         the codes
    embeddings_N   (512, T) float32   the SEANet encoder's output
and prints a one-line JSON summary last. Torch runs on the CPU with 2 threads, float32.

The package's `__init__` imports every backend; the codec needs none of them, so `outetts` is
registered as a bare namespace over its folder (as tests/outetts10_oracle.py does). torchaudio
has no build for torch 2.13: the codec's modules import it but, to encode, use nothing of it
but two mel helpers imported by name (`decoder/heads.py`), so a stub stands in.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

THREADS = 2
STUB_MODULES = ("torchaudio", "torchaudio.functional", "torchaudio.functional.functional")
STUB_NAMES = ("_hz_to_mel", "_mel_to_hz")
"""What `decoder/heads.py` imports from torchaudio.functional.functional (never called here)."""


def _wav_encoder() -> Any:
    """`outetts.wav_tokenizer.model.WavEncoder`, imported without the package's `__init__`."""
    for name in STUB_MODULES:
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        module.__path__ = []  # a package, so the submodule imports resolve
        sys.modules.setdefault(name, module)
    for name in STUB_NAMES:
        setattr(sys.modules[STUB_MODULES[-1]], name, None)
    spec = importlib.util.find_spec("outetts")  # finds the package without running it
    if spec is None or spec.origin is None:
        raise SystemExit("outetts is not installed: pip install --no-deps outetts==0.4.4")
    package = types.ModuleType("outetts")
    package.__path__ = [str(Path(spec.origin).parent)]
    sys.modules["outetts"] = package
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.nn.utils.weight_norm
    from outetts.wav_tokenizer.model import WavEncoder  # its __init__ puts decoder/ on sys.path

    return WavEncoder


def main() -> None:
    """Encode IN.npz's audio into OUT.npz."""
    folder, in_path, out_path = map(Path, sys.argv[1:4])
    torch.set_num_threads(THREADS)
    model = _wav_encoder().from_pretrained(str(folder / "encoder")).eval()
    bandwidth_id = torch.tensor([0])  # AudioCodec.bandwidth_id
    out: dict[str, Any] = {}
    with np.load(in_path) as clips:
        for name in clips.files:
            audio = torch.from_numpy(clips[name])[None]  # (1, S), as convert_audio_tensor gives
            _, codes = model(audio, bandwidth_id=bandwidth_id)  # (1, 1, T)
            with torch.inference_mode():
                embeddings = model.feature_extractor.encodec.encoder(audio[None])  # (1, 512, T)
            index = name.removeprefix("audio_")
            out[f"codes_{index}"] = codes[0, 0].numpy()
            out[f"embeddings_{index}"] = embeddings[0].numpy()
    np.savez(out_path, **out)
    lengths = {name: len(codes) for name, codes in out.items() if name.startswith("codes_")}
    print(json.dumps({"encoder": str(folder), "frames": lengths}))


if __name__ == "__main__":
    main()
