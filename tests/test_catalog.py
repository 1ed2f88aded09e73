"""The voice catalog (`data/voices.yaml` and its parser) and the command line that finds it."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from wyoming_multitts.__main__ import (
    ARGS_ENV,
    configure_thread_pools,
    parse_settings,
    request_huge_pages,
)
from wyoming_multitts.catalog import (
    DEFAULT_CATALOG,
    Catalog,
    CatalogError,
    FileRef,
    VoiceReference,
    load_catalog,
    parse_catalog,
)
from wyoming_multitts.devices import gpu_expected
from wyoming_multitts.engines import ENGINE_MODULES

CATALOG_PATH = Path("/srv/tts/voices.yaml")
"""Where the catalogs built in these tests pretend to live (named in every error)."""
ENGLISH_REPO = "isaiahbjork/orpheus-3b-0.1-ft-Q4_K_M-GGUF"
ENGLISH_FILE = "orpheus-3b-0.1-ft-q4_k_m.gguf"
SNAC_REPO = "hubertsiuzdak/snac_24khz"
ENGLISH_SPEAKERS = ("tara", "leah", "jess", "leo", "dan", "mia", "zac", "zoe")
"""The Orpheus README's voices, in its order (tara first: the default)."""
QWEN3_REPOS = {
    "qwen3tts-0.6b-customvoice": "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice",
    "qwen3tts-0.6b-customvoice-q4": "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice",
    "qwen3tts-1.7b-customvoice": "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice",
    "qwen3tts-0.6b-base": "Qwen/Qwen3-TTS-12Hz-0.6B-Base",
    "qwen3tts-1.7b-base": "Qwen/Qwen3-TTS-12Hz-1.7B-Base",
}
QWEN3_NATIVE = {
    "vivian": "zh",
    "serena": "zh",
    "uncle_fu": "zh",
    "dylan": "zh",
    "eric": "zh",
    "ryan": "en",
    "aiden": "en",
    "ono_anna": "ja",
    "sohee": "ko",
}
"""The CustomVoice speakers (config.json spk_id) and their native languages (docs/engines.md,
"Qwen3-TTS: releases, speakers and languages")."""
QWEN3_LANGUAGES = {"zh", "en", "ja", "ko", "de", "fr", "ru", "pt", "es", "it"}
WAVTOKENIZER = FileRef(repo="ggml-org/WavTokenizer", file="WavTokenizer-Large-75-F16.gguf")
DAC = FileRef(repo="ibm-research/DAC.speech.v1.0", file="weights_24khz_1.5kbps_v1.0.pth")
"""OuteTTS's vocoders: WavTokenizer for 0.2/0.3, DAC for 1.0."""
OUTETTS10_MODELS = {
    "outetts-1.0-1b-q4": FileRef(
        repo="OuteAI/Llama-OuteTTS-1.0-1B-GGUF", file="Llama-OuteTTS-1.0-1B-Q4_K_M.gguf"
    ),
    "outetts-1.0-0.6b-q4": FileRef(
        repo="OuteAI/OuteTTS-1.0-0.6B-GGUF", file="OuteTTS-1.0-0.6B-Q4_K_M.gguf"
    ),
}


