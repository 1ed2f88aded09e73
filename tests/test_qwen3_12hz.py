"""Our Qwen3-TTS 12 Hz decoder against the official one (qwen-tts 0.1.1) on a tiny random speech
tokenizer that qwen-tts itself builds and saves (`tests/qwen3_12hz_oracle.py`, run by the oracle
venv's python), plus its receptive field and streaming."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from wyoming_multitts.codecs import qwen3_12hz
from wyoming_multitts.codecs.qwen3_12hz import (
    QWEN3_12HZ_DECODER,
    Attention,
    Qwen3Codec12Hz,
    conv1d_as_matmul,
    conv_transpose1d_as_matmul,
    load_qwen3_codec,
    receptive_field,
)
from wyoming_multitts.errors import VoiceError

from .conftest import missing_prerequisite

ROOT = Path(__file__).resolve().parent.parent
ORACLE_PYTHON = ROOT / "local" / "qwen-tts-venv" / "bin" / "python"
MAKE_ORACLE_ENV = ROOT / "script" / "make-qwen-tts-oracle-env"
ORACLE_SCRIPT = ROOT / "tests" / "qwen3_12hz_oracle.py"
ORACLE_TIMEOUT = 300
"""Seconds for the oracle run (about 8 s here: importing qwen_tts and transformers dominates)."""
THREADS = 2

TINY_RECEPTIVE = (42, 10)
"""The oracle's default decoder (2 attention layers, window 16): 2 + 2·15 + 10 frames, 10 of them
after the transformer."""
TOLERANCE = 1e-6
"""max |ours - official| allowed on float32 audio (std 0.03, peak 0.24). Measured: whole decode vs
`model.decoder(codes)` 3.0e-8; streaming vs the same 6.0e-8, with carried state or with
left = receptive_frames, windows of 1 … 8 or 4 … 32 frames, and after 20 or 100 context frames;
our 25-frame windows of 300 frames vs the official `chunked_decode` 4.5e-8 (rounding only)."""
SHORT_CONTEXT = 25
"""The official chunked_decode's left context (frames)."""
SHORT_CONTEXT_ERROR = 1.8e-4
"""max |stream(left=25) - whole decode| measured on the oracle's audio (official chunked_decode
vs its own whole decode: 9.5e-5, one chunk boundary). Errors by left context, windows of 8:
0 → 4.6e-2, 10 → 1.5e-3, 20 → 3.0e-4, 25 → 1.8e-4, 30 → 2.2e-5, 36 → 9e-8 (rounding): the far
end of the receptive field is weak with these weights, but only 42 frames is exact by design."""


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with speech_tokenizer/ and reference.npz made by the official package."""
    if not ORACLE_PYTHON.exists():
        if not MAKE_ORACLE_ENV.exists():
            missing_prerequisite(
                f"no qwen-tts oracle venv at {ORACLE_PYTHON.parent.parent} and no "
                f"{MAKE_ORACLE_ENV.relative_to(ROOT)} to make one"
            )
        subprocess.run([str(MAKE_ORACLE_ENV)], check=True, timeout=3600)
    folder = tmp_path_factory.mktemp("qwen3-12hz")
    done = subprocess.run(
        [str(ORACLE_PYTHON), str(ORACLE_SCRIPT), str(folder)],
        capture_output=True,
        text=True,
        timeout=ORACLE_TIMEOUT,
    )
    if done.returncode != 0:
        pytest.fail(f"{ORACLE_SCRIPT.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return folder


@pytest.fixture(scope="module")
def reference(oracle: Path) -> dict[str, np.ndarray]:
    with np.load(oracle / "reference.npz") as data:
        return {key: data[key] for key in data.files}


@pytest.fixture(scope="module")
def codec(oracle: Path) -> Qwen3Codec12Hz:
    torch.set_num_threads(THREADS)
    return load_qwen3_codec(oracle / "speech_tokenizer", torch.device("cpu"))


def streamed(
    codec: Qwen3Codec12Hz, codes: np.ndarray, left: int | None = None, **options: int
) -> np.ndarray:
    """The audio a stream returns when the frames arrive one at a time."""
    decoder = codec.stream(lambda first, end: codes[first:end], left, **options)
    pieces = [piece for n in range(1, len(codes) + 1) for piece in decoder.push(n)]
    pieces += list(decoder.finish(len(codes)))
    return np.concatenate(pieces)


def test_receptive_field_of_released_decoder() -> None:
    # 8 layers × (72 - 1) frames of attention, 2 frames of pre-conv, 10 of convolutions after
    assert receptive_field(QWEN3_12HZ_DECODER) == (580, 10)


@pytest.mark.slow
def test_decode_matches_official(codec: Qwen3Codec12Hz, reference: dict[str, np.ndarray]) -> None:
    codes, full = reference["codes"], reference["full"]
    audio = codec.decode(codes)
    assert audio.dtype == np.float32
    assert audio.shape == (len(codes) * 1920,) == full.shape
    assert (codec.samples_per_frame, codec.sample_rate) == (1920, 24_000)
    assert np.abs(audio).max() <= 1.0
    assert np.abs(audio - full).max() <= TOLERANCE


@pytest.mark.parametrize("dilation", [1, 3])
def test_conv1d_as_matmul_equals_torchs(dilation: int) -> None:
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(12, 20, 7, dilation=dilation).double()
    x = torch.randn(2, 12, 40, dtype=torch.float64)
    with torch.inference_mode():
        assert torch.allclose(conv1d_as_matmul(conv, x), conv(x), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("kernel", "stride"), [(16, 8), (10, 5), (2, 2)])
def test_conv_transpose1d_as_matmul_equals_torchs(kernel: int, stride: int) -> None:
    torch.manual_seed(0)
    conv = torch.nn.ConvTranspose1d(12, 20, kernel, stride=stride).double()
    x = torch.randn(2, 12, 9, dtype=torch.float64)
    with torch.inference_mode():
        ours = conv_transpose1d_as_matmul(conv, x)
        assert ours.shape == (2, 20, (9 - 1) * stride + kernel)
        assert torch.allclose(ours, conv(x), rtol=0, atol=1e-12)


@pytest.mark.slow
def test_large_convolutions_as_matmul_match_official(
    oracle: Path, reference: dict[str, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every eligible convolution of the tiny decoder in matrix-product form (at full size only
    the two largest are): whole decode and stream still match the official decoder."""
    monkeypatch.setattr(qwen3_12hz, "MATMUL_CONV_WEIGHTS", 0)
    codec = load_qwen3_codec(oracle / "speech_tokenizer", torch.device("cpu"))
    as_matmul = [m for m in codec.modules() if getattr(m, "_as_matmul", False)]
    assert len(as_matmul) > 10  # every ungrouped conv and transposed conv
    codes, full = reference["codes"], reference["full"]
    assert np.abs(codec.decode(codes) - full).max() <= TOLERANCE
    assert np.abs(streamed(codec, codes[:40]) - full[: 40 * 1920]).max() <= TOLERANCE


