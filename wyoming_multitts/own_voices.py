"""The user's own voices, made from recordings on the web page: a catalog file of their own,
`<data folder>/own-voices/voices.yaml`, with each voice's recording beside it as `<voice>.wav`.

Only this file is written here, never the user's `voices.yaml`. Each change reads, checks and
writes it under a file lock, atomically (`formats.publish`): two browser tabs, or two servers
sharing the data folder, never lose each other's voices, and a server killed mid-write leaves
the last good file. Everything here blocks on the disk: `live_catalog` runs it in a thread.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import unicodedata
from pathlib import Path
from typing import Any, Iterator

import yaml

from .audio import read_wav
from .catalog import Catalog, CatalogError, VoiceSpec, merge_own_voices, read_yaml
from .errors import EngineError
from .formats import PARTIAL_SUFFIX, conversion_lock, partial_path, publish

OWN_VOICES_FOLDER = "own-voices"
"""The own voices' folder inside the data folder."""
CATALOG_NAME = "voices.yaml"
"""The own voices' catalog file in that folder."""
RECORDING_SUFFIX = ".wav"
"""A voice's recording is `<voice>.wav` beside the catalog file."""
MAX_RECORDING_BYTES = 16_000_000
"""Largest recording taken: 20 s of 96 kHz stereo 32-bit float is 15.4 MB."""
MIN_RECORDING_SECONDS = 1.0
"""Shortest recording taken (Qwen3-TTS refuses shorter ones: `engines/qwen3tts/clone.py`)."""
MAX_RECORDING_SECONDS = 20.0
"""Longest recording taken: OuteTTS 1.0 makes profiles of at most 20 s
(`engines/outetts/create10.py`); 3-10 s of clean speech clones best anyway."""
MAX_NAME_CHARS = 64
"""Longest voice name (it is a file name too)."""
SAFE_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
"""What `safe_name` makes: lower-case ASCII letters and digits, single `-` between them."""
MAX_TRANSCRIPT_CHARS = 1000
"""Longest transcript: 20 s of speech is about 300 characters."""
LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*")
"""A language code as the catalog's `languages:` holds them (`en`, `pt-BR`, `yue`)."""
FILE_HEADER = (
    "# Your own voices, written by wyoming-multitts when you add, rename or delete one on its\n"
    "# web page. You may edit it by hand too; comments in it are not kept.\n"
)
"""Opens the file, for whoever finds it in the data folder."""


class OwnVoiceError(CatalogError):
    """An own voice cannot be added, renamed or deleted: one line naming the voice, the file
    and what to do. Nothing was written."""


def catalog_file(folder: Path) -> Path:
    """The own voices' catalog file in `folder` (`own-voices/` of the data folder)."""
    return folder / CATALOG_NAME


