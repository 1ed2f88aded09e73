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


def write_gguf(
    path: Path, arch: str, metadata: Callable[[gguf.GGUFWriter], None], tensors: list[GgufTensor]
) -> None:
    """Write a GGUF: metadata and tensor table through gguf-py, then each tensor's data in turn
    (one tensor in memory at a time, in list order)."""
    writer = gguf.GGUFWriter(path, arch)
    metadata(writer)
    for tensor in tensors:
        nbytes = int(np.prod(tensor.shape)) * np.dtype(tensor.dtype).itemsize
        writer.add_tensor_info(tensor.name, tensor.shape, np.dtype(tensor.dtype), nbytes)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    alignment = writer.data_alignment
    with open(path, "r+b") as out:
        out.seek(0, 2)
        for tensor in tensors:
            out.write(b"\0" * (-out.tell() % alignment))
            data: np.ndarray = np.ascontiguousarray(tensor.load(), dtype=tensor.dtype)
            if data.shape != tensor.shape:
                raise ValueError(f"{tensor.name}: {data.shape} != {tensor.shape}")
            data.tofile(out)
        out.write(b"\0" * (-out.tell() % alignment))
