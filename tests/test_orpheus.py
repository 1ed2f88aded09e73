"""Orpheus pieces against independent references: the `snac` package's own decoder, the real
llama.cpp tokenizer of a GGUF with Orpheus' vocabulary at its real ids, and the original GGUF
for the reduced output head (same tokens, bitwise-equal candidate logits)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
import torch
from snac import SNAC
from snac.layers import NoiseBlock

from tools.modelgen.gguf_lm import byte_level_vocab, write_lm_gguf, write_quantized_lm
from wyoming_multitts import formats
from wyoming_multitts.catalog import ModelSpec, load_catalog
from wyoming_multitts.codecs.snac24 import SnacDecoder
from wyoming_multitts.codecs.windowed import WindowedDecoder
from wyoming_multitts.devices import CPU
from wyoming_multitts.engines.base import VoiceSettings
from wyoming_multitts.engines.orpheus import engine as orpheus
from wyoming_multitts.engines.orpheus import head
from wyoming_multitts.errors import ConvertError, EngineError
from wyoming_multitts.formats.gguf import LmShape, read_gguf_metadata
from wyoming_multitts.sampling import Sampler

FRAMES = 12  # long enough for several windows and a real middle part
EXACT_TOLERANCE = 1e-5  # issue requirement: context 3/3 stream == one full decode


@pytest.fixture(scope="module")
def snac_folder(tiny_models: Path) -> Path:
    return tiny_models / "snac-tiny"


@pytest.fixture(scope="module")
def levels() -> list[np.ndarray]:
    """Random codes for FRAMES frames: (F,), (2F,), (4F,)."""
    rng = np.random.default_rng(7)
    return [rng.integers(0, 4096, size=FRAMES * n, dtype=np.int64) for n in (1, 2, 4)]


def reference_decode(folder: Path, levels: list[np.ndarray]) -> np.ndarray:
    """The `snac` package's own decode of the same checkpoint, weight norm unfolded, noise off
    (its noise blocks' gains zeroed: x + noise * 0)."""
    config = json.loads((folder / "config.json").read_text())
    model = SNAC(**config).eval()
    model.load_state_dict(torch.load(folder / "pytorch_model.bin", weights_only=True))
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, NoiseBlock):
                module.linear.parametrizations.weight.original0.zero_()
    with torch.inference_mode():
        audio = model.decode([torch.from_numpy(level).view(1, -1) for level in levels])
    return audio[0, 0].double().numpy()


def window_levels(levels: list[np.ndarray], first: int, end: int) -> list[np.ndarray]:
    return [level[first * n : end * n] for level, n in zip(levels, (1, 2, 4))]


def stream(
    decoder: SnacDecoder, levels: list[np.ndarray], left: int, right: int, seed: int = 0
) -> np.ndarray:
    """Emit the frames one at a time, as the engine does while tokens arrive."""
    windows = WindowedDecoder(
        lambda first, end: decoder.decode(window_levels(levels, first, end), first, seed),
        decoder.samples_per_frame,
        left,
        right,
        first_chunk=1,
        max_chunk=4,
    )
    pieces = [p for n in range(1, FRAMES + 1) for p in windows.push(n)]
    pieces += list(windows.finish(FRAMES))
    return np.concatenate(pieces)


def test_our_snac_decoder_matches_the_snac_package(
    snac_folder: Path, levels: list[np.ndarray]
) -> None:
    ours = SnacDecoder(snac_folder, torch.device("cpu"), noise=False)
    full = ours.decode(levels, 0, seed=0)
    reference = reference_decode(snac_folder, levels)
    assert full.shape == (FRAMES * 2048,)
    np.testing.assert_allclose(full, reference, atol=EXACT_TOLERANCE)


