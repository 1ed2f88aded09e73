"""Reference data from the official qwen-tts package for a Qwen3-TTS model folder.

Run it with the oracle environment's Python (script/make-qwen-tts-oracle-env), never with the
server's: qwen-tts pins transformers 4.57.3.

    local/qwen-tts-venv/bin/python tests/qwen3tts_oracle.py MODEL_DIR OUT.npz \\
        [--text TEXT] [--speaker ryan] [--language english] [--frames 4] \\
        [--ref-audio REF.wav [--ref-text TEXT] [--x-vector-only]]

MODEL_DIR is a snapshot in the official layout (ours from `modelgen.qwen3tts`, or a real
download). The script loads it the way the release is loaded
(`qwen_tts.Qwen3TTSModel.from_pretrained`, float32 on the CPU), checks that both
`model.safetensors` files hold exactly the model's state dict, and, for CustomVoice models,
generates greedily (`do_sample=False`, `subtalker_dosample=False`, `non_streaming_mode=True`,
the repetition penalty of generation_config.json) and decodes the codes with the 12 Hz
decoder. It prints one JSON line (keys checked, frames, seconds) and writes OUT.npz:

    input_ids            (T,) int64     the wrapped text `<|im_start|>assistant\\n{text}<|im_end|>
                                        \\n<|im_start|>assistant\\n` through the release's tokenizer
    prefill_embeddings   (P, H) f32     the talker's prefill input rows
    step_embeddings      (S-1, H) f32   the talker's input row at each later step
    talker_logits        (S, V) f32     codec_head output (raw, before penalties) per step
    talker_hidden        (S, H) f32     the talker's final-norm hidden state per step
    predictor_inputs     (2, Hp) f32    the code predictor's prefill rows of frame 0 (after
                                        small_to_mtp_projection)
    predictor_hidden     (G-1, Hp) f32  its final-norm hidden state at each step of frame 0
    predictor_logits     (G-1, C) f32   head i's logits at step i of frame 0
    codes                (F, G) int64   generated codes, F = --frames (no early EOS assumed)
    pcm                  (F*1920,) f32  `Qwen3TTSTokenizerV2Model.decode` of the codes
    missing_keys, unexpected_keys       str arrays: state-dict differences (must be empty)
    text, speaker, language, repetition_penalty

S = F + 1 talker steps: qwen-tts samples code 0 of a frame in one step and runs the code
predictor for it in the next, so `max_new_tokens = F + 1` yields F whole frames.

For Base models given `--ref-audio`, the script clones greedily through the public API,
`Qwen3TTSModel.generate_voice_clone(text, language, ref_audio=PATH, ref_text=…,
x_vector_only_mode=…)` (its default streaming-text mode), records what it computed on the way
and writes, besides the talker arrays above (no predictor ones):

    ref_audio            (n,) f32       the reference as qwen-tts loads it (librosa, native rate)
    mel_filters          (128, 513) f32 librosa.filters.mel(sr=24000, n_fft=1024, n_mels=128,
                                        fmin=0, fmax=12000)
    mel                  (128, frames)  qwen-tts `mel_spectrogram` of ref_audio (24 kHz only)
    x_vector             (H,) f32       the speaker encoder's embedding of the reference
    ref_codes            (T_ref, G)     ICL only: the speech tokenizer's codes of the reference
    pcm                  (F*1920,) f32  generate_voice_clone's audio (ICL: reference codes
                                        prepended, decoded, the reference's share cut off)

Without `--ref-audio`, Base (and VoiceDesign) models get only the state-dict check.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np


def stub_torchaudio() -> None:
    """torchaudio has no build for torch 2.13; qwen-tts imports it for the 25 Hz tokenizer only.

    A module with a `__spec__` satisfies both the import and transformers' availability probe
    (which is why transformers is imported first)."""
    import transformers  # noqa: F401  # pylint: disable=import-outside-toplevel,unused-import

    names = ["torchaudio", "torchaudio.compliance", "torchaudio.compliance.kaldi"]
    modules = {name: types.ModuleType(name) for name in names}
    for name, module in modules.items():
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        sys.modules[name] = module
    setattr(modules["torchaudio"], "compliance", modules["torchaudio.compliance"])
    setattr(modules["torchaudio.compliance"], "kaldi", modules["torchaudio.compliance.kaldi"])


def check_state_dicts(tts: Any, model_dir: Path) -> tuple[list[str], list[str]]:
    """Keys the model expects but the files lack, and keys the files have but the model not."""
    from safetensors import safe_open  # pylint: disable=import-outside-toplevel

    model = tts.model
    expected = {
        f"model::{name}": tuple(value.shape)
        for name, value in model.state_dict().items()
        if not name.startswith("speech_tokenizer.")
    }
    expected.update(
        {
            f"codec::{name}": tuple(value.shape)
            for name, value in model.speech_tokenizer.model.state_dict().items()
        }
    )
    found: dict[str, tuple[int, ...]] = {}
    for prefix, path in (
        ("model", model_dir / "model.safetensors"),
        ("codec", model_dir / "speech_tokenizer" / "model.safetensors"),
    ):
        with safe_open(str(path), framework="pt") as weights:
            for name in weights.keys():
                found[f"{prefix}::{name}"] = tuple(weights.get_slice(name).get_shape())
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    unexpected += sorted(
        f"{name} (shape {list(found[name])}, model has {list(expected[name])})"
        for name in set(found) & set(expected)
        if found[name] != expected[name]
    )
    return missing, unexpected


class Recorder:
    """Forward hooks that keep the last-position output of the modules we compare with."""

    def __init__(self, model: Any) -> None:
        talker = model.talker
        predictor = talker.code_predictor
        self.talker_inputs: list[np.ndarray] = []
        self.talker_logits: list[np.ndarray] = []
        self.talker_hidden: list[np.ndarray] = []
        self.predictor_inputs: list[np.ndarray] = []
        self.predictor_hidden: list[np.ndarray] = []
        self.predictor_logits: dict[int, np.ndarray] = {}
        talker.model.register_forward_pre_hook(self._talker_input, with_kwargs=True)
        talker.codec_head.register_forward_hook(self._last(self.talker_logits))
        talker.model.norm.register_forward_hook(self._last(self.talker_hidden))
        predictor.model.register_forward_pre_hook(self._predictor_input, with_kwargs=True)
        predictor.model.norm.register_forward_hook(self._last(self.predictor_hidden))
        for i, head in enumerate(predictor.lm_head):
            head.register_forward_hook(self._head(i))

    @staticmethod
    def _rows(tensor: Any) -> np.ndarray:
        return tensor.detach().float().cpu().numpy()[0]  # (L, D): batch 1

    def _talker_input(self, _module: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        self.talker_inputs.append(self._rows(kwargs["inputs_embeds"]))

    def _predictor_input(self, _module: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        self.predictor_inputs.append(self._rows(kwargs["inputs_embeds"]))

    def _last(self, into: list[np.ndarray]) -> Any:
        def hook(_module: Any, _inputs: Any, output: Any) -> None:
            into.append(self._rows(output)[-1])

        return hook

    def _head(self, index: int) -> Any:
        def hook(_module: Any, _inputs: Any, output: Any) -> None:
            self.predictor_logits.setdefault(index, self._rows(output)[-1])  # frame 0 only

        return hook


def clone_voice(tts: Any, args: argparse.Namespace) -> dict[str, np.ndarray]:
    """Greedy `generate_voice_clone` of args.text from args.ref_audio, with what it computed."""
    import librosa  # pylint: disable=import-outside-toplevel
    import torch  # pylint: disable=import-outside-toplevel
    from qwen_tts.core.models.modeling_qwen3_tts import (  # pylint: disable=import-outside-toplevel
        mel_spectrogram,
    )

    model = tts.model
    recorder = Recorder(model)
    seen: dict[str, Any] = {}
    generate = model.generate

    def recording_generate(*gen_args: Any, **kwargs: Any) -> Any:
        output = generate(*gen_args, **kwargs)
        seen.update(prompt=kwargs["voice_clone_prompt"], input_ids=kwargs["input_ids"][0])
        seen.update(codes=output[0][0])
        return output

    model.generate = recording_generate
    wavs, _ = tts.generate_voice_clone(
        text=args.text,
        language=args.language,
        ref_audio=str(args.ref_audio),
        ref_text=args.ref_text,
        x_vector_only_mode=args.x_vector_only,
        do_sample=False,
        subtalker_dosample=False,
        max_new_tokens=args.frames + 1,
    )
    audio, rate = tts._load_audio_to_np(str(args.ref_audio))  # pylint: disable=protected-access
    result = {
        "text": np.array(args.text),
        "language": np.array(args.language),
        "input_ids": seen["input_ids"][0].cpu().numpy().astype(np.int64),
        "prefill_embeddings": recorder.talker_inputs[0],
        "step_embeddings": np.concatenate(recorder.talker_inputs[1:]),
        "talker_logits": np.stack(recorder.talker_logits),
        "talker_hidden": np.stack(recorder.talker_hidden),
        "codes": seen["codes"].cpu().numpy().astype(np.int64),
        "pcm": np.asarray(wavs[0], np.float32),
        "ref_audio": audio,
        "mel_filters": librosa.filters.mel(sr=24000, n_fft=1024, n_mels=128, fmin=0, fmax=12000),
        "x_vector": seen["prompt"]["ref_spk_embedding"][0].float().cpu().numpy(),
    }
    if rate == 24000:
        with torch.inference_mode():
            mel = mel_spectrogram(
                torch.from_numpy(audio)[None],
                n_fft=1024,
                num_mels=128,
                sampling_rate=24000,
                hop_size=256,
                win_size=1024,
                fmin=0,
                fmax=12000,
            )
        result["mel"] = mel[0].numpy()
    ref_code = seen["prompt"]["ref_code"][0]
    if ref_code is not None:
        result["ref_codes"] = ref_code.cpu().numpy().astype(np.int64)
    return result


def main() -> None:
    """Parse the command line, load the model, record, write the npz, print a summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--text", default="Hello the world, this is user.")
    parser.add_argument("--speaker", default="ryan")
    parser.add_argument("--language", default="english")
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--ref-audio", type=Path)
    parser.add_argument("--ref-text")
    parser.add_argument("--x-vector-only", action="store_true")
    args = parser.parse_args()

    stub_torchaudio()
    import torch  # pylint: disable=import-outside-toplevel
    from qwen_tts import Qwen3TTSModel  # pylint: disable=import-outside-toplevel

    start = time.monotonic()
    torch.manual_seed(0)
    tts = Qwen3TTSModel.from_pretrained(str(args.model_dir), dtype=torch.float32)
    missing, unexpected = check_state_dicts(tts, args.model_dir)
    result: dict[str, Any] = {
        "missing_keys": np.array(missing, dtype=str),
        "unexpected_keys": np.array(unexpected, dtype=str),
    }
    summary: dict[str, Any] = {"missing": len(missing), "unexpected": len(unexpected)}

    model = tts.model
    if model.tts_model_type == "custom_voice":
        recorder = Recorder(model)
        input_ids = tts._tokenize_texts(  # pylint: disable=protected-access
            [tts._build_assistant_text(args.text)]  # pylint: disable=protected-access
        )[0]
        generate_kwargs = tts._merge_generate_kwargs(  # pylint: disable=protected-access
            do_sample=False, subtalker_dosample=False, max_new_tokens=args.frames + 1
        )
        with torch.inference_mode():
            codes_list, _ = model.generate(
                input_ids=[input_ids],
                instruct_ids=[None],
                languages=[args.language],
                speakers=[args.speaker],
                non_streaming_mode=True,
                **generate_kwargs,
            )
            codes = codes_list[0]  # (F, G) int64
            pcm = model.speech_tokenizer.model.decode(codes[None]).audio_values[0]  # (F*1920,)
        result.update(
            text=np.array(args.text),
            speaker=np.array(args.speaker),
            language=np.array(args.language),
            repetition_penalty=np.array(generate_kwargs["repetition_penalty"]),
            input_ids=input_ids[0].cpu().numpy().astype(np.int64),
            prefill_embeddings=recorder.talker_inputs[0],
            step_embeddings=np.concatenate(recorder.talker_inputs[1:]),
            talker_logits=np.stack(recorder.talker_logits),
            talker_hidden=np.stack(recorder.talker_hidden),
            predictor_inputs=recorder.predictor_inputs[0],
            predictor_hidden=np.stack(
                recorder.predictor_hidden[: model.talker.config.num_code_groups - 1]
            ),
            predictor_logits=np.stack(
                [recorder.predictor_logits[i] for i in sorted(recorder.predictor_logits)]
            ),
            codes=codes.cpu().numpy().astype(np.int64),
            pcm=pcm.detach().float().cpu().numpy(),
        )
        summary.update(frames=int(codes.shape[0]), samples=int(pcm.shape[0]))
    elif model.tts_model_type == "base" and args.ref_audio is not None:
        result.update(clone_voice(tts, args))
        summary.update(frames=len(result["codes"]), samples=len(result["pcm"]))
    np.savez(args.out, **result)
    summary["seconds"] = round(time.monotonic() - start, 2)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
