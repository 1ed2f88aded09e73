"""The voice catalog: which voices exist, which model speaks each, and where its files are.

`voices.yaml` has two mappings. `models:` names each model, its engine, its files (a hub repo or a
local path per role), its device and engine options. `voices:` names each voice Home Assistant
sees and the model (and speaker) behind it; a cloned voice also names its reference recording
(`reference: {path: alice.wav, text: "what it says"}`, or `repo:` + `file:` for one on the hub).
Errors name the file and the key to fix.

The user's own voices (made on the web page) are a second file with only `voices:`, merged
after the first (`merge_own_voices`): they speak through the first file's models, and a name in
both is refused. `live_catalog.py` keeps the catalog in force while the server runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import yaml

_PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = next(
    (folder for folder in (_PACKAGE_DIR / "data", _PACKAGE_DIR.parent / "data") if folder.is_dir()),
    _PACKAGE_DIR.parent / "data",
)
"""What the server reads at run time (catalog, speaker profiles): the repository's top-level
`data/`, which a wheel carries inside the package (pyproject.toml maps it there)."""
DEFAULT_CATALOG = DATA_DIR / "voices.yaml"
"""The catalog shipped with the project (`data/voices.yaml`)."""


class CatalogError(ValueError):
    """The catalog file is missing or malformed; the message names the file and key."""


@dataclass(frozen=True)
class FileRef:
    """Where one model file (or folder of files) comes from: a hub repo or a local path."""

    repo: str | None = None
    """Hugging Face repo id, e.g. `hubertsiuzdak/snac_24khz`."""
    file: str | None = None
    """File inside `repo`; None when the engine reads a whole folder (it names the files)."""
    revision: str | None = None
    """Branch, tag or commit of `repo` (default: the repo's main branch)."""
    path: Path | None = None
    """A local file or folder used instead of the hub (relative paths: to the catalog file)."""

    def describe(self) -> str:
        """Human-readable origin for logs and errors."""
        if self.path is not None:
            return str(self.path)
        return f"{self.repo}/{self.file}" if self.file else f"{self.repo}"


@dataclass(frozen=True)
class Attribution:
    """Who made a model (shown by Home Assistant)."""

    name: str
    url: str


TEXT_OPTIONS = {"normalize": ("auto", "full", "off"), "emoji": ("drop", "name")}
"""Options of the text front end, with their values (the first is the default), given in a
model's or a voice's `options:` like the engine's (which never sees them): docs/text.md."""


@dataclass(frozen=True)
class ModelSpec:
    """One model: its engine, files by role, device and engine options."""

    name: str
    engine: str
    files: Mapping[str, FileRef]
    device: str = "auto"
    options: Mapping[str, Any] = field(default_factory=dict)
    """Engine options (for every voice of the model)."""
    text_options: Mapping[str, str] = field(default_factory=dict)
    """Text front end options (`TEXT_OPTIONS`) for every voice of the model."""
    description: str | None = None
    attribution: Attribution | None = None
    source: Path | None = None
    """The catalog file this entry came from (for error messages)."""
    download: bool = True
    """False: a request never downloads this model's files; they must be in the cache already
    (fetched by hand), like `--offline` for this model alone."""


@dataclass(frozen=True)
class VoiceReference:
    """A recording a voice-cloning model imitates (`reference:` of a voice)."""

    audio: FileRef
    """The WAV file: `path:` (relative paths: to the catalog file) or `repo:` + `file:`."""
    text: str | None = None
    """What the recording says, word for word; models that can use it clone more closely."""


@dataclass(frozen=True)
class VoiceSpec:
    """One voice Home Assistant can choose: a model plus speaker and per-voice options."""

    name: str
    model: str
    speaker: str | None = None
    """Speaker passed to the engine when the request names none."""
    speakers: tuple[str, ...] = ()
    """Speakers a request may pick (offered to Home Assistant as the voice's speakers)."""
    languages: tuple[str, ...] = ("en",)
    description: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    """Engine options for this voice, over the model's."""
    text_options: Mapping[str, str] = field(default_factory=dict)
    """Text front end options (`TEXT_OPTIONS`) for this voice, over the model's."""
    reference: VoiceReference | None = None
    """Reference recording of a cloned voice (Qwen3-TTS Base models), else None."""
    source: Path | None = None
    """The catalog file this voice came from (the user's, or the own voices file)."""


@dataclass(frozen=True)
class Catalog:
    """All models and voices, in file order (the first voice is the default)."""

    models: Mapping[str, ModelSpec]
    voices: Mapping[str, VoiceSpec]
    path: Path
    cpu_voice: str | None = None
    """`cpu_voice:`, the default on a machine without a GPU (`for_machine`): one that keeps up
    with real time on a few CPU cores, where the first voice may not."""
    own_path: Path | None = None
    """The user's own voices file merged into this catalog (`merge_own_voices`), if any."""

    @property
    def own_voices(self) -> tuple[str, ...]:
        """Names of the voices that come from the own voices file, in file order."""
        own = self.own_path
        return tuple(n for n, v in self.voices.items() if own is not None and v.source == own)

    @property
    def default_voice(self) -> VoiceSpec:
        """The voice used when a request names none (the first one in the file)."""
        return next(iter(self.voices.values()))

    def with_default_voice(self, name: str) -> "Catalog":
        """The same catalog with voice `name` first (the default for requests naming none)."""
        if name not in self.voices:
            raise CatalogError(
                f"{self.path}: --voice {name!r} is not in the catalog "
                f"(voices: {', '.join(self.voices)})"
            )
        voices = {name: self.voices[name], **self.voices}
        return replace(self, voices=voices)

    def for_machine(self, has_gpu: bool) -> "Catalog":
        """The catalog with the default voice this machine suits: the first voice with a GPU,
        else `cpu_voice` where the catalog names one."""
        if has_gpu or self.cpu_voice is None:
            return self
        return self.with_default_voice(self.cpu_voice)


def load_catalog(path: Path, own: Path | None = None) -> Catalog:
    """Read and validate a catalog file, merged with the user's own voices file `own` when
    given (a missing one has no voices yet)."""
    catalog = parse_catalog(read_yaml(path), path)
    if own is None:
        return catalog
    return merge_own_voices(catalog, read_yaml(own) if own.exists() else None, own)


def read_yaml(path: Path) -> Any:
    """A YAML file's document; `CatalogError` naming the file when unreadable or not YAML."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise CatalogError(f"{path}: cannot read the voice catalog ({err.strerror})") from err
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise CatalogError(f"{path}: not valid YAML: {err}") from err


def parse_catalog(doc: Any, path: Path) -> Catalog:
    """Build a `Catalog` from a parsed YAML document; `path` is named in errors."""
    where = str(path)
    if not isinstance(doc, dict):
        raise CatalogError(f"{where}: expected a mapping with 'models:' and 'voices:'")
    _check_keys(doc, {"models", "voices", "cpu_voice"}, where)
    models_doc = _mapping(doc.get("models"), f"{where}: models")
    voices_doc = _mapping(doc.get("voices"), f"{where}: voices")
    if not voices_doc:
        raise CatalogError(f"{where}: 'voices:' is empty; add at least one voice")

    models = {name: _parse_model(str(name), entry, path) for name, entry in models_doc.items()}
    voices: dict[str, VoiceSpec] = {}
    for name, entry in voices_doc.items():
        voice = _parse_voice(str(name), entry, path, models)
        voices[voice.name] = voice
    cpu_voice = _optional_string(doc.get("cpu_voice"), f"{where}: cpu_voice")
    if cpu_voice is not None and cpu_voice not in voices:
        raise CatalogError(f"{where}: cpu_voice: {cpu_voice!r} is not one of the voices below")
    return Catalog(models=models, voices=voices, path=path, cpu_voice=cpu_voice)


def merge_own_voices(catalog: Catalog, doc: Any, path: Path) -> Catalog:
    """`catalog` with the voices of the user's own voices file `path` (its parsed `doc`; None
    for an empty or missing file) after its own. They speak through `catalog`'s models and may
    not take a name it has; their recordings' paths are relative to `path`."""
    where = str(path)
    doc = {} if doc is None else doc
    if not isinstance(doc, dict):
        raise CatalogError(f"{where}: expected a mapping with 'voices:'")
    _check_keys(doc, {"voices"}, where)
    voices = dict(catalog.voices)
    own_doc = doc.get("voices")
    for name, entry in ({} if own_doc is None else _mapping(own_doc, f"{where}: voices")).items():
        voice = _parse_voice(str(name), entry, path, catalog.models)
        if voice.name in catalog.voices:
            raise CatalogError(
                f"{where}: voices.{name}: {catalog.path} has a voice of that name already; "
                "rename one of the two"
            )
        voices[voice.name] = voice
    return replace(catalog, voices=voices, own_path=path)


