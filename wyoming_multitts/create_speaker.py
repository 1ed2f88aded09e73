"""`python -m wyoming_multitts create-speaker`: an OuteTTS speaker profile from your recording.

    python -m wyoming_multitts create-speaker alice.wav --text "What the recording says." \\
        --out alice.json [--version 1.0|0.3|0.2] [--language en]

The steps of outetts 0.4.4's `create_speaker` (docs/engines.md, "OuteTTS: speaker profiles from
a recording"): Whisper times each word of the transcript (forced alignment, `alignment.py`), the
codec's encoder turns the recording into codes (DAC for 1.0, WavTokenizer's for 0.2/0.3), and
the codes are cut word by word (`engines/outetts/create10.py`, `create.py`). The result is the
package's JSON, usable as a voice's `speaker:` (a path) or with outetts itself.

Models come from the hub like any model (`--download-dir`, `--offline`), or from local paths.
The server runs this command once per catalog voice with `reference:` on an OuteTTS model and
caches the profile (`speaker_profiles.py`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .catalog import FileRef
from .errors import SpeakerError, VoiceError
from .hub import Hub

_LOGGER = logging.getLogger(__name__)

VERSIONS = ("1.0", "0.3", "0.2")
"""Profile formats: 1.0's (interface 3) and 0.2/0.3's (interface 2, one format for both)."""
DEFAULT_ALIGNER = "openai/whisper-large-v3-turbo"
"""The Whisper outetts 0.4.4 times words with ("turbo"), in the hub's transformers format."""
DEFAULT_CODEC = {
    "1.0": "ibm-research/DAC.speech.v1.0/weights_24khz_1.5kbps_v1.0.pth",
    "0.3": "OuteAI/wavtokenizer-large-75token-interface",
    "0.2": "OuteAI/wavtokenizer-large-75token-interface",
}
"""The encoder each version's package uses: DAC's checkpoint (a file), WavTokenizer's encoder
(a repo whose `encoder/` folder holds it)."""
LANGUAGES = {
    "1.0": (
        *("en", "ar", "zh", "nl", "fr", "de", "it", "ja", "ko", "lt", "ru", "es"),
        *("pt", "be", "bn", "ka", "hu", "lv", "fa", "pl", "sw", "ta", "uk"),
    ),
    "0.3": ("en", "ja", "ko", "zh", "fr", "de"),
    "0.2": ("en", "ja", "ko", "zh"),
}
"""What each version speaks (its model cards); `--language` is guessed among these."""
ERROR_PREFIX = "create-speaker: error: "
"""Starts the one line that says what went wrong (the server looks for it)."""
MAX_TEXT_CHARS = 1000
"""Longest transcript: a recording is at most 20 s (about 60 words)."""


def build_parser() -> argparse.ArgumentParser:
    """The command line (`create-speaker --help`)."""
    parser = argparse.ArgumentParser(
        prog="wyoming-multitts create-speaker",
        description="Make an OuteTTS speaker profile (JSON) from a WAV recording of 5-15 s of "
        "one speaker and its exact transcript.",
    )
    parser.add_argument("wav", type=Path, help="the recording (WAV, any rate, mono or stereo)")
    parser.add_argument("--text", required=True, help="what the recording says, word for word")
    parser.add_argument("--out", type=Path, required=True, help="the profile JSON to write")
    parser.add_argument(
        "--version",
        choices=VERSIONS,
        help="OuteTTS release the profile is for (default: 1.0, "
        "or the one --vocoder belongs to)",
    )
    parser.add_argument(
        "--language", help="language of the recording, e.g. en (default: guessed from --text)"
    )
    parser.add_argument(
        "--aligner",
        default=DEFAULT_ALIGNER,
        help=f"Whisper in the hub's transformers format: a repo id or a local folder "
        f"(default: {DEFAULT_ALIGNER}; openai/whisper-small is about 8x cheaper on a CPU)",
    )
    parser.add_argument(
        "--codec",
        help="the codec's encoder: 1.0: DAC's .pth (REPO/FILE or a path), 0.2/0.3: "
        "WavTokenizer's encoder repo or folder (default: what the outetts package uses)",
    )
    parser.add_argument(
        "--vocoder",
        type=Path,
        help="the model's vocoder file (the catalog's files.vocoder): picks the version; 1.0: "
        "DAC's checkpoint, used as the encoder; 0.2/0.3: the WavTokenizer GGUF whose codebook "
        "the encoder's must match",
    )
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda[:N] or auto")
    parser.add_argument(
        "--threads", type=int, default=os.cpu_count() or 1, help="CPU threads for torch"
    )
    parser.add_argument("--download-dir", type=Path, help="Hugging Face cache for models")
    parser.add_argument("--offline", action="store_true", help="use only cached or local files")
    return parser