def safe_name(text: str) -> str:
    """A voice name that is also a safe file name: lower-case ASCII letters and digits, any run
    of other characters one `-` (`Grandpa Joe!` → `grandpa-joe`, `Zoë` → `zoe`)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    name = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:MAX_NAME_CHARS].strip("-")
    if not name:
        raise OwnVoiceError(
            f"voice name {text[:40]!r} has no letters or digits; give a name such as 'grandpa-joe'"
        )
    return name


def add_voice(
    folder: Path,
    main: Catalog,
    name: str,
    model: str,
    wav: bytes,
    transcript: str | None,
    language: str,
    description: str | None = None,
) -> VoiceSpec:
    """Add voice `safe_name(name)`, speaking through `model` of the user's catalog `main`, made
    from the recording `wav` (which says `transcript`, in `language`); the voice as added."""
    key = safe_name(name)
    where = f"voice {key}"
    if model not in main.models:
        raise OwnVoiceError(
            f"{where}: no model {model[:60]!r} in {main.path}; pick one of its models"
        )
    if not LANGUAGE_CODE.fullmatch(language):
        raise OwnVoiceError(
            f"{where}: {language[:20]!r} is not a language code; give one like 'en'"
        )
    transcript = (transcript or "").strip() or None
    if transcript is not None and len(transcript) > MAX_TRANSCRIPT_CHARS:
        raise OwnVoiceError(
            f"{where}: the transcript is over {MAX_TRANSCRIPT_CHARS} characters; record a "
            f"shorter text ({MAX_RECORDING_SECONDS:g} s at most)"
        )
    if len(wav) > MAX_RECORDING_BYTES:
        raise OwnVoiceError(
            f"{where}: the recording is {len(wav) / 1e6:.1f} MB, over {MAX_RECORDING_BYTES / 1e6:g}"
            f" MB; upload {MAX_RECORDING_SECONDS:g} s at most, as a 16-bit mono WAV"
        )
    reference: dict[str, Any] = {"path": key + RECORDING_SUFFIX}
    if transcript is not None:
        reference["text"] = transcript
    entry = {
        "model": model,
        "reference": reference,
        "languages": [language],
        "description": description or name.strip(),
    }
    recording = folder / reference["path"]
    with _editing(folder, where) as voices:
        _check_free(key, voices, main, folder)
        partial = partial_path(recording)
        try:
            partial.write_bytes(wav)
            _check_recording(partial, where)
            voices[key] = entry
            catalog = _checked(main, voices, folder)
            publish(partial, recording)
        finally:
            partial.unlink(missing_ok=True)
        _write(folder, voices)
    return catalog.voices[key]


def rename_voice(folder: Path, main: Catalog, old: str, new: str) -> VoiceSpec:
    """Rename own voice `old` to `safe_name(new)`, `new` becoming its description; its recording
    is renamed with it. The voice as renamed."""
    key = safe_name(new)
    with _editing(folder, f"voice {old[:60]}") as voices:
        entry = _own_entry(voices, old, folder)
        if key != old:
            _check_free(key, voices, main, folder)
        entry = {**entry, "description": new.strip()}
        moved = _recording_named(entry, old, folder)
        if moved is not None and key != old:
            entry["reference"] = {**entry["reference"], "path": key + RECORDING_SUFFIX}
            partial = partial_path(folder / entry["reference"]["path"])
            try:
                shutil.copyfile(moved, partial)
                publish(partial, folder / entry["reference"]["path"])
            finally:
                partial.unlink(missing_ok=True)
        renamed = {key if n == old else n: entry if n == old else e for n, e in voices.items()}
        catalog = _checked(main, renamed, folder)
        _write(folder, renamed)
        if moved is not None and key != old:
            moved.unlink(missing_ok=True)
    return catalog.voices[key]


def delete_voice(folder: Path, main: Catalog, name: str) -> None:
    """Delete own voice `name` and its recording."""
    with _editing(folder, f"voice {name[:60]}") as voices:
        entry = _own_entry(voices, name, folder)
        recording = _recording_named(entry, name, folder)
        kept = {n: e for n, e in voices.items() if n != name}
        _checked(main, kept, folder)
        _write(folder, kept)
        if recording is not None:
            recording.unlink(missing_ok=True)


@contextlib.contextmanager
def _editing(folder: Path, where: str) -> Iterator[dict[str, Any]]:
    """The own voices as the file has them now (by name, as written), under the file lock; a
    failure to write is an `OwnVoiceError` naming `where`, the folder and what to do."""
    path = catalog_file(folder)
    cannot_write = f"{where}: cannot write {folder}; check that folder's owner and free space"
    try:
        with conversion_lock(path, cannot_write):
            for stale in folder.glob(f".*{PARTIAL_SUFFIX}"):  # a killed writer's
                stale.unlink(missing_ok=True)
            doc = read_yaml(path) if path.exists() else None
            voices = doc.get("voices") if isinstance(doc, dict) else None
            if doc is not None and not isinstance(voices, dict):
                raise OwnVoiceError(f"{path}: expected 'voices:' with a mapping; fix or remove it")
            yield {str(n): e for n, e in (voices or {}).items()}
    except EngineError as err:  # the lock's folder could not be made or opened
        raise OwnVoiceError(str(err)) from err
    except OSError as err:
        raise OwnVoiceError(f"{cannot_write} ({err.strerror})") from err


def _check_free(key: str, voices: dict[str, Any], main: Catalog, folder: Path) -> None:
    """Refuse a name an own voice or a voice of the user's catalog has already."""
    if key in voices:
        raise OwnVoiceError(
            f"voice {key}: {catalog_file(folder)} has a voice of that name; pick another name"
        )
    if key in main.voices:
        raise OwnVoiceError(f"voice {key}: {main.path} has a voice of that name; pick another name")


def _own_entry(voices: dict[str, Any], name: str, folder: Path) -> dict[str, Any]:
    if name not in voices or not isinstance(voices[name], dict):
        raise OwnVoiceError(
            f"voice {name[:60]}: not one of your own voices in {catalog_file(folder)}; "
            "voices of your own catalog are changed there"
        )
    return dict(voices[name])


def _recording_named(entry: dict[str, Any], name: str, folder: Path) -> Path | None:
    """The recording `<name>.wav` in `folder` when `entry` refers to it (one placed elsewhere
    by hand is the user's, and stays; so does one of a name edited in by hand that is no safe
    file name, such as `../x`)."""
    reference = entry.get("reference")
    if not SAFE_NAME.fullmatch(name):
        return None
    if isinstance(reference, dict) and reference.get("path") == name + RECORDING_SUFFIX:
        return folder / (name + RECORDING_SUFFIX)
    return None


def _check_recording(path: Path, where: str) -> None:
    """Refuse a recording the engines cannot read (`audio.read_wav`), or of the wrong length."""
    try:
        audio, rate = read_wav(path)
    except ValueError as err:
        raise OwnVoiceError(
            f"{where}: the recording is not a WAV this server reads ({err}); upload a 16-bit "
            "PCM or float WAV"
        ) from err
    seconds = len(audio) / rate
    if not MIN_RECORDING_SECONDS <= seconds <= MAX_RECORDING_SECONDS:
        raise OwnVoiceError(
            f"{where}: the recording lasts {seconds:.1f} s; upload {MIN_RECORDING_SECONDS:g}-"
            f"{MAX_RECORDING_SECONDS:g} s of speech (3-10 s of clean speech clone best)"
        )


def _checked(main: Catalog, voices: dict[str, Any], folder: Path) -> Catalog:
    """The catalog `main` with own `voices`, as the server would read it (refused as it would
    be: the file and the key named)."""
    try:
        return merge_own_voices(main, {"voices": voices}, catalog_file(folder))
    except CatalogError as err:
        raise OwnVoiceError(str(err)) from err


def _write(folder: Path, voices: dict[str, Any]) -> None:
    """Write the own voices' file with `voices` (entries as the file has them), atomically
    (under the file lock)."""
    path = catalog_file(folder)
    doc = {"voices": voices}
    partial = partial_path(path)
    try:
        partial.write_text(
            FILE_HEADER + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True),
            encoding="utf-8",
        )
        publish(partial, path)
    finally:
        partial.unlink(missing_ok=True)