def _parse_model(name: str, entry: Any, path: Path) -> ModelSpec:
    where = f"{path}: models.{name}"
    entry = _mapping(entry, where)
    _check_keys(
        entry,
        {"engine", "files", "device", "options", "description", "attribution", "download"},
        where,
    )
    download = entry.get("download", True)
    if not isinstance(download, bool):
        raise CatalogError(f"{where}.download: give true or false, not {download!r}")
    engine = _string(entry.get("engine"), f"{where}.engine")
    files_doc = _mapping(entry.get("files"), f"{where}.files")
    files = {
        str(role): _parse_file_ref(ref, f"{where}.files.{role}", path.parent)
        for role, ref in files_doc.items()
    }
    attribution = None
    if entry.get("attribution") is not None:
        att = _mapping(entry["attribution"], f"{where}.attribution")
        attribution = Attribution(
            name=_string(att.get("name"), f"{where}.attribution.name"),
            url=_string(att.get("url"), f"{where}.attribution.url"),
        )
    options, text_options = _split_options(entry.get("options", {}), f"{where}.options")
    return ModelSpec(
        name=name,
        engine=engine,
        files=files,
        device=_string(entry.get("device", "auto"), f"{where}.device"),
        options=options,
        text_options=text_options,
        description=_optional_string(entry.get("description"), f"{where}.description"),
        attribution=attribution,
        source=path,
        download=download,
    )