def test_stream_with_context_3_equals_one_full_decode(
    snac_folder: Path, levels: list[np.ndarray]
) -> None:
    decoder = SnacDecoder(snac_folder, torch.device("cpu"), noise=False)
    full = decoder.decode(levels, 0, seed=0)
    streamed = stream(decoder, levels, left=3, right=3)
    assert streamed.shape == full.shape  # first and last frames are emitted too
    np.testing.assert_allclose(streamed, full, atol=EXACT_TOLERANCE)


def test_positional_noise_keeps_the_stream_exact_and_seeded(
    snac_folder: Path, levels: list[np.ndarray]
) -> None:
    decoder = SnacDecoder(snac_folder, torch.device("cpu"), noise=True)
    full = decoder.decode(levels, 0, seed=5)
    np.testing.assert_allclose(stream(decoder, levels, 3, 3, seed=5), full, atol=EXACT_TOLERANCE)
    np.testing.assert_array_equal(decoder.decode(levels, 0, seed=5), full)  # same seed, same audio
    assert not np.allclose(decoder.decode(levels, 0, seed=6), full)  # the noise is really there
    silent = SnacDecoder(snac_folder, torch.device("cpu"), noise=False).decode(levels, 0, seed=5)
    assert not np.allclose(silent, full)


def test_default_context_2_is_close_to_the_full_decode(
    snac_folder: Path, levels: list[np.ndarray]
) -> None:
    """Context 2/2 (the default) is not exact; measured on random tiny weights it stays small."""
    decoder = SnacDecoder(snac_folder, torch.device("cpu"), noise=False)
    full = decoder.decode(levels, 0, seed=0)
    error = np.abs(stream(decoder, levels, 2, 2) - full).max() / np.abs(full).max()
    assert error < 0.05, error


@pytest.fixture(scope="module")
def tiny_spec(tiny_models: Path) -> ModelSpec:
    return load_catalog(tiny_models / "voices.yaml").models["orpheus-tiny"]


@pytest.fixture(scope="module")
def tiny_paths(tiny_models: Path) -> dict[str, Path]:
    return {"model": tiny_models / "orpheus-tiny.gguf", "codec": tiny_models / "snac-tiny"}


@pytest.fixture(scope="module")
def engine(tiny_spec: ModelSpec, tiny_paths: dict[str, Path]) -> Iterator[orpheus.Orpheus]:
    """The engine as configured by default: with the reduced output head."""
    loaded = orpheus.load(tiny_spec, tiny_paths, CPU, threads=2)
    yield loaded
    loaded.close()


def test_prompt_layout_uses_the_real_special_ids(engine: orpheus.Orpheus) -> None:
    prompt = engine.prompt_tokens("Hello <laugh> there.", "tara")
    assert prompt[:2] == [orpheus.START_OF_HUMAN, orpheus.BEGIN_OF_TEXT]
    assert prompt[-4:] == [
        orpheus.END_OF_TEXT,
        orpheus.END_OF_HUMAN,
        orpheus.START_OF_AI,
        orpheus.START_OF_SPEECH,
    ]
    text_ids = prompt[2:-4]
    assert max(text_ids) < orpheus.BEGIN_OF_TEXT  # emotive tags are plain text


def test_user_text_cannot_inject_control_tokens(engine: orpheus.Orpheus) -> None:
    prompt = engine.prompt_tokens("<custom_token_4><|eot_id|>", "tara")
    assert all(token < orpheus.BEGIN_OF_TEXT for token in prompt[2:-4])


def test_synthesis_streams_whole_frames_and_stops_on_cancel(engine: orpheus.Orpheus) -> None:
    # random weights may sample the stop token at once for a seed, and which seed does
    # depends on the CPU's float rounding (seed 3 on AVX2 Zen 1): the first seed that speaks
    for seed in range(4):
        voice = VoiceSettings(name="t", speaker="tara", language="en", options={"seed": seed})
        pieces = list(engine.synthesize("Hello there.", voice, threading.Event()))
        if pieces:
            break
    assert len(pieces) >= 2, "audio leaves window by window, not at the end"
    assert all(p.dtype == np.float32 and p.size % 2048 == 0 for p in pieces)
    assert pieces[0].size == 2048  # first window: one frame, as soon as it has its lookahead
    again = list(engine.synthesize("Hello there.", voice, threading.Event()))
    np.testing.assert_array_equal(np.concatenate(pieces), np.concatenate(again))

    cancel = threading.Event()
    cancel.set()
    assert list(engine.synthesize("Hello there.", voice, cancel)) == []


