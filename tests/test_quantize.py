"""`formats.ggml.ggml_quantize`: llama.cpp's own quantizer, read back by gguf-py's independent numpy
dequantizer, for the block types the Qwen3-TTS conversion writes."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

pytest.importorskip("llama_cpp")
from wyoming_multitts.formats.ggml import ggml_quantize  # noqa: E402  # needs llama_cpp

QuantType = gguf.GGMLQuantizationType
SUPER_BLOCK = 256
"""Values per k-quant block (QK_K)."""
ERROR_BOUNDS = {
    QuantType.Q4_K: (32, 1 / 8),
    QuantType.Q6_K: (16, 1 / 40),
}
"""Sub-block size, and the largest |error| as a share of the 256-block's max |value|.

Q4_K (4.5 bits a weight): each 32-value sub-block maps [min(0, min), max] onto 4-bit levels
0 … 15, so its step is at most 2 max|x| / 15 and rounding errs by half a step, max|x| / 15.
The 6-bit sub-block scales and minimums are rounded to 1/126 of the largest: up to 15 levels
of 2 max|x| / 15 / 126 plus max|x| / 126, max|x| / 42 in all: 1/15 + 1/42 ≈ 0.091 < 1/8.
Q6_K (6.56 bits): each 16-value sub-block has levels -32 … 31 at a step of its max|x| / 32,
half a step max|x| / 64, and its 8-bit scale is rounded to 1/256 of the largest, up to 32
levels of max|x| / 32 / 256: 1/64 + 1/256 ≈ 0.0195 < 1/40. Both quantizers search for the
scale of least squared error, so a block may trade its extremes for its mean: measured 0.071
and 0.017 here, up to 0.10 and 0.020 on other uniform rows."""
MSE_MARGIN = 1.1
"""Each row's mean square error against plain rounding's (step² / 12 a value): measured at most
0.83 (Q4_K) and 0.99 (Q6_K, uniform rows); the margin covers the scales' own rounding."""
SCALES = (1e-2, 1e-1, 1.0, 1e2)
"""Row scales of the test values: the weights' range. Far smaller values (max|x| under ~1e-3)
lose precision to the fp16 super-scales of both formats (Q6_K's for max|x| = 1e-3 is
1e-3 / 4096, subnormal in fp16): a property of the file format, not of the quantizer."""


def _values(rng: np.random.Generator) -> np.ndarray:
    """(rows, 1024) float32: Gaussian, uniform, heavy-tailed and positive rows at each scale,
    a few outliers 100x, and a row of zeros (the predictor's placeholder embedding)."""
    n = 4 * SUPER_BLOCK
    kinds = [
        rng.standard_normal((4, n)),
        rng.uniform(-1, 1, (4, n)),
        rng.laplace(size=(4, n)),
        rng.uniform(0, 1, (4, n)),
    ]
    rows = np.concatenate([kind * scale for kind in kinds for scale in SCALES])
    rows[::5, ::97] *= 100  # (rows, n): outliers in every fifth row
    return np.concatenate([rows, np.zeros((1, n))]).astype(np.float32)


@pytest.mark.parametrize("quant", list(ERROR_BOUNDS), ids=lambda quant: quant.name)
def test_k_quants_read_back_within_their_rounding(quant: QuantType) -> None:
    values = _values(np.random.default_rng(0))
    raw = ggml_quantize(int(quant), values)  # (rows, bytes per row) uint8
    block_values, block_bytes = gguf.GGML_QUANT_SIZES[quant]
    assert block_values == SUPER_BLOCK
    assert raw.shape == (len(values), values.shape[1] // SUPER_BLOCK * block_bytes)
    decoded = gguf.quants.dequantize(raw, quant).astype(np.float64)  # (rows, n)
    error = decoded - values
    assert np.all(decoded[-1] == 0)  # zeros stay zeros

    sub_block, bound = ERROR_BOUNDS[quant]
    blocks = values.astype(np.float64).reshape(-1, SUPER_BLOCK)  # (blocks, 256)
    worst = np.abs(error).reshape(-1, SUPER_BLOCK).max(axis=1)
    assert np.all(worst <= bound * np.abs(blocks).max(axis=1))

    # each row's mean square error about that of rounding every value to its sub-block's grid
    # (an error uniform over a step: step² / 12), the steps from the values in float64
    subs = blocks.reshape(-1, sub_block)  # (sub-blocks, sub_block)
    if quant == QuantType.Q4_K:
        steps = (subs.max(axis=1) - np.minimum(subs.min(axis=1), 0)) / 15
    else:
        steps = np.abs(subs).max(axis=1) / 32
    rounding = (steps**2 / 12).reshape(len(values), -1).mean(axis=1)  # (rows,)
    assert np.all(np.mean(error**2, axis=1) <= MSE_MARGIN * rounding)


@pytest.mark.parametrize("quant", [QuantType.Q8_0, QuantType.BF16], ids=lambda quant: quant.name)
def test_bytes_equal_gguf_py(quant: QuantType) -> None:
    """The types gguf-py's numpy can quantize come out byte for byte the same from ggml (one
    quantizer for the conversion, and its earlier Q8_0 files stay valid)."""
    values = _values(np.random.default_rng(1))
    assert np.array_equal(ggml_quantize(int(quant), values), gguf.quants.quantize(values, quant))


@pytest.mark.parametrize(
    ("quant", "width", "message"),
    [
        (QuantType.Q4_K, 384, r"a row of 384 is not whole blocks of 256 \(q4_K\)"),
        (QuantType.Q8_K, 256, r"cannot quantize weights to q8_K"),
        (QuantType.IQ2_XXS, 256, r"cannot quantize weights to iq2_xxs"),
    ],
)
def test_what_ggml_would_abort_on_is_a_value_error(
    quant: QuantType, width: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ggml_quantize(int(quant), np.zeros((2, width), np.float32))