@pytest.mark.slow
def test_decode_with_context(codec: Qwen3Codec12Hz, reference: dict[str, np.ndarray]) -> None:
    codes, full = reference["codes"], reference["full"]
    context = 77
    audio = codec.decode(codes, context=context)
    assert audio.shape == ((len(codes) - context) * 1920,)
    assert np.abs(audio - full[context * 1920 :]).max() <= TOLERANCE


@pytest.mark.slow
def test_official_chunking_reproduced(
    codec: Qwen3Codec12Hz, reference: dict[str, np.ndarray]
) -> None:
    """Windows of 300 frames with 25 frames of context are what `chunked_decode` does."""
    chunk = int(reference["chunk_size"])
    audio = streamed(
        codec,
        reference["codes"],
        left=int(reference["left_context"]),
        first_chunk=chunk,
        max_chunk=chunk,
    )
    assert np.abs(audio - reference["chunked"]).max() <= TOLERANCE


@pytest.mark.slow
@pytest.mark.parametrize(
    "left, chunks", [(None, (1, 8)), (None, (4, 32)), (TINY_RECEPTIVE[0], (4, 32))]
)
def test_stream_is_exact(
    codec: Qwen3Codec12Hz,
    reference: dict[str, np.ndarray],
    left: int | None,
    chunks: tuple[int, int],
) -> None:
    """Carried state (left None, the default) and receptive_frames of context re-decoded per
    window both equal one whole decode, with windows of 1, 2, 4, 8, 8, … or 4, 8, 16, 32, …"""
    assert (codec.receptive_frames, codec.conv_context_frames) == TINY_RECEPTIVE
    audio = streamed(
        codec, reference["codes"], left=left, first_chunk=chunks[0], max_chunk=chunks[1]
    )
    assert audio.shape == reference["full"].shape
    assert np.abs(audio - reference["full"]).max() <= TOLERANCE


@pytest.mark.slow
@pytest.mark.parametrize("start", [20, 100])
def test_stream_after_context_frames_is_exact(
    codec: Qwen3Codec12Hz, reference: dict[str, np.ndarray], start: int
) -> None:
    """A clone's reference frames (the first `start`) only prime the state; 100 is beyond the
    receptive field, so priming reads just the last receptive_frames of them."""
    audio = streamed(codec, reference["codes"], start=start, first_chunk=4, max_chunk=32)
    assert np.abs(audio - reference["full"][start * codec.samples_per_frame :]).max() <= TOLERANCE


@pytest.mark.slow
def test_stream_state_keeps_only_what_later_frames_read(
    codec: Qwen3Codec12Hz, reference: dict[str, np.ndarray]
) -> None:
    """Steps each layer keeps after a long context (positions for attention, samples else)."""
    state = codec.prime(reference["codes"][:300])
    held = {
        name: state.held(module, -2 if isinstance(module, Attention) else -1)
        for name, module in codec.named_modules()
    }
    window = codec.config.sliding_window
    for i in range(codec.config.num_hidden_layers):
        assert held[f"pre_transformer.layers.{i}.self_attn"] == window - 1  # the KV cache
    assert held["pre_conv"] == 2  # kernel 3
    assert held["upsample.0.0"] == 0  # transposed, kernel = stride 2
    assert held["upsample.0.1.dwconv"] == 6  # kernel 7
    assert held["decoder.0"] == 6  # kernel 7
    assert held["decoder.1.block.1"] == 1  # transposed, kernel 16, stride 8: one input before
    assert held["decoder.1.block.4.conv1"] == 6 * 9  # kernel 7, dilation 9
    assert held["decoder.1.block.4.conv2"] == 0  # kernel 1
    assert held["decoder.6"] == 6  # the last conv, kernel 7