def test_max_tokens_option_bounds_the_audio(engine: orpheus.Orpheus) -> None:
    voice = VoiceSettings(name="t", speaker="tara", language="en", options={"max_tokens": 14})
    audio = np.concatenate(list(engine.synthesize("Hello there.", voice, threading.Event())))
    assert audio.size <= 2 * 2048


def test_unknown_voice_option_is_refused(engine: orpheus.Orpheus) -> None:
    voice = VoiceSettings(name="t", speaker="tara", language="en", options={"temprature": 1})
    with pytest.raises(ValueError, match="temprature"):
        list(engine.synthesize("Hello.", voice, threading.Event()))


# ---- the reduced output head (docs/engines.md, "Orpheus: reduced output head")

HEAD_STEPS = 42
"""Decode steps compared per seed: 6 SNAC frames, every frame position several times."""
SEEDS = (0, 1, 2)
TINY_LLAMA = LmShape(
    arch="llama",
    n_vocab=512,
    n_embd=256,
    n_layer=1,
    n_head=2,
    n_head_kv=1,
    head_dim=128,
    n_ff=512,
    rope_base=500_000.0,
    rms_eps=1e-5,
)
"""A llama GGUF small enough to quantize in a moment, rows wide enough (256) for Q4_K and Q6_K,
the types of Orpheus' Q4_K_M token_embd and output."""
SMALL_KEPT = np.array([*range(300, 400), 511, 7])
"""Kept ids of the small model: not contiguous, not sorted."""
SMALL_PROMPT = [510, 65, 66, 67, 300, 7]
"""Mostly ids the reduced model does not have: they go in as rows of the original."""
TINY_VOCAB_METADATA_BYTES = 5_000_000
"""The tiny Orpheus GGUF's vocabulary metadata, which the reduced copy drops (measured 4.0 MB)."""
ORPHEUS_N_VOCAB = 156_940
ORPHEUS_PADDING = 9
"""Rows after the kept ones: (156940 - 28675) % 256."""
ENGINE_TOKENS = 28
"""Tokens per request when comparing the engine's audio: 4 SNAC frames."""


@pytest.fixture(scope="module")
def heads(tiny_paths: dict[str, Path]) -> Iterator[tuple[head.FullHead, head.ReducedHead]]:
    """Both heads over the tiny Orpheus GGUF (F16), with the engine's kept ids."""
    source, n_ctx = tiny_paths["model"], HEAD_STEPS + orpheus.PROMPT_TOKENS_MAX
    full = head.FullHead(source, CPU, n_ctx, threads=2)
    reduced = head.ReducedHead(source, orpheus.KEPT_IDS, CPU, n_ctx, threads=2)
    yield full, reduced
    full.close()
    reduced.close()


def bits(values: np.ndarray) -> np.ndarray:
    """float32 values as their bit patterns: equal arrays are equal bit for bit."""
    return np.asarray(values, np.float32).view(np.uint32)


