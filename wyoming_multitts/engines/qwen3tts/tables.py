"""tables.npz, the numpy side of a converted Qwen3-TTS model, written and read here: the text
table pre-folded through `text_projection`, the `tts_pad/bos/eos` embeddings, the codec
embedding, the code predictor's input tables and heads, and `small_to_mtp_projection` when the
predictor is narrower than the talker (1.7B). Rows are looked up and the heads multiplied with
in torch, so they keep the `matrix_type`'s dtype; what is multiplied with in numpy is float32.

The engine memory-maps the file rather than reading it: the folded text table (151,936 rows,
311 MB in f16 for the 0.6B) is looked up a few dozen rows a request, so only those pages become
resident, and the rest are the page cache's, shared by every process that maps them.
"""

from __future__ import annotations

import logging
import struct
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import EngineError
from ...formats.safetensors import SafetensorsFiles
from .checkpoint import PREDICTOR_PREFIX
from .config import Qwen3TTSRuntimeConfig

_LOGGER = logging.getLogger(__name__)

FOLD_ROWS = 4096
"""Text-table rows pushed through text_projection at a time (2048-wide: 32 MB of float32)."""
TEXT_TABLE_F16_LIMIT = 60000.0
"""Largest folded text value stored as float16 (max 65504); a larger one keeps float32."""
TEXT_EMBEDDING = "talker.model.text_embedding.weight"
TEXT_PROJECTION = "talker.text_projection"
CODEC_EMBEDDING = "talker.model.codec_embedding.weight"
PREDICTOR_HEADS = "talker.code_predictor.lm_head"
MTP_PROJECTION = "talker.code_predictor.small_to_mtp_projection"
"""The checkpoint tensors the tables come from."""
ZIP_LOCAL_HEADER = struct.Struct("<4s22xHH")
"""A zip member's local file header: signature, 22 bytes we skip, then the lengths of the name
and of the extra field that precede the data (APPNOTE.TXT 4.3.7,
https://pkware.cachefly.net/webdocs/casestudies/APPNOTE.TXT)."""
ZIP_LOCAL_SIGNATURE = b"PK\x03\x04"


@dataclass(frozen=True)
class Qwen3Tables:
    """The tables as the engine uses them (see the module docstring)."""

    text: np.ndarray
    """(text_vocab, H) f16 or f32: text-side input rows of the text tokens."""
    tts_pad: np.ndarray
    """(H,) float32; so are tts_bos and tts_eos."""
    tts_bos: np.ndarray
    tts_eos: np.ndarray
    codec: np.ndarray
    """(talker_vocab, H) float32: codec-side input rows (code 0 and the codec specials)."""
    predictor: np.ndarray
    """(G-1, codebook, H) f16 or f32: the input rows of codes 1 … G-1."""
    heads: np.ndarray
    """(G-1, codebook, Hp) f16 or f32: the predictor's output heads."""
    mtp_weight: np.ndarray | None
    """(Hp, H) float32 small_to_mtp_projection, or None when the predictor is as wide."""
    mtp_bias: np.ndarray | None
    """(Hp,) float32."""

    @classmethod
    def read(cls, path: Path, config: Qwen3TTSRuntimeConfig) -> "Qwen3Tables":
        """The tables of a conversion (`write_tables`), memory-mapped; the small float32 ones
        that are added to every input row are copied."""
        npz = map_npz(path)
        mtp = config.has_mtp_projection
        return cls(
            text=npz["text_embeddings"],
            tts_pad=npz["tts_pad_embedding"].astype(np.float32),
            tts_bos=npz["tts_bos_embedding"].astype(np.float32),
            tts_eos=npz["tts_eos_embedding"].astype(np.float32),
            codec=npz["codec_embeddings"].astype(np.float32),
            predictor=npz["predictor_embeddings"],
            heads=npz["predictor_heads"],
            mtp_weight=npz["mtp_projection_weight"].astype(np.float32) if mtp else None,
            mtp_bias=npz["mtp_projection_bias"].astype(np.float32) if mtp else None,
        )