def _parse_file_ref(ref: Any, where: str, base_dir: Path) -> FileRef:
    ref = _mapping(ref, where)
    _check_keys(ref, {"repo", "file", "revision", "path"}, where)
    if ("path" in ref) == ("repo" in ref):
        raise CatalogError(f"{where}: give either 'repo:' (Hugging Face) or 'path:' (local)")
    if "path" in ref:
        local = Path(_string(ref["path"], f"{where}.path")).expanduser()
        return FileRef(path=local if local.is_absolute() else base_dir / local)
    return FileRef(
        repo=_string(ref["repo"], f"{where}.repo"),
        file=_optional_string(ref.get("file"), f"{where}.file"),
        revision=_optional_string(ref.get("revision"), f"{where}.revision"),
    )


def _parse_voice(name: str, entry: Any, path: Path, models: Mapping[str, ModelSpec]) -> VoiceSpec:
    """Voice `name` of catalog file `path`, speaking through one of `models`."""
    where = f"{path}: voices.{name}"
    entry = _mapping(entry, where)
    _check_keys(
        entry,
        {"model", "speaker", "speakers", "languages", "description", "options", "reference"},
        where,
    )
    speakers = tuple(_string(s, f"{where}.speakers") for s in _list(entry.get("speakers"), where))
    languages = tuple(
        _string(lang, f"{where}.languages") for lang in _list(entry.get("languages", ["en"]), where)
    )
    if not languages:
        raise CatalogError(f"{where}.languages: list at least one language code")
    speaker = _optional_string(entry.get("speaker"), f"{where}.speaker")
    if speaker is None and speakers:
        speaker = speakers[0]
    options, text_options = _split_options(entry.get("options", {}), f"{where}.options")
    model = _string(entry.get("model"), f"{where}.model")
    if model not in models:
        known = ", ".join(sorted(models)) or "none"
        raise CatalogError(f"{where}.model: unknown model {model!r} (models: {known})")
    return VoiceSpec(
        name=name,
        model=model,
        speaker=speaker,
        speakers=speakers,
        languages=languages,
        description=_optional_string(entry.get("description"), f"{where}.description"),
        options=options,
        text_options=text_options,
        reference=(
            None
            if entry.get("reference") is None
            else _parse_reference(entry["reference"], f"{where}.reference", path.parent)
        ),
        source=path,
    )


def _parse_reference(ref: Any, where: str, base_dir: Path) -> VoiceReference:
    ref = _mapping(ref, where)
    _check_keys(ref, {"path", "repo", "file", "revision", "text"}, where)
    audio = _parse_file_ref({k: v for k, v in ref.items() if k != "text"}, where, base_dir)
    if audio.repo is not None and audio.file is None:
        raise CatalogError(f"{where}: 'repo:' needs 'file:' (the WAV file in that repo)")
    return VoiceReference(audio=audio, text=_optional_string(ref.get("text"), f"{where}.text"))


def _split_options(value: Any, where: str) -> tuple[dict[str, Any], dict[str, str]]:
    """`options:` as (engine options, text front end options), the latter checked."""
    options = dict(_mapping(value, where))
    text_options = {name: options.pop(name) for name in TEXT_OPTIONS if name in options}
    for name, given in text_options.items():
        if given not in TEXT_OPTIONS[name]:
            raise CatalogError(
                f"{where}.{name}: {given!r} is not one of {', '.join(TEXT_OPTIONS[name])}"
            )
    return options, text_options


def _check_keys(doc: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(str(key) for key in doc if key not in allowed)
    if unknown:
        raise CatalogError(
            f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})"
        )


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        raise CatalogError(f"{where}: missing")
    if not isinstance(value, dict):
        raise CatalogError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise CatalogError(f"{where}: expected a list, got {type(value).__name__}")
    return value


def _string(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or value == "":
        raise CatalogError(f"{where}: expected a non-empty string")
    return str(value)


def _optional_string(value: Any, where: str) -> str | None:
    return None if value is None else _string(value, where)