@pytest.fixture(autouse=True)
def no_args_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep a `WYOMING_MULTITTS_ARGS` of the machine running the tests out of them."""
    monkeypatch.delenv(ARGS_ENV, raising=False)


def minimal_doc(**model_changes: Any) -> dict[str, Any]:
    """A valid catalog document: one Orpheus model and one voice, with changes to the model."""
    model: dict[str, Any] = {
        "engine": "orpheus",
        "files": {
            "model": {"repo": ENGLISH_REPO, "file": ENGLISH_FILE},
            "codec": {"repo": SNAC_REPO},
        },
    }
    model.update(model_changes)
    return {
        "models": {"orpheus-3b-q4": model},
        "voices": {"orpheus-tara": {"model": "orpheus-3b-q4", "speaker": "tara"}},
    }


def catalog_error(doc: Any) -> str:
    """The message of the `CatalogError` that parsing `doc` raises."""
    with pytest.raises(CatalogError) as raised:
        parse_catalog(doc, CATALOG_PATH)
    return str(raised.value)


# ---------------------------------------------------------------------------------------------
# The shipped catalog


@pytest.fixture(scope="module")
def shipped() -> Catalog:
    """`data/voices.yaml` as the server loads it."""
    return load_catalog(DEFAULT_CATALOG)


def test_shipped_catalog_default_voice_is_tara(shipped: Catalog) -> None:
    assert shipped.path == DEFAULT_CATALOG
    assert next(iter(shipped.voices)) == "orpheus-tara"
    assert shipped.default_voice.speaker == "tara"


def test_shipped_catalog_english_voices(shipped: Catalog) -> None:
    english = [
        v
        for v in shipped.voices.values()
        if v.languages == ("en",) and shipped.models[v.model].engine == "orpheus"
    ]
    assert [v.name for v in english] == [f"orpheus-{s}" for s in ENGLISH_SPEAKERS]
    assert [v.speaker for v in english] == list(ENGLISH_SPEAKERS)
    model = shipped.models[english[0].model]
    assert {v.model for v in english} == {model.name}
    assert model.engine == "orpheus"
    assert model.device == "auto"
    assert model.files["model"] == FileRef(repo=ENGLISH_REPO, file=ENGLISH_FILE)
    assert model.files["codec"] == FileRef(repo=SNAC_REPO)
    assert model.attribution is not None and model.attribution.name == "canopylabs"


def test_shipped_catalog_engines_are_known(shipped: Catalog) -> None:
    for model in shipped.models.values():
        assert model.engine in ENGINE_MODULES, model.name


def test_shipped_catalog_outetts_models_and_speakers(shipped: Catalog) -> None:
    from wyoming_multitts.engines.outetts.speakers import builtin_speakers

    outetts_models = {
        name: model for name, model in shipped.models.items() if model.engine == "outetts"
    }
    assert set(outetts_models) == {"outetts-0.3-500m-q4", "outetts-0.2-500m-q8", *OUTETTS10_MODELS}
    assert outetts_models["outetts-0.3-500m-q4"].files["model"] == FileRef(
        repo="OuteAI/OuteTTS-0.3-500M-GGUF", file="OuteTTS-0.3-500M-Q4_K_M.gguf"
    )
    for name, model in outetts_models.items():
        vocoder = DAC if name in OUTETTS10_MODELS else WAVTOKENIZER
        assert model.files["vocoder"] == vocoder, name
        assert model.attribution is not None and model.attribution.name == "OuteAI"
    for version, model in (("0.3", "outetts-0.3-500m-q4"), ("0.2", "outetts-0.2-500m-q8")):
        speakers = {v.speaker for v in shipped.voices.values() if v.model == model}
        assert speakers == set(builtin_speakers(version))  # every built-in speaker is a voice


def test_shipped_catalog_outetts_1_0_models_and_speaker(shipped: Catalog) -> None:
    from wyoming_multitts.engines.outetts.speakers10 import builtin_speakers

    assert builtin_speakers() == ("en-female-1-neutral",)
    for name, model_file in OUTETTS10_MODELS.items():
        model = shipped.models[name]
        assert (model.engine, model.device) == ("outetts", "auto")
        assert model.files == {"model": model_file, "vocoder": DAC}
        voices = [v for v in shipped.voices.values() if v.model == name]
        assert [v.speaker for v in voices] == ["en-female-1-neutral"]
        # English first (the speaker's), then the card's languages the front end is checked on
        assert voices[0].languages == ("en", "de", "es", "fr", "it", "ja", "ko", "ru", "zh")
        assert voices[0].options == {}  # the 1.0 defaults: official prompt, sampling, DAC windows


def test_shipped_catalog_multilingual_models(shipped: Catalog) -> None:
    languages = {lang for voice in shipped.voices.values() for lang in voice.languages}
    assert languages == {
        "en",
        "fr",
        "de",
        "ko",
        "hi",
        "zh",
        "es",
        "it",
        "ja",
        "ru",
        "pt",
        "pl",
        "tr",
    }
    for model in shipped.models.values():
        ref = model.files["model"]
        if model.engine in ("qwen3tts", "bark"):
            continue  # a whole repo (tested below; Bark in tests/test_bark.py)
        assert ref.repo is not None and ref.file is not None, model.name
        if ref.repo.startswith("freddyaboulton/"):
            # orpheus-cpp's rule: the lower-cased repo name with -gguf turned into .gguf
            name = ref.repo.split("/")[1].lower()
            assert ref.file == name.removesuffix("-gguf") + ".gguf", model.name
        if model.engine == "orpheus":
            assert model.files["codec"] == FileRef(repo=SNAC_REPO), model.name


def test_shipped_catalog_qwen3tts_models_and_speakers(shipped: Catalog) -> None:
    from wyoming_multitts.engines.qwen3tts.prompt import LANGUAGE_NAMES

    qwen3 = {name: model for name, model in shipped.models.items() if model.engine == "qwen3tts"}
    assert {name: model.files["model"] for name, model in qwen3.items()} == {
        name: FileRef(repo=repo) for name, repo in QWEN3_REPOS.items()
    }
    assert set(LANGUAGE_NAMES) == QWEN3_LANGUAGES
    for name, model in qwen3.items():
        assert model.attribution is not None and model.attribution.name == "Qwen"
        assert model.device == "auto"
        voices = [v for v in shipped.voices.values() if v.model == name]
        if name.endswith("-base"):  # cloning: no reference audio is shipped, so no voices
            assert voices == [], name
            continue
        if name.endswith("-q4"):  # 4 bits: the one voice that keeps up on a CPU, its default
            assert [v.name for v in voices] == [shipped.cpu_voice]
            assert model.options == {"matrix_type": "q4_k"}
            continue
        assert sorted(v.speaker or "" for v in voices) == sorted(QWEN3_NATIVE)
        for voice in voices:
            assert voice.languages[0] == QWEN3_NATIVE[voice.speaker or ""], voice.name
            if len(voice.languages) > 1:  # the model tells the language from the text
                assert set(voice.languages) == QWEN3_LANGUAGES, voice.name
                assert voice.options == {"codec_language": "auto"}, voice.name
            else:  # tagged: Dylan and Eric speak their Chinese dialect
                assert voice.speaker in ("dylan", "eric") and voice.options == {}, voice.name


def test_shipped_catalog_voice_names_are_ascii(shipped: Catalog) -> None:
    for voice in shipped.voices.values():
        assert re.fullmatch(r"[a-z0-9-]+", voice.name), voice.name
        assert voice.speaker and voice.description, voice.name
    assert shipped.voices["orpheus-ko-yuna"].speaker == "유나"
    assert shipped.voices["orpheus-it-giulia"].model == shipped.voices["orpheus-es-javi"].model


# ---------------------------------------------------------------------------------------------
# Parsing and its errors


def test_minimal_catalog_parses() -> None:
    catalog = parse_catalog(minimal_doc(), CATALOG_PATH)
    model = catalog.models["orpheus-3b-q4"]
    assert model.device == "auto" and dict(model.options) == {} and model.source == CATALOG_PATH
    assert catalog.default_voice.languages == ("en",)


def test_text_options_are_kept_apart_from_the_engines() -> None:
    doc = minimal_doc(options={"normalize": "full", "temperature": 0.5})
    doc["voices"]["orpheus-tara"]["options"] = {"emoji": "name", "top_p": 0.9}
    catalog = parse_catalog(doc, CATALOG_PATH)
    model, voice = catalog.models["orpheus-3b-q4"], catalog.voices["orpheus-tara"]
    assert dict(model.options) == {"temperature": 0.5}
    assert dict(model.text_options) == {"normalize": "full"}
    assert dict(voice.options) == {"top_p": 0.9}
    assert dict(voice.text_options) == {"emoji": "name"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"normalize": "yes"}, r"options\.normalize: 'yes' is not one of auto, full, off"),
        ({"emoji": True}, r"options\.emoji: True is not one of drop, name"),
    ],
)
def test_error_for_a_bad_text_option(options: dict[str, Any], message: str) -> None:
    doc = minimal_doc()
    doc["voices"]["orpheus-tara"]["options"] = options
    assert re.search(r"voices\.orpheus-tara\." + message, catalog_error(doc))


def test_relative_path_is_resolved_against_the_catalog_folder() -> None:
    doc = minimal_doc(
        files={"model": {"path": "models/orpheus.gguf"}, "codec": {"path": "/opt/snac"}}
    )
    files = parse_catalog(doc, CATALOG_PATH).models["orpheus-3b-q4"].files
    assert files["model"].path == CATALOG_PATH.parent / "models" / "orpheus.gguf"
    assert files["codec"].path == Path("/opt/snac")


def test_voice_reference_is_a_local_or_hub_file_with_a_transcript() -> None:
    doc = minimal_doc()
    voices = doc["voices"]
    voices["local"] = {"model": "orpheus-3b-q4", "reference": {"path": "refs/alice.wav"}}
    voices["hub"] = {
        "model": "orpheus-3b-q4",
        "reference": {"repo": "me/voices", "file": "bob.wav", "text": "Hello, I am Bob."},
    }
    catalog = parse_catalog(doc, CATALOG_PATH)
    assert catalog.voices["orpheus-tara"].reference is None
    local = catalog.voices["local"].reference
    assert local == VoiceReference(FileRef(path=CATALOG_PATH.parent / "refs" / "alice.wav"))
    hub = catalog.voices["hub"].reference
    assert hub == VoiceReference(FileRef(repo="me/voices", file="bob.wav"), "Hello, I am Bob.")


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ({"text": "hi"}, r"voices\.v\.reference: give either 'repo:' \(Hugging Face\) or 'path:'"),
        ({"repo": "me/voices"}, r"voices\.v\.reference: 'repo:' needs 'file:'"),
        (
            {"path": "a.wav", "txt": "hi"},
            r"voices\.v\.reference: unknown key\(s\) txt \(allowed: file",
        ),
        ({"path": "a.wav", "text": ""}, r"voices\.v\.reference\.text: expected a non-empty string"),
        ("a.wav", r"voices\.v\.reference: expected a mapping, got str"),
    ],
)
def test_error_for_a_bad_voice_reference(reference: Any, message: str) -> None:
    doc = minimal_doc()
    doc["voices"]["v"] = {"model": "orpheus-3b-q4", "reference": reference}
    assert re.search(message, catalog_error(doc))


def test_error_for_a_document_that_is_not_a_mapping() -> None:
    message = catalog_error(["voices"])
    assert str(CATALOG_PATH) in message and "mapping" in message


def test_error_for_an_unknown_top_level_key() -> None:
    doc = minimal_doc()
    doc["speakers"] = {}
    message = catalog_error(doc)
    assert str(CATALOG_PATH) in message and "speakers" in message


def test_error_for_an_unknown_model_key() -> None:
    message = catalog_error(minimal_doc(devcie="cpu"))
    assert str(CATALOG_PATH) in message
    assert "models.orpheus-3b-q4" in message and "devcie" in message


def test_error_for_a_voice_without_a_model() -> None:
    doc = minimal_doc()
    del doc["voices"]["orpheus-tara"]["model"]
    message = catalog_error(doc)
    assert str(CATALOG_PATH) in message and "voices.orpheus-tara.model" in message


def test_error_for_a_voice_naming_an_unknown_model() -> None:
    doc = minimal_doc()
    doc["voices"]["orpheus-tara"]["model"] = "orpheus-8b"
    message = catalog_error(doc)
    assert str(CATALOG_PATH) in message and "voices.orpheus-tara.model" in message
    assert "orpheus-8b" in message and "orpheus-3b-q4" in message


def test_error_for_a_file_with_both_repo_and_path() -> None:
    doc = minimal_doc(
        files={
            "model": {"repo": ENGLISH_REPO, "path": "orpheus.gguf"},
            "codec": {"repo": SNAC_REPO},
        }
    )
    message = catalog_error(doc)
    assert str(CATALOG_PATH) in message and "models.orpheus-3b-q4.files.model" in message


def test_error_for_a_model_that_is_not_a_mapping() -> None:
    doc = minimal_doc()
    doc["models"]["orpheus-3b-q4"] = "orpheus"
    message = catalog_error(doc)
    assert str(CATALOG_PATH) in message and "models.orpheus-3b-q4" in message
    assert "mapping" in message


def test_error_for_empty_voices() -> None:
    doc = minimal_doc()
    doc["voices"] = {}
    message = catalog_error(doc)
    assert str(CATALOG_PATH) in message and "voices" in message


def test_error_for_an_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "voices.yaml"
    with pytest.raises(CatalogError, match=re.escape(str(missing))):
        load_catalog(missing)


def test_error_for_invalid_yaml(tmp_path: Path) -> None:
    path = tmp_path / "voices.yaml"
    path.write_text("models: [unclosed\n", encoding="utf-8")
    with pytest.raises(CatalogError, match="not valid YAML"):
        load_catalog(path)


# ---------------------------------------------------------------------------------------------
# Default voice


def test_with_default_voice_moves_the_voice_first(shipped: Catalog) -> None:
    catalog = shipped.with_default_voice("orpheus-leo")
    assert catalog.default_voice.name == "orpheus-leo"
    assert list(catalog.voices) == ["orpheus-leo"] + [
        v for v in shipped.voices if v != "orpheus-leo"
    ]
    assert catalog.models == shipped.models and catalog.path == shipped.path


def test_without_a_gpu_the_default_is_a_voice_that_keeps_up_on_a_cpu(shipped: Catalog) -> None:
    """Orpheus (the first voice) runs about 4.5x slower than real time on 2 cores: a request
    naming no voice gets the catalog's cpu_voice there, Qwen3-TTS 0.6B in 4 bits."""
    assert shipped.for_machine(has_gpu=True).default_voice.name == "orpheus-tara"
    on_cpu = shipped.for_machine(has_gpu=False)
    assert on_cpu.default_voice.name == shipped.cpu_voice == "qwen3-0b6-ryan-fast"
    model = shipped.models[on_cpu.default_voice.model]
    assert model.engine == "qwen3tts" and model.options["matrix_type"] == "q4_k"
    assert set(on_cpu.voices) == set(shipped.voices)