def parse_ref(text: str, is_file: bool) -> FileRef:
    """A local path when it exists, else a hub reference: `REPO[@REVISION]` for a folder,
    `REPO/FILE[@REVISION]` for a file (`owner/name/file.pth`)."""
    if Path(text).exists():
        return FileRef(path=Path(text))
    name, _, revision = text.partition("@")
    parts = name.split("/")
    if len(parts) < (3 if is_file else 2) or not all(parts) or (not is_file and len(parts) > 2):
        form = "OWNER/REPO/FILE" if is_file else "OWNER/REPO"
        raise SpeakerError(f"{text!r} is neither an existing path nor a hub reference ({form})")
    if is_file:
        return FileRef(
            repo="/".join(parts[:2]), file="/".join(parts[2:]), revision=revision or None
        )
    return FileRef(repo=name, revision=revision or None)


def format_ref(ref: FileRef) -> str:
    """The inverse of `parse_ref`, for the server's command line."""
    if ref.path is not None:
        return str(ref.path)
    return ref.describe() + (f"@{ref.revision}" if ref.revision else "")


def version_of(vocoder: Path | None, version: str | None) -> str:
    """The profile's version: as asked, else the vocoder's kind (a GGUF: 0.2/0.3), else 1.0."""
    if version is not None or vocoder is None:
        return version or "1.0"
    with vocoder.open("rb") as file:
        return "0.3" if file.read(4) == b"GGUF" else "1.0"


def make_profile(
    wav: Path,
    text: str,
    version: str,
    language: str | None,
    aligner: FileRef,
    codec: FileRef,
    vocoder: Path | None,
    hub: Hub,
    device_name: str,
    threads: int,
) -> dict[str, Any]:
    """The outetts JSON profile of `wav` saying `text` (see the module docstring)."""
    import torch

    from . import audio
    from .alignment import ALIGNER_FILES, Aligner
    from .devices import resolve_device, set_torch_threads, torch_device_for
    from .engines.outetts import create, create10
    from .text.detect import guess_language

    text = create10.normalize_transcript(text)
    if not text or len(text) > MAX_TEXT_CHARS:
        raise SpeakerError(f"--text must hold the transcript (1-{MAX_TEXT_CHARS} characters)")
    language = language or guess_language(text, LANGUAGES[version])
    try:
        samples, rate = audio.read_wav(wav)
    except (OSError, ValueError) as err:
        raise SpeakerError(f"{wav}: {err}; give a WAV recording of 5-15 s") from err
    try:
        create10.check_recording(samples, rate)
    except SpeakerError as err:
        raise SpeakerError(f"{wav}: {err}") from err
    set_torch_threads(threads)
    device = torch_device_for(resolve_device(device_name, uses_llama=False))
    with torch.inference_mode():
        words = Aligner.load(hub.fetch_folder(aligner, ALIGNER_FILES), device).align(
            samples,
            rate,
            text,
            language,
            words=None if version == "1.0" else create.profile03_words(text, language),
        )
        _LOGGER.info("%s: %d words timed", wav, len(words))
        if version == "1.0":
            from .codecs.dac_encoder import load_dac_encoder

            checkpoint = vocoder if vocoder is not None else hub.fetch_file(codec)
            dac = load_dac_encoder(checkpoint, device)
            return create10.profile10(audio.resample(samples, rate, 24000), words, text, dac)
        from .codecs.wavtokenizer_encoder import (
            WAVTOKENIZER_ENCODER_FILES,
            check_codebook,
            load_wavtokenizer_encoder,
        )

        encoder = load_wavtokenizer_encoder(
            hub.fetch_folder(codec, WAVTOKENIZER_ENCODER_FILES), device
        )
        if vocoder is not None:
            check_codebook(encoder, vocoder)
        sixteen_k = audio.resample(samples, rate, 16000)
        return create.profile03(sixteen_k, words, text, language, encoder)


def write_profile(profile: dict[str, Any], out: Path, version: str) -> None:
    """Write as outetts' `save_speaker` does (indent 2), once the engine's own loader accepts
    it, and atomically: a server reading the path never sees half a file."""
    from .engines.outetts import speakers, speakers10

    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")
    try:
        speakers10.load_speaker(partial) if version == "1.0" else speakers.load_speaker(partial)
    except SpeakerError as err:
        partial.unlink()
        raise SpeakerError(
            f"the profile made from the recording would not load ({err}); a long pause inside "
            "the recording can make a word too long: trim it and try again"
        ) from err
    os.replace(partial, out)


def main(argv: Sequence[str]) -> int:
    """Run the command; exit status 2 with one line naming the problem on a user error."""
    args = build_parser().parse_args(argv)
    version = version_of(args.vocoder, args.version)
    try:
        codec = parse_ref(args.codec or DEFAULT_CODEC[version], is_file=version == "1.0")
        profile = make_profile(
            args.wav,
            args.text,
            version,
            args.language,
            parse_ref(args.aligner, is_file=False),
            codec,
            args.vocoder,
            Hub(cache_dir=args.download_dir, offline=args.offline),
            args.device,
            max(1, args.threads),
        )
        write_profile(profile, args.out, version)
    except (VoiceError, OSError) as err:
        print(f"{ERROR_PREFIX}{err}", file=sys.stderr)
        return 2
    _LOGGER.info("%s: OuteTTS %s profile of %d words", args.out, version, len(profile["words"]))
    return 0