@pytest.mark.slow
def test_stream_with_short_context_is_approximate(
    codec: Qwen3Codec12Hz, reference: dict[str, np.ndarray]
) -> None:
    audio = streamed(codec, reference["codes"], left=SHORT_CONTEXT)
    error = float(np.abs(audio - reference["full"]).max())
    assert 100 * TOLERANCE < error < 3 * SHORT_CONTEXT_ERROR


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["whole", "convolutions"])
def test_receptive_field_is_exact(codec: Qwen3Codec12Hz, stage: str) -> None:
    """In float64, changing the frame receptive_frames before frame t changes t's first sample and
    changing the one before that leaves it bit-identical (likewise for the convolution stack)."""
    model = copy.deepcopy(codec).double()
    frame, reach = 60, codec.receptive_frames if stage == "whole" else codec.conv_context_frames
    sample = frame * codec.samples_per_frame
    config = codec.config
    run: Callable[[torch.Tensor], torch.Tensor]
    rng = np.random.default_rng(1)
    if stage == "whole":
        shape = (1, config.num_quantizers, frame + 1)
        codes = torch.from_numpy(rng.integers(0, config.codebook_size, shape))  # (1, Q, T)
        run = model
    else:
        shape = (1, config.latent_dim, frame + 1)
        codes = torch.from_numpy(rng.standard_normal(shape))  # (1, latent_dim, T) float64
        run = model.synthesize

    def first_sample(changed: int) -> float:
        inputs = codes.clone()
        if stage == "whole":
            inputs[..., changed] = (inputs[..., changed] + 1) % config.codebook_size
        else:
            inputs[..., changed] = 0.0
        with torch.inference_mode():
            return float(run(inputs)[0, 0, sample])

    with torch.inference_mode():
        original = float(run(codes)[0, 0, sample])
    assert first_sample(frame - reach - 1) == original
    assert abs(first_sample(frame - reach) - original) > 1e-14


@pytest.mark.slow
def test_codes_are_checked(codec: Qwen3Codec12Hz) -> None:
    with pytest.raises(ValueError, match="4 codes per frame"):
        codec.decode(np.zeros((3, 16), dtype=np.int64))
    with pytest.raises(ValueError, match=r"\[0, 32\)"):
        codec.decode(np.full((3, 4), 32))
    assert codec.decode(np.zeros((0, 4), dtype=np.int64)).shape == (0,)


@pytest.mark.slow
def test_decoder_only_file_loads(oracle: Path, tmp_path: Path) -> None:
    """Only `decoder.*` is read: a file without the encoder (or its input projections) loads."""
    state = load_file(oracle / "speech_tokenizer" / "model.safetensors")
    encode_only = (
        "decoder.quantizer.rvq_first.input_proj.weight",
        "decoder.quantizer.rvq_rest.input_proj.weight",
    )
    kept = {k: v for k, v in state.items() if k.startswith("decoder.") and k not in encode_only}
    assert len(kept) == len(state) - len(encode_only) - 57  # 57 encoder tensors
    folder = tmp_path / "lite"
    folder.mkdir()
    (folder / "config.json").write_bytes((oracle / "speech_tokenizer" / "config.json").read_bytes())
    save_file(kept, folder / "model.safetensors")
    load_qwen3_codec(folder, torch.device("cpu"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "change, message",
    [
        ("drop", "missing decoder.pre_conv.conv.bias, unexpected none"),
        ("add", "missing none, unexpected decoder.pre_conv.extra"),
        ("reshape", "tensor decoder.pre_conv.conv.bias has shape \\(3,\\)"),
    ],
)
@pytest.mark.slow
def test_wrong_keys_name_file_and_key(
    oracle: Path, tmp_path: Path, change: str, message: str
) -> None:
    state = load_file(oracle / "speech_tokenizer" / "model.safetensors")
    if change == "drop":
        del state["decoder.pre_conv.conv.bias"]
    elif change == "add":
        state["decoder.pre_conv.extra"] = torch.zeros(1)
    else:
        state["decoder.pre_conv.conv.bias"] = torch.zeros(3)
    (tmp_path / "config.json").write_bytes(
        (oracle / "speech_tokenizer" / "config.json").read_bytes()
    )
    save_file(state, tmp_path / "model.safetensors")
    with pytest.raises(VoiceError, match=message) as caught:
        load_qwen3_codec(tmp_path, torch.device("cpu"))
    assert str(tmp_path / "model.safetensors") in str(caught.value)