def map_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an uncompressed `.npz` (as `NpzWriter` writes), memory-mapped read-only.

    `np.load` reads an archive's arrays into memory whatever its `mmap_mode` says, so each
    member's data is found here: the zip's local header, then the `.npy` header.
    """
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as archive, open(path, "rb") as file:
            for member in archive.infolist():
                if member.compress_type != zipfile.ZIP_STORED:
                    raise ValueError(f"{member.filename} is compressed")
                file.seek(member.header_offset)
                signature, name_length, extra_length = ZIP_LOCAL_HEADER.unpack(
                    file.read(ZIP_LOCAL_HEADER.size)
                )
                if signature != ZIP_LOCAL_SIGNATURE:
                    raise ValueError(f"no local header for {member.filename}")
                file.seek(name_length + extra_length, 1)
                version = np.lib.format.read_magic(file)  # (1, 0), or (2, 0): a longer header
                read_header = (
                    np.lib.format.read_array_header_1_0
                    if version == (1, 0)
                    else np.lib.format.read_array_header_2_0
                )
                shape, fortran_order, dtype = read_header(file)
                if fortran_order or dtype.hasobject:
                    raise ValueError(f"{member.filename} is not a C-ordered numeric array")
                name = member.filename.removesuffix(".npy")
                arrays[name] = np.memmap(path, dtype, "r", file.tell(), shape)
    except (OSError, ValueError, zipfile.BadZipFile, struct.error) as err:
        raise EngineError(
            f"{path} is not a table file of this version ({err}); delete "
            f"{path.parent} and the model is converted again"
        ) from err
    return arrays


class _Float16Overflow(Exception):
    """A folded text value does not fit float16."""


def write_tables(
    path: Path,
    weights: SafetensorsFiles,
    config: Qwen3TTSRuntimeConfig,
    dtype: type,
) -> None:
    """tables.npz; the text table falls back to float32 if a value would overflow float16."""
    try:
        _write_tables_as(path, weights, config, dtype)
    except _Float16Overflow:
        _LOGGER.warning("%s: folded text table exceeds float16; storing it as float32", path)
        _write_tables_as(path, weights, config, np.float32)


def _write_tables_as(
    path: Path,
    weights: SafetensorsFiles,
    config: Qwen3TTSRuntimeConfig,
    dtype: type,
) -> None:
    fold = TextProjection.read(weights)
    groups = config.num_code_groups - 1
    with NpzWriter(path) as npz:
        # looked up row by row, or the heads (multiplied with in torch): stored as `dtype`;
        # multiplied with in numpy: float32
        npz.add_chunks(
            "text_embeddings",
            (config.text_vocab, config.talker_hidden),
            dtype,
            _folded_rows(weights, fold, config.text_vocab, dtype),
        )
        special = np.concatenate(
            [
                weights.rows(TEXT_EMBEDDING, token, token + 1)
                for token in (config.tts_pad_id, config.tts_bos_id, config.tts_eos_id)
            ]
        )  # (3, text_hidden)
        pad, bos, eos = fold(special)  # (hidden,) each, float32
        npz.add("tts_pad_embedding", pad)
        npz.add("tts_bos_embedding", bos)
        npz.add("tts_eos_embedding", eos)
        npz.add("codec_embeddings", weights.get(CODEC_EMBEDDING).astype(dtype))
        npz.add_chunks(
            "predictor_embeddings",
            (groups, config.codebook_size, config.talker_hidden),
            dtype,
            (weights.get(f"{PREDICTOR_PREFIX}.codec_embedding.{i}.weight") for i in range(groups)),
        )
        npz.add_chunks(
            "predictor_heads",
            (groups, config.codebook_size, config.predictor_hidden),
            dtype,
            (weights.get(f"{PREDICTOR_HEADS}.{i}.weight") for i in range(groups)),
        )
        if config.has_mtp_projection:
            npz.add("mtp_projection_weight", weights.get(f"{MTP_PROJECTION}.weight"))
            npz.add("mtp_projection_bias", weights.get(f"{MTP_PROJECTION}.bias"))


@dataclass(frozen=True)
class TextProjection:
    """`talker.text_projection`: linear_fc1 → SiLU → linear_fc2, applied row-wise."""

    fc1_weight: np.ndarray  # (text_hidden, text_hidden) float32
    fc1_bias: np.ndarray  # (text_hidden,)
    fc2_weight: np.ndarray  # (hidden, text_hidden)
    fc2_bias: np.ndarray  # (hidden,)

    @classmethod
    def read(cls, weights: SafetensorsFiles) -> "TextProjection":
        """The projection's four tensors, as float32."""
        return cls(
            weights.get(f"{TEXT_PROJECTION}.linear_fc1.weight"),
            weights.get(f"{TEXT_PROJECTION}.linear_fc1.bias"),
            weights.get(f"{TEXT_PROJECTION}.linear_fc2.weight"),
            weights.get(f"{TEXT_PROJECTION}.linear_fc2.bias"),
        )

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """(n, text_hidden) float32 → (n, hidden) float32."""
        hidden = rows @ self.fc1_weight.T + self.fc1_bias  # (n, text_hidden)
        with np.errstate(over="ignore"):  # exp(-x) overflows for very negative x: silu → -0
            hidden = hidden / (1.0 + np.exp(-hidden))  # SiLU
        return hidden @ self.fc2_weight.T + self.fc2_bias  # (n, hidden)


def _folded_rows(
    weights: SafetensorsFiles, fold: TextProjection, n_rows: int, dtype: type
) -> Iterator[np.ndarray]:
    """The text table through text_projection, FOLD_ROWS rows at a time (progress logged)."""
    start = time.monotonic()
    next_report = 0.25
    for begin in range(0, n_rows, FOLD_ROWS):
        end = min(begin + FOLD_ROWS, n_rows)
        folded = fold(weights.rows(TEXT_EMBEDDING, begin, end))  # (m, hidden) float32
        if np.dtype(dtype) == np.float16 and np.abs(folded).max() > TEXT_TABLE_F16_LIMIT:
            raise _Float16Overflow
        yield folded.astype(dtype)
        if end / n_rows >= next_report and end < n_rows:
            _LOGGER.info(
                "Folding the text table: %d of %d rows (%.0f s)",
                end,
                n_rows,
                time.monotonic() - start,
            )
            next_report += 0.25


class NpzWriter:
    """An uncompressed `.npz` written one array (or one array in pieces) at a time; what
    `np.load` reads."""

    def __init__(self, path: Path) -> None:
        self._zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True)

    def __enter__(self) -> "NpzWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self._zip.close()

    def add(self, name: str, array: np.ndarray) -> None:
        """Store a whole array as `name`."""
        with self._zip.open(f"{name}.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)

    def add_chunks(
        self, name: str, shape: tuple[int, ...], dtype: type, chunks: Iterator[np.ndarray]
    ) -> None:
        """Store an array of `shape` given as consecutive row blocks (along axis 0)."""
        header = {
            "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
            "fortran_order": False,
            "shape": shape,
        }
        written = 0
        with self._zip.open(f"{name}.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_2_0(member, header)
            for chunk in chunks:
                block: np.ndarray = np.ascontiguousarray(chunk, dtype=dtype)
                member.write(block.tobytes())
                written += block.size
        if written != int(np.prod(shape)):
            raise AssertionError(f"{name}: wrote {written} values for shape {shape}")