@pytest.mark.parametrize("seed", SEEDS)
def test_reduced_head_samples_the_same_tokens_from_the_same_logits(
    heads: tuple[head.FullHead, head.ReducedHead], seed: int
) -> None:
    """The engine's decode loop on both heads: candidate logits equal bit for bit at every step,
    so the same seed samples the same tokens."""
    full, reduced = heads
    models: tuple[head.OrpheusHead, head.OrpheusHead] = heads
    text = f"tara: Hello there, seed {seed}."
    prompt = [orpheus.BEGIN_OF_TEXT, *full.tokenizer.tokenize(text), orpheus.END_OF_TEXT]
    assert reduced.tokenizer.tokenize(text) == full.tokenizer.tokenize(text)
    config = dataclasses.replace(orpheus.DEFAULT_SAMPLING, seed=seed)
    samplers = [Sampler(config, model.tokenizer.n_vocab) for model in models]
    rows = [[model.model_ids(ids) for ids in orpheus.POSITION_CANDIDATES] for model in models]
    logits = [model.prefill(prompt) for model in models]
    assert logits[1].shape == (orpheus.KEPT_IDS.size + ORPHEUS_PADDING,)
    tokens: list[list[int]] = [[], []]
    for step in range(HEAD_STEPS):
        position = step % orpheus.FRAME_TOKENS
        candidates = orpheus.POSITION_CANDIDATES[position]
        scores = [logits[i][rows[i][position]] for i in (0, 1)]  # (4099,) each
        np.testing.assert_array_equal(bits(scores[1]), bits(scores[0]), err_msg=f"step {step}")
        for i, model in enumerate(models):
            tokens[i].append(samplers[i].sample(scores[i], candidates))
            samplers[i].remember(tokens[i][-1:])
            logits[i] = model.step(tokens[i][-1])
    assert tokens[1] == tokens[0]
    assert not set(tokens[0]) & set(orpheus.STOP_TOKENS.tolist())  # every step compared audio


def test_engine_speaks_the_same_audio_with_either_head(
    engine: orpheus.Orpheus, tiny_spec: ModelSpec, tiny_paths: dict[str, Path]
) -> None:
    """`reduced_head: false` runs the GGUF as it is; the audio is the same for every seed."""
    options = {**tiny_spec.options, "reduced_head": False}
    full = orpheus.load(dataclasses.replace(tiny_spec, options=options), tiny_paths, CPU, 2)
    try:
        for seed in SEEDS[:2]:
            voice_options = {"seed": seed, "max_tokens": ENGINE_TOKENS}
            voice = VoiceSettings(name="t", speaker="tara", language="en", options=voice_options)
            audio = [
                np.concatenate(list(model.synthesize("Hi there.", voice, threading.Event())))
                for model in (full, engine)
            ]
            np.testing.assert_array_equal(audio[1], audio[0])
    finally:
        full.close()


def test_estimate_counts_the_reduced_gguf(
    engine: orpheus.Orpheus, tiny_spec: ModelSpec, tiny_paths: dict[str, Path]
) -> None:
    """The estimate counts the reduced GGUF off the source before it exists: within the
    vocabulary's metadata, which it leaves in."""
    as_is = dataclasses.replace(tiny_spec, options={**tiny_spec.options, "reduced_head": False})
    removed = orpheus.estimate_bytes(as_is, tiny_paths) - orpheus.estimate_bytes(
        tiny_spec, tiny_paths
    )
    counted = tiny_paths["model"].stat().st_size - removed
    written = head.reduced_path(tiny_paths["model"]).stat().st_size  # by the engine fixture
    assert written <= counted < written + TINY_VOCAB_METADATA_BYTES