def test_cpu_voice_must_be_a_voice_of_the_catalog(tmp_path: Path) -> None:
    doc = {
        "cpu_voice": "nobody",
        "models": {"m": {"engine": "orpheus", "files": {"model": {"path": "m.gguf"}}}},
        "voices": {"v": {"model": "m"}},
    }
    with pytest.raises(CatalogError, match="cpu_voice: 'nobody' is not one of the voices"):
        parse_catalog(doc, tmp_path / "voices.yaml")
    assert (
        parse_catalog({**doc, "cpu_voice": None}, tmp_path).for_machine(False).default_voice.name
        == "v"
    )


def test_the_gpu_is_told_from_the_device_and_the_machine() -> None:
    assert not gpu_expected("cpu") and not gpu_expected("htp") and gpu_expected("cuda:1")
    assert gpu_expected(None) == gpu_expected("auto")  # this machine's answer, either way


def test_with_default_voice_rejects_unknown_names(shipped: Catalog) -> None:
    with pytest.raises(CatalogError, match="orpheus-bob") as raised:
        shipped.with_default_voice("orpheus-bob")
    assert str(DEFAULT_CATALOG) in str(raised.value)


# ---------------------------------------------------------------------------------------------
# Command line and WYOMING_MULTITTS_ARGS


def test_defaults_use_the_shipped_catalog() -> None:
    settings = parse_settings([])
    assert settings.uri == "tcp://0.0.0.0:10200"
    assert settings.voices == DEFAULT_CATALOG
    assert settings.zeroconf_name is None and settings.streaming and not settings.offline
    assert settings.download_dir is None and settings.default_voice is None


