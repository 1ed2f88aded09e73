"""The user's own voices file (`own_voices.py`): safe names, recordings checked before anything
is written, refusals that name the voice and the file, nothing written outside its folder or
into the user's catalog, two writers at once, and a writer killed mid-write."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np
import pytest
import yaml

from wyoming_multitts import own_voices
from wyoming_multitts.catalog import Catalog, load_catalog
from wyoming_multitts.formats import PARTIAL_SUFFIX
from wyoming_multitts.own_voices import OwnVoiceError

ROOT = Path(__file__).resolve().parent.parent
MAX_ERROR_CHARS = 300
"""Every refusal is one line of at most this many characters (docs/errors.md)."""
RATE = 16_000
"""Sample rate of the test recordings."""


def recording(seconds: float = 2.0, rate: int = RATE) -> bytes:
    """A 16-bit mono WAV of a quiet tone."""
    t = np.arange(int(seconds * rate)) / rate
    samples = (0.2 * np.sin(2 * np.pi * 220 * t) * 32767).astype("<i2")  # (n,) int16
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(samples.tobytes())
    return out.getvalue()


def user_catalog(directory: Path) -> Path:
    """The user's catalog: a cloning model and a voice (its files need not exist to be read)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "voices.yaml"
    doc = {
        "models": {
            "base": {"engine": "qwen3tts", "files": {"model": {"path": "qwen3-base"}}},
            "oute": {"engine": "outetts", "files": {"model": {"path": "o.gguf"}}},
        },
        "voices": {"taken": {"model": "base", "speaker": "x"}},
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def main(tmp_path: Path) -> Catalog:
    return load_catalog(user_catalog(tmp_path / "user"))


def own(tmp_path: Path) -> Path:
    return tmp_path / "data" / own_voices.OWN_VOICES_FOLDER


@pytest.mark.parametrize(
    "given, name",
    [
        ("Grandpa Joe!", "grandpa-joe"),
        ("Zoë", "zoe"),
        ("../../etc/passwd", "etc-passwd"),
        ("voice.wav", "voice-wav"),
        ("x" * 100, "x" * own_voices.MAX_NAME_CHARS),
    ],
)
def test_names_become_safe_file_names(given: str, name: str) -> None:
    assert own_voices.safe_name(given) == name


@pytest.mark.parametrize("given", ["", "...", "/", "日本語"])
def test_a_name_without_letters_or_digits_is_refused(given: str) -> None:
    with pytest.raises(OwnVoiceError, match="no letters or digits"):
        own_voices.safe_name(given)


def test_add_rename_and_delete_keep_the_user_catalog_and_stay_in_their_folder(
    tmp_path: Path, main: Catalog
) -> None:
    users = main.path.read_bytes()
    folder = own(tmp_path)
    added = own_voices.add_voice(
        folder, main, "Grandpa Joe", "base", recording(), "Hello there.", "en"
    )
    assert added.name == "grandpa-joe" and added.description == "Grandpa Joe"
    assert added.reference is not None and added.reference.audio.path == folder / "grandpa-joe.wav"
    assert added.reference.text == "Hello there."
    catalog = load_catalog(main.path, own_voices.catalog_file(folder))
    assert catalog.own_voices == ("grandpa-joe",)
    assert list(catalog.voices) == ["taken", "grandpa-joe"]

    renamed = own_voices.rename_voice(folder, main, "grandpa-joe", "Grandpa")
    assert renamed.name == "grandpa" and renamed.description == "Grandpa"
    assert sorted(p.name for p in folder.iterdir()) == [
        ".voices.yaml.lock",
        "grandpa.wav",
        "voices.yaml",
    ]
    assert (folder / "grandpa.wav").read_bytes() == recording()

    own_voices.delete_voice(folder, main, "grandpa")
    catalog = load_catalog(main.path, own_voices.catalog_file(folder))
    assert catalog.own_voices == () and list(catalog.voices) == ["taken"]
    assert sorted(p.name for p in folder.iterdir()) == [".voices.yaml.lock", "voices.yaml"]
    assert main.path.read_bytes() == users  # never rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "user"]


@pytest.mark.parametrize(
    "change, words",
    [
        ({"wav": b"x" * (own_voices.MAX_RECORDING_BYTES + 1)}, "MB, over"),
        ({"wav": b"hello, not a wav"}, "not a WAV"),
        ({"wav": recording(0.5)}, "lasts 0.5 s"),
        ({"wav": recording(own_voices.MAX_RECORDING_SECONDS + 1)}, "lasts 21.0 s"),
        ({"model": "nope"}, "no model 'nope'"),
        ({"name": "Taken"}, "has a voice of that name"),
        ({"language": "english please"}, "not a language code"),
        ({"transcript": "a" * (own_voices.MAX_TRANSCRIPT_CHARS + 1)}, "transcript is over"),
    ],
)
def test_a_bad_voice_is_refused_in_one_line_and_nothing_is_written(
    tmp_path: Path, main: Catalog, change: dict, words: str
) -> None:
    request = {
        "name": "Mine",
        "model": "base",
        "wav": recording(),
        "transcript": "Hi.",
        "language": "en",
        **change,
    }
    folder = own(tmp_path)
    with pytest.raises(OwnVoiceError) as caught:
        own_voices.add_voice(folder, main, **request)
    text = str(caught.value)
    assert words in text and "\n" not in text and len(text) <= MAX_ERROR_CHARS, text
    assert own_voices.safe_name(request["name"]) in text
    assert not (folder / "voices.yaml").exists()
    assert [p.name for p in folder.glob("*.wav")] == []


def test_renaming_onto_another_voice_or_deleting_one_not_own_is_refused(
    tmp_path: Path, main: Catalog
) -> None:
    folder = own(tmp_path)
    for name in ("one", "two"):
        own_voices.add_voice(folder, main, name, "oute", recording(), "Hi.", "en")
    before = own_voices.catalog_file(folder).read_bytes()
    for edit, words in [
        (lambda: own_voices.rename_voice(folder, main, "one", "Two"), "has a voice of that name"),
        (lambda: own_voices.rename_voice(folder, main, "one", "taken"), str(main.path)),
        (lambda: own_voices.delete_voice(folder, main, "taken"), "not one of your own voices"),
        (lambda: own_voices.rename_voice(folder, main, "three", "x"), "not one of your own"),
    ]:
        with pytest.raises(OwnVoiceError, match=words) as caught:
            edit()
        assert len(str(caught.value)) <= MAX_ERROR_CHARS
    assert own_voices.catalog_file(folder).read_bytes() == before


def test_a_broken_own_file_is_named_and_left_as_it_is(tmp_path: Path, main: Catalog) -> None:
    folder = own(tmp_path)
    folder.mkdir(parents=True)
    own_voices.catalog_file(folder).write_text("voices:\n  mine: {model: nope}\n")
    with pytest.raises(OwnVoiceError, match=r"voices\.mine\.model: unknown model 'nope'"):
        own_voices.add_voice(folder, main, "other", "base", recording(), None, "en")
    assert own_voices.catalog_file(folder).read_text() == "voices:\n  mine: {model: nope}\n"


WRITER = """
import sys, time
from pathlib import Path
from wyoming_multitts import own_voices
from wyoming_multitts.catalog import load_catalog
from tests.test_catalog_own_voices import recording
folder, main = Path(sys.argv[1]), load_catalog(Path(sys.argv[2]))
prefix, count = sys.argv[3], int(sys.argv[4])
wav = recording()
print("ready", flush=True)
for i in range(count if count > 0 else 10**9):
    own_voices.add_voice(folder, main, f"{prefix}-{i}", "base", wav, "Hi.", "en")
    if count <= 0:
        own_voices.rename_voice(folder, main, f"{prefix}-{i}", f"{prefix}-{i}-renamed")
        own_voices.delete_voice(folder, main, f"{prefix}-{i}-renamed")
"""
"""Adds `count` voices to the own voices folder (0: adds, renames and deletes forever)."""


def writer(folder: Path, main: Catalog, prefix: str, count: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(folder), str(main.path), prefix, str(count)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    return process


def test_two_writers_at_once_keep_each_others_voices(tmp_path: Path, main: Catalog) -> None:
    folder = own(tmp_path)
    writers = [writer(folder, main, prefix, 8) for prefix in ("a", "b")]
    assert [process.wait(timeout=120) for process in writers] == [0, 0]
    catalog = load_catalog(main.path, own_voices.catalog_file(folder))
    assert sorted(catalog.own_voices) == sorted(f"{p}-{i}" for p in "ab" for i in range(8))
    assert len(list(folder.glob("*.wav"))) == 16


def test_a_writer_killed_mid_write_leaves_the_last_good_file(tmp_path: Path, main: Catalog) -> None:
    folder = own(tmp_path)
    own_voices.add_voice(folder, main, "kept", "base", recording(), "Hi.", "en")
    for attempt in range(5):
        process = writer(folder, main, f"w{attempt}", 0)
        time.sleep(0.2 + 0.07 * attempt)  # somewhere inside a write, a different place each time
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        catalog = load_catalog(main.path, own_voices.catalog_file(folder))  # parses
        assert "kept" in catalog.own_voices
        for name in catalog.own_voices:
            reference = catalog.voices[name].reference
            assert reference is not None and reference.audio.path is not None
            assert reference.audio.path.read_bytes() == recording()
    own_voices.add_voice(folder, main, "after", "base", recording(), "Hi.", "en")
    assert list(folder.glob(f"*{PARTIAL_SUFFIX}")) == []  # the next edit removed the leftovers


def test_deleting_a_hand_written_voice_never_touches_a_file_outside_the_folder(
    tmp_path: Path, main: Catalog
) -> None:
    folder = own(tmp_path)
    folder.mkdir(parents=True)
    outside = folder.parent / "elsewhere.wav"
    outside.write_bytes(recording())
    own_voices.catalog_file(folder).write_text(
        "voices:\n  ../elsewhere:\n    model: base\n    reference: {path: ../elsewhere.wav}\n"
    )
    own_voices.delete_voice(folder, main, "../elsewhere")
    assert outside.read_bytes() == recording()
    assert load_catalog(main.path, own_voices.catalog_file(folder)).own_voices == ()