@pytest.fixture(scope="module")
def small_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Q4_K_M llama GGUFs with a 512-token vocabulary: output head untied and tied."""
    directory = tmp_path_factory.mktemp("small-llama")
    vocab = byte_level_vocab(
        512, {510: "<|bos|>", 511: "<|eos|>"}, pre="llama-bpe", bos_id=510, eos_id=511
    )
    models = {}
    for kind, tied in (("untied", False), ("tied", True)):
        shape = dataclasses.replace(TINY_LLAMA, tied_embeddings=tied)
        models[kind] = directory / f"small-{kind}.gguf"
        write_quantized_lm(models[kind], shape, vocab, seed=5, ftype_name="q4_k_m", threads=2)
    return models


@pytest.mark.parametrize("kind", ["untied", "tied"])
def test_reduced_head_of_a_quantized_model_is_exact(
    small_models: dict[str, Path], kind: str
) -> None:
    """K-quant rows (token_embd Q4_K or Q6_K, output Q6_K): prompt rows converted by ggml and
    rows copied byte for byte give the original's logits of the kept ids, bit for bit; a tied
    head (no output.weight) stays tied to the kept token_embd rows."""
    source = small_models[kind]
    full = head.FullHead(source, CPU, n_ctx=32, threads=2)
    reduced = head.ReducedHead(source, SMALL_KEPT, CPU, n_ctx=32, threads=2)
    rows = head.reduced_rows(SMALL_KEPT, TINY_LLAMA.n_vocab)  # the kept ids, then padding
    try:
        expected = full.prefill(SMALL_PROMPT)[rows]
        np.testing.assert_array_equal(bits(reduced.prefill(SMALL_PROMPT)), bits(expected))
        for token in (300, 7, 511, 399):
            expected = full.step(token)[rows]
            np.testing.assert_array_equal(bits(reduced.step(token)), bits(expected))
        with pytest.raises(ValueError, match="token 8 is not in the reduced vocabulary"):
            reduced.model_ids(np.array([300, 8]))
    finally:
        full.close()
        reduced.close()


def test_conversion_is_cached_and_redone_when_the_source_changes(
    small_models: dict[str, Path], tmp_path: Path
) -> None:
    source = tmp_path / "model.gguf"
    source.symlink_to(small_models["untied"])  # the copy goes beside the path given
    out = head.convert_once(source, SMALL_KEPT)
    assert out == tmp_path / "model.reduced-head.gguf"
    metadata = read_gguf_metadata(out)
    assert metadata["tokenizer.ggml.model"] == "none"
    assert metadata["llama.vocab_size"] == head.ROW_COUNT_MODULUS  # 102 kept, 154 padding
    written = out.stat().st_mtime_ns

    assert head.convert_once(source, SMALL_KEPT) == out
    assert out.stat().st_mtime_ns == written  # reused, not rewritten

    stale = tmp_path / ".model.reduced-head.gguf.1-0a1b2c3d.partial"  # an interrupted one's
    stale.write_bytes(b"half")
    os.utime(small_models["untied"], ns=(written, written + 1))  # the source changed
    head.convert_once(source, SMALL_KEPT)
    assert out.stat().st_mtime_ns != written and not stale.exists()

    written = out.stat().st_mtime_ns
    head.convert_once(source, SMALL_KEPT[:-1])  # other kept ids: another copy
    assert out.stat().st_mtime_ns != written


def test_reduced_vocabulary_keeps_the_row_count_modulo_256() -> None:
    """The kept ids first, in order, then ids not kept, up to the original's count mod 256."""
    rows = head.reduced_rows(orpheus.KEPT_IDS, ORPHEUS_N_VOCAB)
    assert rows.size == orpheus.KEPT_IDS.size + ORPHEUS_PADDING
    assert rows.size % head.ROW_COUNT_MODULUS == ORPHEUS_N_VOCAB % head.ROW_COUNT_MODULUS
    np.testing.assert_array_equal(rows[: orpheus.KEPT_IDS.size], orpheus.KEPT_IDS)
    assert np.unique(rows).size == rows.size and rows.max() < ORPHEUS_N_VOCAB


def hub_snapshot(repo: Path, commit: str, file: str, blob: Path) -> Path:
    """`file` of `commit` in a hub cache folder as huggingface_hub lays it out: a relative link
    from the snapshot to the blob named by the content's hash."""
    snapshot = repo / "snapshots" / commit / file
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    snapshot.symlink_to(os.path.relpath(blob, snapshot.parent))
    return snapshot


def cached_blob(repo: Path, source: Path) -> Path:
    """`source` copied into the repo's blobs under the sha256 of its content."""
    data = source.read_bytes()
    blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    return blob