def test_max_loaded_bytes_takes_decimal_units() -> None:
    assert parse_settings(["--max-loaded-bytes", "8G"]).max_loaded_bytes == 8_000_000_000
    assert parse_settings(["--max-loaded-bytes", "512M"]).max_loaded_bytes == 512_000_000
    with pytest.raises(SystemExit):
        parse_settings(["--max-loaded-bytes", "lots"])


def test_zeroconf_default_name() -> None:
    assert parse_settings(["--zeroconf"]).zeroconf_name == "multitts"
    assert parse_settings(["--zeroconf", "kitchen"]).zeroconf_name == "kitchen"


def test_zeroconf_needs_tcp() -> None:
    with pytest.raises(SystemExit):
        parse_settings(["--uri", "unix:///tmp/tts.sock", "--zeroconf"])


def test_arguments_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ARGS_ENV, "--voice orpheus-leo --unload-after 300 --offline")
    settings = parse_settings(["--no-streaming"])
    assert settings.default_voice == "orpheus-leo"
    assert settings.unload_after == 300.0
    assert settings.offline and not settings.streaming


def test_data_dir_catalog_is_used_without_voices(tmp_path: Path) -> None:
    empty, data = tmp_path / "empty", tmp_path / "data"
    empty.mkdir()
    data.mkdir()
    (data / "voices.yaml").write_text("voices: {}\n", encoding="utf-8")
    settings = parse_settings(["--data-dir", str(empty), "--data-dir", str(data)])
    assert settings.voices == data / "voices.yaml"
    assert settings.download_dir == empty / "huggingface"
    explicit = parse_settings(["--data-dir", str(data), "--voices", "/etc/tts.yaml"])
    assert explicit.voices == Path("/etc/tts.yaml")


