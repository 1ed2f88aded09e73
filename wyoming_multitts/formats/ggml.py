"""ggml's data types through llama.cpp's own ggml library: the size of a row, quantizing float
rows, widening a row to float32.

The block layouts (Q8_0, Q4_K, BF16, …) are ggml's; asking its type traits rather than keeping a
table here means a llama-cpp-python update brings its types along. Imported by the GGUF writer
(`gguf.GgufTensor.stored`) and by `llm.token_rows`; never by a reader of GGUF headers, which
needs no llama.cpp.
"""

from __future__ import annotations

import ctypes
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import _ggml

GGML_TYPE_F32 = 0
"""`enum ggml_type` of float32, whose rows are copied as they are (it has no `to_float`)."""
GGML_ACTIVATION_TYPES = frozenset({9, 15})
"""Q8_1 and Q8_K (`enum ggml_type`): what ggml converts activations to, never weights;
`ggml_quantize_chunk` has no case for them and aborts the process."""


def ggml_function(
    name: str, restype: Any, argtypes: list[Any], library: ctypes.CDLL = _ggml.libggml
) -> Any:
    """A function of llama-cpp-python's libggml (or of `library`) with its C signature set."""
    function = getattr(library, name)
    function.restype = restype
    function.argtypes = argtypes
    return function


class _TypeTraits(ctypes.Structure):
    """`struct ggml_type_traits` (ggml.h, llama-cpp-python 0.3.36)."""

    _fields_ = [
        ("type_name", ctypes.c_char_p),
        ("blck_size", ctypes.c_int64),
        ("blck_size_interleave", ctypes.c_int64),
        ("type_size", ctypes.c_size_t),
        ("is_quantized", ctypes.c_bool),
        ("to_float", ctypes.c_void_p),
        ("from_float_ref", ctypes.c_void_p),
    ]


_type_traits = ggml_function("ggml_get_type_traits", ctypes.POINTER(_TypeTraits), [ctypes.c_int])
ToFloat = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
"""`ggml_to_float_t`: (const void * x, float * y, int64_t k)."""
_quantize_chunk = ggml_function(
    "ggml_quantize_chunk",
    ctypes.c_size_t,
    [
        ctypes.c_int,  # enum ggml_type type
        ctypes.c_void_p,  # const float * src
        ctypes.c_void_p,  # void * dst
        ctypes.c_int64,  # int64_t start (values into src)
        ctypes.c_int64,  # int64_t nrows
        ctypes.c_int64,  # int64_t n_per_row
        ctypes.c_void_p,  # const float * imatrix (NULL: none)
    ],
)
"""Bytes written (ggml.h, llama-cpp-python 0.3.36)."""
_quantize_requires_imatrix = ggml_function(
    "ggml_quantize_requires_imatrix", ctypes.c_bool, [ctypes.c_int]
)


def ggml_row_bytes(ggml_type: int, n: int) -> int:
    """Bytes of a row of `n` values of ggml type `ggml_type` (ggml's `ggml_row_size`).

    ValueError for a type this ggml does not know (ggml_get_type_traits would assert) or a row
    that is not a whole number of blocks.
    """
    traits = _traits(ggml_type)
    if n % traits.blck_size:
        raise ValueError(
            f"a row of {n} is not whole blocks of {traits.blck_size} ({_name(traits)})"
        )
    return int(traits.type_size) * n // traits.blck_size


def ggml_to_float(ggml_type: int) -> Any:
    """ggml's own `to_float` of `ggml_type` (a `ToFloat`), None for F32 (rows are copied as
    they are); ValueError for a type ggml cannot widen."""
    to_float = _traits(ggml_type).to_float
    if to_float:
        return ToFloat(to_float)
    if ggml_type != GGML_TYPE_F32:
        raise ValueError(f"ggml cannot convert {_name(_traits(ggml_type))} rows to float")
    return None


def ggml_quantize(ggml_type: int, values: np.ndarray) -> np.ndarray:
    """`values` (rows, n) in ggml type `ggml_type`: (rows, bytes per row) uint8, the bytes
    llama.cpp's own `ggml_quantize_chunk` writes (what `llama-quantize` writes without an
    importance matrix). gguf-py's numpy quantizer has no k-quants (Q4_K, Q6_K).

    ValueError for a type that needs an importance matrix or is an activation type, or rows
    that are not whole blocks: ggml checks these with asserts that abort the process, or not
    at all in release builds.
    """
    rows = np.ascontiguousarray(values, np.float32)  # (rows, n)
    if rows.ndim != 2:
        raise ValueError(f"ggml quantizes rows: (rows, n) values, not {rows.shape}")
    n_rows, n = rows.shape
    row_bytes = ggml_row_bytes(ggml_type, n)
    if ggml_type in GGML_ACTIVATION_TYPES or _quantize_requires_imatrix(ggml_type):
        raise ValueError(f"ggml cannot quantize weights to {_name(_traits(ggml_type))} alone")
    out = np.empty((n_rows, row_bytes), np.uint8)  # (rows, bytes per row)
    _quantize_chunk(ggml_type, rows.ctypes.data, out.ctypes.data, 0, n_rows, n, None)
    return out


def _traits(ggml_type: int) -> _TypeTraits:
    if not 0 <= ggml_type < llama_cpp.GGML_TYPE_COUNT:
        raise ValueError(f"ggml type {ggml_type} is unknown to this llama-cpp-python")
    traits = _type_traits(ggml_type).contents
    if traits.blck_size <= 0 or traits.type_size == 0:  # ids of types removed from ggml
        raise ValueError(f"ggml type {ggml_type} ({_name(traits)}) has no data layout")
    return traits


def _name(traits: _TypeTraits) -> str:
    return (traits.type_name or b"?").decode()