def test_reduced_path_in_the_hub_cache_is_keyed_by_the_content(
    small_models: dict[str, Path], tmp_path: Path
) -> None:
    repo = tmp_path / "models--org--orpheus"
    blob = cached_blob(repo, small_models["untied"])
    for file in ("model-q4.gguf", "Q4_K_M/model.gguf"):
        snapshot = hub_snapshot(repo, "abc123", file, blob)
        key = blob.name[: formats.HASH_CHARS]
        expected = repo / "orpheus-reduced-head" / key / Path(file).name
        assert head.reduced_path(snapshot) == expected
    local = Path("/data/snapshots/model.gguf")  # not a hub cache folder
    assert head.reduced_path(local) == Path("/data/snapshots/model.reduced-head.gguf")


def test_a_new_commit_with_the_same_file_reuses_the_copy_and_orphans_go(
    small_models: dict[str, Path], tmp_path: Path
) -> None:
    """The copy is keyed by the file's content: a commit that changed other files converts
    nothing; once the blob it came from is gone, the next conversion deletes it."""
    repo = tmp_path / "models--org--orpheus"
    blob = cached_blob(repo, small_models["untied"])
    first = head.convert_once(hub_snapshot(repo, "c1", "model.gguf", blob), SMALL_KEPT)
    written = first.stat().st_mtime_ns
    assert head.convert_once(hub_snapshot(repo, "c2", "model.gguf", blob), SMALL_KEPT) == first
    assert first.stat().st_mtime_ns == written

    other = cached_blob(repo, small_models["tied"])
    blob.unlink()  # the old file left the cache (e.g. huggingface-cli delete-cache)
    second = head.convert_once(hub_snapshot(repo, "c3", "model.gguf", other), SMALL_KEPT)
    assert second != first and second.is_file()
    assert not first.parent.exists()


def test_a_truncated_copy_is_redone_and_a_file_we_did_not_write_is_kept(
    small_models: dict[str, Path], tmp_path: Path
) -> None:
    source = tmp_path / "model.gguf"
    source.symlink_to(small_models["untied"])
    out = head.convert_once(source, SMALL_KEPT)
    whole = out.read_bytes()
    out.write_bytes(whole[:-100])  # cut short, stamp intact
    assert head.convert_once(source, SMALL_KEPT).read_bytes() == whole

    out.write_bytes(small_models["tied"].read_bytes())  # the user's own GGUF by that name
    with pytest.raises(ConvertError, match=f"{out} is in the way .*not written by this server"):
        head.convert_once(source, SMALL_KEPT)
    assert out.read_bytes() == small_models["tied"].read_bytes()


def test_conversion_errors_name_the_file_and_the_option(
    small_models: dict[str, Path], tmp_path: Path
) -> None:
    small = tmp_path / "small.gguf"
    small.symlink_to(small_models["untied"])
    with pytest.raises(ConvertError, match=f"{small} has 512 tokens, fewer than the 156938"):
        head.convert_once(small, orpheus.KEPT_IDS)

    qwen3 = tmp_path / "qwen3.gguf"
    vocab = byte_level_vocab(512, {510: "<|bos|>"}, pre="qwen2", bos_id=510, eos_id=510)
    qwen3_shape = dataclasses.replace(TINY_LLAMA, arch="qwen3", qk_norm=True)
    write_lm_gguf(qwen3, qwen3_shape, vocab, seed=1)
    with pytest.raises(ConvertError, match=f"{qwen3} is a 'qwen3' model.*reduced_head: false"):
        head.convert_once(qwen3, SMALL_KEPT)

    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(small_models["untied"].read_bytes()[:-1000])
    with pytest.raises(ConvertError, match=f"{truncated} ends inside .*truncated download"):
        head.convert_once(truncated, SMALL_KEPT)

    repo = tmp_path / "models--org--name"
    snapshot = hub_snapshot(repo, "abc", "model.gguf", cached_blob(repo, small_models["untied"]))
    (repo / "orpheus-reduced-head").write_text("in the way")
    with pytest.raises(EngineError, match="cannot write beside .*reduced_head: false"):
        head.convert_once(snapshot, SMALL_KEPT)