def test_thread_pools_get_the_threads_and_keep_the_users_wait_policy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Workers inherit these: OpenMP gets --threads; OMP_WAIT_POLICY stays the user's (PASSIVE
    helps on busy cores and costs 1.5x on idle ones: docs/benchmarks.md)."""
    for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.setenv(name, "unchanged")  # restored afterwards
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    configure_thread_pools(3)
    assert os.environ["OMP_NUM_THREADS"] == "3" and os.environ["OPENBLAS_NUM_THREADS"] == "1"
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, "glibc.malloc.hugetlb=1"),
        ("glibc.malloc.arena_max=2", "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"),
        ("glibc.malloc.hugetlb=0", "glibc.malloc.hugetlb=0"),  # the user's choice stays
    ],
)
def test_workers_ask_for_huge_pages(
    monkeypatch: pytest.MonkeyPatch, before: str | None, after: str
) -> None:
    """Workers inherit GLIBC_TUNABLES: malloc madvises huge pages for the weights llama.cpp
    reads (docs/benchmarks.md, "Huge pages"), added to the user's tunables, never over theirs."""
    if before is None:
        monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    else:
        monkeypatch.setenv("GLIBC_TUNABLES", before)
    request_huge_pages()
    assert os.environ["GLIBC_TUNABLES"] == after  # monkeypatch restores `before` afterwards
