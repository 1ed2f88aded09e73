"""The streaming GGUF writer: float tensors as they are, quantized ones block by block."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest

from wyoming_multitts.formats.gguf import GgufTensor, write_gguf

Q8_0 = gguf.GGMLQuantizationType.Q8_0
Q8_0_TOLERANCE = 1 / 254
"""Q8_0 rounds each value to a step of its 32-block's max / 127: half a step at most."""


def _no_metadata(writer: gguf.GGUFWriter) -> None:
    writer.add_name("test")


def test_float_and_quantized_tensors_read_back(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    values = {name: rng.standard_normal((3, 64)).astype(np.float32) for name in "abcd"}
    kinds = {"a": (np.float32, None), "b": (np.float16, None), "c": (np.float32, Q8_0)}
    kinds["d"] = (np.float32, gguf.GGMLQuantizationType.BF16)
    path = tmp_path / "t.gguf"
    tensors = [
        GgufTensor(name, (3, 64), dtype, lambda name=name: values[name], quant)
        for name, (dtype, quant) in kinds.items()
    ]
    write_gguf(path, "llama", _no_metadata, tensors)
    read = {tensor.name: tensor for tensor in gguf.GGUFReader(path).tensors}
    assert [read[name].tensor_type.name for name in "abcd"] == ["F32", "F16", "Q8_0", "BF16"]
    assert np.array_equal(read["a"].data, values["a"])
    assert np.array_equal(read["b"].data, values["b"].astype(np.float16))
    q8 = gguf.quants.dequantize(read["c"].data, Q8_0)  # (3, 64) float32
    blocks = np.abs(values["c"]).reshape(-1, 32).max(axis=1).repeat(32).reshape(3, 64)
    assert np.all(np.abs(q8 - values["c"]) <= Q8_0_TOLERANCE * blocks * (1 + 1e-3))
    bf16 = gguf.quants.dequantize(read["d"].data, gguf.GGMLQuantizationType.BF16)
    assert np.allclose(bf16, values["d"], rtol=2**-8, atol=0)


def test_quantized_rows_must_be_whole_blocks(tmp_path: Path) -> None:
    tensor = GgufTensor("x", (2, 48), np.float32, lambda: np.zeros((2, 48)), Q8_0)
    with pytest.raises(ValueError, match=r"not a multiple of Q8_0 block size \(32\)"):
        write_gguf(tmp_path / "t.gguf", "llama", _no_metadata, [tensor])
