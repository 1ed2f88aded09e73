"""Reference OuteTTS 1.0 speaker profiles, features and loudness from the official package
(outetts 0.4.4 `AudioProcessor.create_speaker_from_dict`, pyloudnorm 0.2.0).

Runs under the DAC oracle venv (`local/dac-oracle-venv`, made by `script/make-dac-oracle-env`),
never under the project's own venv: it imports `outetts`, `dac` and `pyloudnorm`.

    python tests/outetts_speaker_oracle.py CHECKPOINT IN.npz OUT.npz

IN.npz holds mono signals at 24 kHz, float32 but for the recordings:
    loudness/NAME     measured with `pyln.Meter(24000, block_size=0.4).integrated_loudness` (after
                      outetts' zero padding to 0.4 s) and normalised by `process_audio_tensor`
    features/NAME     `Features.extract_audio_features(signal[None], 24000)`
    profile/NAME      a recording, int16, with `profile/NAME/request`: JSON {"text", "words":
                      [{"word", "start", "end"}]}; written as a 16-bit WAV and given to
                      `create_speaker_from_dict({"audio": {"bytes"}, "text", "words"})` with the
                      DAC CHECKPOINT (a `DAC.save` .pth)
    texts             JSON [text, ...]: `utils/preprocessing.text_normalizations(text)`
OUT.npz gets `lufs/NAME` (float64, -inf when silent) and `normalized/NAME` (float32); `texts`,
the normalised texts as JSON; `features`,
a JSON string {NAME: the features dict, or {"error": "Type: message"} when the package raises};
`profile/NAME`, the profile as JSON with `interface_version` added as `Interface.create_speaker`
does; and `loaded/NAME`, the float32 audio `load_audio` read back from the WAV. The last line
printed is a JSON summary. Torch runs on the CPU with 2 threads.

The package's `__init__` imports transformers, llama.cpp and every backend; making a profile from
given word timings needs none of them. So `outetts` is registered as a bare namespace over its
folder (its subpackages' `__init__` files are empty), and these are stubbed: `torchaudio` (no
build for torch 2.13: `load` reads with soundfile, as float32 in [-1, 1] like torchaudio's, and
`transforms.Resample` is the identity at equal rates, which is what torchaudio's does, and
refuses any other), `whisper` (word timings are given, nothing transcribes), `uroman` and
`MeCab` (imported by `utils/preprocessing.py` for other languages' word splitting).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import io
import json
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import soundfile
import torch

THREADS = 2
SAMPLE_RATE = 24_000
INTERFACE_VERSION = 3
"""What `Interface.create_speaker` adds to the dict (`speaker['interface_version'] = 3`)."""


def _stub(name: str, **attributes: Any) -> types.ModuleType:
    """An importable module `name` with `attributes`."""
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    for key, value in attributes.items():
        setattr(module, key, value)
    sys.modules[name] = module
    return module


def _load(source: Any) -> tuple[torch.Tensor, int]:
    """torchaudio.load: (channels, samples) float32 in [-1, 1] and the rate."""
    data, rate = soundfile.read(source, dtype="float32", always_2d=True)  # (S, C)
    return torch.from_numpy(np.ascontiguousarray(data.T)), rate


class Resample(torch.nn.Module):
    """torchaudio.transforms.Resample at equal rates: returns its input unchanged."""

    def __init__(self, orig_freq: int, new_freq: int) -> None:
        super().__init__()
        if orig_freq != new_freq:
            raise ValueError(f"the oracle resamples nothing ({orig_freq} → {new_freq} Hz)")

    def forward(self, waveform: torch.Tensor) -> torch.Tensor:
        return waveform


def _outetts() -> tuple[Any, Any, Any, Any]:
    """`AudioProcessor`, `Features`, `process_audio_tensor` and `text_normalizations` without the
    package's `__init__`."""
    _stub("torchaudio", load=_load, transforms=types.SimpleNamespace(Resample=Resample))
    _stub("whisper")
    _stub("uroman")
    _stub("MeCab")
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.nn.utils.weight_norm
    spec = importlib.util.find_spec("outetts")  # finds the package without running it
    if spec is None or spec.origin is None:
        raise SystemExit("outetts is not installed: run script/make-dac-oracle-env")
    package = types.ModuleType("outetts")
    package.__path__ = [str(Path(spec.origin).parent)]
    sys.modules["outetts"] = package
    from outetts.dac.interface import process_audio_tensor
    from outetts.utils.preprocessing import text_normalizations
    from outetts.version.v3.audio_processor import AudioProcessor, Features

    return AudioProcessor, Features, process_audio_tensor, text_normalizations


def main() -> None:
    """Answer IN.npz into OUT.npz."""
    checkpoint, in_path, out_path = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    torch.set_num_threads(THREADS)
    audio_processor, features_class, process_audio_tensor, text_normalizations = _outetts()
    import pyloudnorm

    with np.load(in_path) as npz:
        signals = {name: npz[name] for name in npz.files}
    out: dict[str, Any] = {}
    texts = json.loads(str(signals.pop("texts", "[]")))
    out["texts"] = np.array(json.dumps([text_normalizations(text) for text in texts]))

    for name in (key for key in signals if key.startswith("loudness/")):
        signal = signals[name]
        padded = np.pad(signal, (0, max(0, int(0.4 * SAMPLE_RATE) - len(signal))))
        meter = pyloudnorm.Meter(SAMPLE_RATE, block_size=0.4)
        out[f"lufs/{name[len('loudness/'):]}"] = np.float64(meter.integrated_loudness(padded))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pyloudnorm's clipping and NaN warnings
            normalized = process_audio_tensor(torch.from_numpy(signal)[None, None])
        out[f"normalized/{name[len('loudness/'):]}"] = normalized[0, 0].numpy()

    features = features_class("cpu")
    feature_answers: dict[str, Any] = {}
    for name in (key for key in signals if key.startswith("features/")):
        try:
            answer = features.extract_audio_features(torch.from_numpy(signals[name])[None], 24000)
        except (RuntimeError, ValueError) as err:
            answer = {"error": f"{type(err).__name__}: {err}"}
        feature_answers[name[len("features/") :]] = answer
    out["features"] = np.array(json.dumps(feature_answers))

    config = types.SimpleNamespace(device="cpu", audio_codec_path=checkpoint)
    processor = audio_processor(config)
    profiles = [key for key in signals if key.startswith("profile/") and "/request" not in key]
    for key in profiles:
        request = json.loads(str(signals[f"{key}/request"]))
        wav = io.BytesIO()
        soundfile.write(wav, signals[key], SAMPLE_RATE, format="WAV", subtype="PCM_16")
        audio_bytes = wav.getvalue()
        out[f"loaded/{key[len('profile/'):]}"] = processor.audio_codec.load_audio(
            io.BytesIO(audio_bytes)
        )[0, 0].numpy()
        speaker = processor.create_speaker_from_dict({"audio": {"bytes": audio_bytes}, **request})
        speaker["interface_version"] = INTERFACE_VERSION
        out[key] = np.array(json.dumps(speaker))

    out_path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(out_path, **out)
    summary = {
        "lufs": {key: float(value) for key, value in out.items() if key.startswith("lufs/")},
        "features": feature_answers,
        "profiles": {
            key: [len(word["c1"]) for word in json.loads(str(out[key]))["words"]]
            for key in profiles
        },
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
