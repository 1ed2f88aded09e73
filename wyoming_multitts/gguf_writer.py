"""Writing a GGUF file one tensor at a time: what the Qwen3-TTS conversion and the random-model
writers share (gguf-py's own writer wants every tensor in memory at once)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np


@dataclass(frozen=True)
class GgufTensor:
    """One tensor to write and how to produce its values when its turn comes."""

    name: str
    shape: tuple[int, ...]
    """numpy order (rows, cols); GGUF stores it reversed."""
    dtype: type
    load: Callable[[], np.ndarray]
    quant: gguf.GGMLQuantizationType | None = None
    """Store as this block type (e.g. Q8_0) instead of `dtype`: `load` still gives float rows,
    quantized when written; each row (`shape[-1]`) must be a whole number of blocks."""

    def stored_shape(self) -> tuple[int, ...]:
        """Shape of the bytes written: `shape`, or (rows, bytes per row) when quantized."""
        if self.quant is None:
            return self.shape
        return gguf.quant_shape_to_byte_shape(self.shape, self.quant)

    def stored_dtype(self) -> np.dtype:
        """numpy type of what is written (raw bytes when quantized)."""
        return np.dtype(np.uint8 if self.quant is not None else self.dtype)

    def stored(self) -> np.ndarray:
        """`load()` as it goes into the file: `dtype`, or quantized to `quant`."""
        data: np.ndarray = np.ascontiguousarray(
            self.load(), dtype=self.dtype if self.quant is None else np.float32
        )
        if data.shape != self.shape:
            raise ValueError(f"{self.name}: {data.shape} != {self.shape}")
        if self.quant is None:
            return data
        return gguf.quants.quantize(data, self.quant)  # (rows, bytes per row) uint8


def write_gguf(
    path: Path, arch: str, metadata: Callable[[gguf.GGUFWriter], None], tensors: list[GgufTensor]
) -> None:
    """Write a GGUF: metadata and tensor table through gguf-py, then each tensor's data in turn
    (one tensor in memory at a time, in list order)."""
    writer = gguf.GGUFWriter(path, arch)
    metadata(writer)
    for tensor in tensors:
        shape, dtype = tensor.stored_shape(), tensor.stored_dtype()
        nbytes = int(np.prod(shape)) * dtype.itemsize
        writer.add_tensor_info(tensor.name, shape, dtype, nbytes, raw_dtype=tensor.quant)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    alignment = writer.data_alignment
    with open(path, "r+b") as out:
        out.seek(0, 2)
        for tensor in tensors:
            out.write(b"\0" * (-out.tell() % alignment))
            tensor.stored().tofile(out)
        out.write(b"\0" * (-out.tell() % alignment))
