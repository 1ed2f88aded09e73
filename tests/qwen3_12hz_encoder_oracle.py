"""Reference codes from the official Qwen3-TTS 12 Hz speech-tokenizer encoder (qwen-tts 0.1.1).

Runs under the qwen-tts oracle venv (`local/qwen-tts-venv`, made by
`script/make-qwen-tts-oracle-env`), never under the project's own venv: qwen-tts pins
transformers 4.57.3, whose `MimiModel` the encoder is.

    python tests/qwen3_12hz_encoder_oracle.py SPEECH_TOKENIZER AUDIO.npz OUT.npz

SPEECH_TOKENIZER is a `speech_tokenizer/` folder (ours from `modelgen.qwen3tts`, or a real
download), loaded the way the release loads it (`qwen_tts.Qwen3TTSTokenizer.from_pretrained`,
float32 on the CPU, 2 threads). AUDIO.npz holds 1-D float32 clips at 24 kHz; for each clip NAME
OUT.npz gets
    NAME.codes    (T, Q) int64   `Qwen3TTSTokenizer.encode(clip, sr=24000).audio_codes[0]`: the
                                 feature extractor, padding mask and kept codes of the release
    NAME.latent   (H, T) f32     the latent the quantizer sees (encoder, transformer, downsample,
                                 as `MimiModel._encode_frame` runs them)
and `attn_implementation`, the transformers attention that ran.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from qwen3tts_oracle import stub_torchaudio

THREADS = 2
SAMPLE_RATE = 24_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("speech_tokenizer", type=Path, help="speech_tokenizer/ folder")
    parser.add_argument("audio", type=Path, help="npz of 1-D float32 clips at 24 kHz")
    parser.add_argument("out", type=Path, help="npz to write")
    args = parser.parse_args()

    torch.set_num_threads(THREADS)
    stub_torchaudio()
    from qwen_tts import Qwen3TTSTokenizer  # pylint: disable=import-outside-toplevel

    tokenizer = Qwen3TTSTokenizer.from_pretrained(str(args.speech_tokenizer))
    mimi = tokenizer.model.float().eval().encoder
    results: dict[str, np.ndarray] = {}
    with np.load(args.audio) as clips, torch.inference_mode():
        for name in clips.files:
            clip = clips[name]
            codes = tokenizer.encode(clip, sr=SAMPLE_RATE).audio_codes[0]  # (T, Q)
            audio = torch.from_numpy(clip)[None, None]  # (1, 1, S)
            hidden = mimi.encoder(audio)  # (1, H, T25)
            hidden = mimi.encoder_transformer(hidden.transpose(1, 2), return_dict=True)
            latent = mimi.downsample(hidden.last_hidden_state.transpose(1, 2))  # (1, H, T)
            results[f"{name}.codes"] = codes.numpy().astype(np.int64)
            results[f"{name}.latent"] = latent[0].numpy().astype(np.float32)
    attention = str(mimi.config._attn_implementation)  # pylint: disable=protected-access
    np.savez(args.out, attn_implementation=attention, **results)
    print(f"wrote {args.out}: {len(results) // 2} clips, attention {attention}")


if __name__ == "__main__":
    main()
