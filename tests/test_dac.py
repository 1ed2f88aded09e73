"""Our DAC codec (OuteTTS 1.0's) against Descript's own package (descript-audio-codec 1.0.0, in the
oracle environment made by script/make-dac-oracle-env) on a tiny random checkpoint in the release
format (tools/modelgen/dac.py), plus its conversion, errors, shapes and streaming."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import pathlib
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open

from tools.modelgen import dac as dac_models
from wyoming_multitts.codecs import dac
from wyoming_multitts.codecs.dac import DacDecoder, load_dac_decoder, receptive_field
from wyoming_multitts.codecs.dac_checkpoint import convert_checkpoint, converted_path
from wyoming_multitts.codecs.dac_encoder import DacEncoder, load_dac_encoder
from wyoming_multitts.errors import ConvertError

from .conftest import oracle_python, run_oracle_script

ROOT = Path(__file__).resolve().parent.parent
ORACLE_VENV = ROOT / "local" / "dac-oracle-venv"
ORACLE_SCRIPT = Path(__file__).resolve().parent / "dac_oracle.py"
ORACLE_FRAMES = 150
"""Code frames the oracle decodes (2 s)."""
ENCODE_SAMPLES = 36_123
"""Audio samples the oracle encodes: not a multiple of the hop, so the padding is exercised."""
THREADS = 2
CPU = torch.device("cpu")

AUDIO_TOLERANCE = 1e-5
"""max |ours - dac| on float32 audio (peak ~0.5), one pass or in DECODE_CHUNK_FRAMES windows.
Measured: 0 (bit-identical: the folded weights are what dac's weight-norm hooks compute)."""
STREAM_TOLERANCE = 1e-5
"""max |stream - one pass| with the receptive field as context (10 frames either side).
Measured: 4.2e-6, float32 rounding (one float32 pass vs float64: 3.0e-6; float64 stream vs
float64 pass: 3e-15)."""
SHORT_CONTEXT = 5
SHORT_CONTEXT_ERROR = 0.19
"""max |stream - one pass| measured with 5 frames of context either side."""


@pytest.fixture(scope="module")
def tiny_pth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dac_models.write_tiny_dac(tmp_path_factory.mktemp("dac-tiny"))


@pytest.fixture(scope="module")
def oracle(tiny_pth: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    out = tmp_path_factory.mktemp("oracle") / "dac.npz"
    return run_oracle_script(
        oracle_python("make-dac-oracle-env", ORACLE_VENV),
        ORACLE_SCRIPT,
        out,
        *(str(tiny_pth), str(out), "--frames", str(ORACLE_FRAMES)),
        *("--samples", str(ENCODE_SAMPLES)),
    )


@pytest.fixture(scope="module")
def decoder(tiny_pth: Path) -> DacDecoder:
    torch.set_num_threads(THREADS)
    return load_dac_decoder(tiny_pth, CPU)


@pytest.fixture(scope="module")
def encoder(tiny_pth: Path) -> DacEncoder:
    return load_dac_encoder(tiny_pth, CPU)


@pytest.fixture(scope="module")
def codes() -> np.ndarray:
    """(2, 150) codes, as the oracle draws them (any codes do for self-consistency)."""
    return np.random.default_rng(0).integers(0, 1024, (2, ORACLE_FRAMES))


def streamed(decoder: DacDecoder, codes: np.ndarray, **options: int) -> np.ndarray:
    """The audio a stream returns when the frames arrive one at a time."""
    stream = decoder.stream(lambda first, end: codes[:, first:end], **options)
    n_frames = codes.shape[1]
    pieces = [piece for n in range(1, n_frames + 1) for piece in stream.push(n)]
    return np.concatenate(pieces + list(stream.finish(n_frames)))


# ----------------------------------------------------------------------------------------------
# Against descript-audio-codec 1.0.0 (the oracle environment)


@pytest.mark.slow
def test_dac_loads_our_file_without_key_differences(oracle: dict[str, np.ndarray]) -> None:
    assert list(oracle["missing_keys"]) == [] and list(oracle["unexpected_keys"]) == []
    assert (int(oracle["sample_rate"]), int(oracle["hop_length"])) == (24_000, 320)


@pytest.mark.slow
def test_decode_matches_dac(decoder: DacDecoder, oracle: dict[str, np.ndarray]) -> None:
    codes, reference = oracle["codes"], oracle["audio"]
    assert reference.shape == (320 * ORACLE_FRAMES - 8,)  # the odd stride's missing sample
    for audio in (decoder.decode(codes), decoder.decode_window(codes)):
        assert audio.dtype == np.float32 and audio.shape == reference.shape
        assert np.abs(audio - reference).max() <= AUDIO_TOLERANCE
    assert 0.05 < reference.std() and np.abs(reference).max() < 0.9  # neither silent nor clipped


@pytest.mark.slow
def test_encode_matches_dac(encoder: DacEncoder, oracle: dict[str, np.ndarray]) -> None:
    codes = encoder.encode(oracle["encode_input"])
    assert codes.shape == (2, math.ceil(ENCODE_SAMPLES / 320)) == oracle["encode_codes"].shape
    assert np.array_equal(codes, oracle["encode_codes"])
    assert all(len(np.unique(row)) > 20 for row in codes)  # a real search, not one code


@pytest.mark.slow
def test_folded_weights_equal_dac_weight_norm(tiny_pth: Path, oracle: dict) -> None:
    """Every weight-normed conv's folded weight is what dac's hook computes before a forward."""
    hooked = {key[len("weight/") :]: oracle[key] for key in oracle if key.startswith("weight/")}
    assert len(hooked) == 64
    with safe_open(str(convert_checkpoint(tiny_pth)), framework="np") as weights:
        for name, weight in hooked.items():
            np.testing.assert_allclose(weights.get_tensor(f"{name}.weight"), weight, atol=1e-7)


# ----------------------------------------------------------------------------------------------
# Conversion to safetensors and its errors


def test_conversion_round_trip(tmp_path: Path) -> None:
    pth = dac_models.write_tiny_dac(tmp_path)
    release = torch.load(pth, weights_only=True)
    out = convert_checkpoint(pth)
    assert out == tmp_path / "dac-tiny-24khz.converted.safetensors"
    with safe_open(str(out), framework="pt") as weights:
        converted = {name: weights.get_tensor(name) for name in weights.keys()}
        metadata = weights.metadata()
    assert json.loads(metadata["kwargs"]) == release["metadata"]["kwargs"]
    state = release["state_dict"]
    stems = {name.removesuffix(".weight_g") for name in state if name.endswith(".weight_g")}
    plain = {name for name in state if not name.endswith((".weight_g", ".weight_v"))}
    assert set(converted) == plain | {f"{stem}.weight" for stem in stems}
    for name in plain:
        assert torch.equal(converted[name], state[name]), name
    for stem in stems:  # g · v / ‖v‖, the norm over all but dim 0, in float64
        g, v = state[f"{stem}.weight_g"].double(), state[f"{stem}.weight_v"].double()
        norm = v.flatten(1).norm(dim=1).view(-1, 1, 1)  # (dim 0, 1, 1)
        torch.testing.assert_close(converted[f"{stem}.weight"].double(), g * v / norm)
    assert not list(tmp_path.glob(".*partial"))


def test_conversion_is_done_once_and_redone_for_a_new_source(tmp_path: Path) -> None:
    pth = dac_models.write_tiny_dac(tmp_path)
    out = convert_checkpoint(pth)
    written = out.stat().st_mtime_ns
    load_dac_decoder(pth, CPU)
    load_dac_encoder(pth, CPU)
    assert out.stat().st_mtime_ns == written  # read from the safetensors, not converted again
    stale = tmp_path / f".{out.name}.1-0a1b2c3d.partial"  # left by a killed conversion
    stale.write_bytes(b"half")
    dac_models.write_dac(pth, dac_models.TINY_DAC, seed=2)  # a changed download
    os.utime(pth, ns=(written + 10**9, written + 10**9))
    with safe_open(str(out), framework="pt") as weights:
        before = weights.get_tensor("decoder.model.0.bias")
    convert_checkpoint(pth)
    with safe_open(str(out), framework="pt") as weights:
        assert not torch.equal(weights.get_tensor("decoder.model.0.bias"), before)
    assert not stale.exists()


def test_truncated_checkpoint_says_download_again(tmp_path: Path) -> None:
    pth = dac_models.write_tiny_dac(tmp_path)
    pth.write_bytes(pth.read_bytes()[: pth.stat().st_size // 2])
    with pytest.raises(ConvertError, match="download it again") as caught:
        load_dac_decoder(pth, CPU)
    assert str(pth) in str(caught.value)
    assert not converted_path(pth).exists() and not list(tmp_path.glob(".*partial"))


def test_what_is_in_the_way_of_the_conversion_is_named_and_kept(tmp_path: Path) -> None:
    """A user's own `X.safetensors` beside `X.pth` is not touched; a file or folder at the
    conversion's own name that this server did not write is named, never replaced."""
    pth = dac_models.write_tiny_dac(tmp_path)
    own = pth.with_suffix(".safetensors")
    own.write_bytes(b"the user's")
    convert_checkpoint(pth)
    assert own.read_bytes() == b"the user's"

    converted_path(pth).unlink()
    converted_path(pth).mkdir()
    with pytest.raises(ConvertError, match="is in the way .*not written by this server"):
        load_dac_decoder(pth, CPU)
    converted_path(pth).rmdir()
    converted_path(pth).write_bytes(own.read_bytes())
    with pytest.raises(ConvertError, match="is in the way .*not written by this server"):
        load_dac_decoder(pth, CPU)
    assert converted_path(pth).read_bytes() == b"the user's"


def test_a_conversion_cut_short_is_converted_again(tmp_path: Path) -> None:
    pth = dac_models.write_tiny_dac(tmp_path)
    out = convert_checkpoint(pth)
    size = out.stat().st_size
    out.write_bytes(out.read_bytes()[:-16])
    assert convert_checkpoint(pth).stat().st_size == size  # written again, whole
    with safe_open(str(out), framework="pt") as weights:
        assert len(list(weights.keys())) > 0
    assert not list(tmp_path.glob(".*partial"))


@pytest.mark.parametrize(
    "content, message",
    [
        ("text", "is not a PyTorch checkpoint"),
        ("state_dict only", "DAC.save writes a dict with state_dict and metadata.kwargs"),
        ("unsafe global", r"safe load refuses \(pathlib.PurePosixPath\)"),
        ("other network", "has no encoder blocks, decoder blocks or codebooks"),
        ("missing", "is missing"),
    ],
)
def test_wrong_file_is_named_with_the_problem(tmp_path: Path, content: str, message: str) -> None:
    pth = tmp_path / "weights.pth"
    kwargs = {"kwargs": {"sample_rate": 24_000}}
    if content == "text":
        pth.write_text("<html>404 Not Found</html>")
    elif content == "state_dict only":
        torch.save({"state_dict": {"w": torch.zeros(1)}}, pth)
    elif content == "unsafe global":
        torch.save({"state_dict": {}, "metadata": {"path": pathlib.PurePosixPath("x")}}, pth)
    elif content == "other network":
        torch.save({"state_dict": {"linear.weight": torch.zeros(2, 2)}, "metadata": kwargs}, pth)
    with pytest.raises(ConvertError, match=message) as caught:
        load_dac_decoder(pth, CPU)
    assert str(pth) in str(caught.value)


def test_metadata_kwargs_disagreeing_with_tensors(tmp_path: Path) -> None:
    pth = dac_models.write_tiny_dac(tmp_path)
    release = torch.load(pth, weights_only=True)
    release["metadata"]["kwargs"]["decoder_dim"] = 64
    del release["metadata"]["kwargs"]["latent_dim"]  # DAC's rule gives 128, as the tensors do
    torch.save(release, pth)
    with pytest.raises(ConvertError, match=r"decoder_dim 64 \(tensors: 32\)\)") as caught:
        load_dac_decoder(pth, CPU)
    assert str(pth) in str(caught.value)


def test_shapes_come_from_the_tensors_not_a_config(tmp_path: Path) -> None:
    """Other dims, rates in another order, 3 codebooks of 64, 16 kHz; a config.json beside the
    file that says otherwise (like the release repo's) is not read."""
    kwargs = dac_models.DacKwargs.build(
        encoder_dim=4,
        encoder_rates=(4, 2, 8, 5),
        decoder_dim=16,
        decoder_rates=(5, 8, 2, 4),
        n_codebooks=3,
        codebook_size=64,
        codebook_dim=4,
    )
    kwargs = dataclasses.replace(kwargs, sample_rate=16_000)
    pth = tmp_path / "other.pth"
    dac_models.write_dac(pth, kwargs, seed=3)
    (tmp_path / "config.json").write_text(
        json.dumps({"decoder_dim": 1536, "decoder_rates": [8, 5, 4, 2], "n_codebooks": 9})
    )
    decoder = load_dac_decoder(pth, CPU)
    assert (decoder.shape.decoder_dim, decoder.shape.decoder_rates) == (16, (5, 8, 2, 4))
    assert (decoder.shape.encoder_dim, decoder.shape.encoder_rates) == (4, (4, 2, 8, 5))
    assert (decoder.shape.latent_dim, decoder.shape.codebook_dims) == (64, (4, 4, 4))
    assert (decoder.sample_rate, decoder.samples_per_frame, decoder.shape.codebook_size) == (
        16_000,
        320,
        64,
    )
    audio = decoder.decode(np.random.default_rng(0).integers(0, 64, (3, 20)))
    assert audio.shape == (20 * 320 - 1 * 8 * 2 * 4,)  # the odd first rate loses 1 sample
    codes = load_dac_encoder(pth, CPU).encode(audio)
    assert codes.shape == (3, 20)


# ----------------------------------------------------------------------------------------------
# Receptive field and streaming


def test_receptive_field_of_released_rates() -> None:
    assert receptive_field((8, 5, 4, 2)) == (10, 10)  # 24 kHz (OuteTTS 1.0)
    assert receptive_field((8, 8, 4, 2)) == (10, 10)  # 44 kHz


def test_receptive_field_is_exact(decoder: DacDecoder, codes: np.ndarray) -> None:
    """In float64, changing the frame `left` frames before frame t (or `right` after) changes t's
    audio, and changing the one beyond leaves it bit-identical."""
    model = copy.deepcopy(decoder).double()
    left, right = decoder.receptive_frames
    frame, spf = 20, decoder.samples_per_frame
    batch = torch.from_numpy(codes[:, :40])[None]  # (1, 2, 40)

    def frame_audio(changed: int | None) -> torch.Tensor:
        inputs = batch.clone()
        if changed is not None:
            inputs[..., changed] = (inputs[..., changed] + 1) % 1024
        with torch.inference_mode():
            return model(inputs)[0, 0, frame * spf : (frame + 1) * spf]

    original = frame_audio(None)
    for reach in (-left, right):
        step = 1 if reach > 0 else -1
        assert torch.equal(frame_audio(frame + reach + step), original)
        assert (frame_audio(frame + reach) - original).abs().max() > 1e-6


def test_stream_with_receptive_context_is_exact(decoder: DacDecoder, codes: np.ndarray) -> None:
    whole = decoder.decode_window(codes)
    audio = streamed(decoder, codes)  # 10 frames either side, windows of 1, 2, 4, 8
    assert audio.shape == whole.shape == (320 * ORACLE_FRAMES - 8,)
    assert np.abs(audio - whole).max() <= STREAM_TOLERANCE


def test_stream_with_short_context_is_approximate(decoder: DacDecoder, codes: np.ndarray) -> None:
    audio = streamed(decoder, codes, left=SHORT_CONTEXT, right=SHORT_CONTEXT)
    error = float(np.abs(audio - decoder.decode_window(codes)).max())
    assert SHORT_CONTEXT_ERROR / 3 < error < 3 * SHORT_CONTEXT_ERROR


def test_decode_in_windows_equals_one_pass(
    decoder: DacDecoder, codes: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dac, "DECODE_CHUNK_FRAMES", 40)  # 4 windows of 40 frames or fewer
    audio = decoder.decode(codes)
    whole = decoder.decode_window(codes)
    assert audio.shape == whole.shape
    assert np.abs(audio - whole).max() <= STREAM_TOLERANCE


def test_stream_needs_lookahead(decoder: DacDecoder) -> None:
    with pytest.raises(ValueError, match="lookahead"):
        decoder.stream(lambda first, end: np.zeros((2, end - first), np.int64), right=0)


def test_codes_and_audio_are_checked(decoder: DacDecoder, encoder: DacEncoder) -> None:
    with pytest.raises(ValueError, match="1 to 2 codebooks"):
        decoder.decode(np.zeros((3, 5), dtype=np.int64))
    with pytest.raises(ValueError, match=r"\[0, 1024\)"):
        decoder.decode(np.full((2, 5), 1024))
    with pytest.raises(ValueError, match="integer array"):
        decoder.decode(np.zeros(5, dtype=np.int64))
    assert decoder.decode(np.zeros((2, 0), dtype=np.int64)).shape == (0,)
    assert decoder.decode(np.zeros((1, 5), dtype=np.int64)).shape == (5 * 320 - 8,)  # codebook 0
    with pytest.raises(ValueError, match="mono float"):
        encoder.encode(np.zeros((1, 320), dtype=np.float32))
    with pytest.raises(ValueError, match="mono float"):
        encoder.encode(np.zeros(320, dtype=np.int16))
