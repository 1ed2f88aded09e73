"""The DAC release checkpoint (`DAC.save`'s .pth), read safely and converted once to safetensors.

descript-audio-codec 1.0.0 saves a model with audiotools 0.7.2 `BaseModel.save(package=False)`:
`torch.save({"state_dict": …, "metadata": {"kwargs": the DAC constructor's arguments}})`, every
weight-normed conv stored as `weight_g` and `weight_v` (`torch.nn.utils.weight_norm`, dim 0).
`DAC.load` builds `DAC(**kwargs)` and loads the state dict with strict=False.

We read it once with `torch.load(weights_only=True)` (no pickle code runs), fold the weight norm,
check the kwargs against the tensors and write `X.safetensors` beside `X.pth`; every later load
reads only that file. The network's shape (`DacShape`) always comes from the tensors: no
config.json is read (a model repo's config can disagree with the weights it ships), and kwargs
that disagree with the tensors are an error naming the file.
"""

from __future__ import annotations

import json
import logging
import math
import pickle
import struct
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import torch
from torch import nn

from ..errors import ConvertError
from ..formats import convert_once, partial_path, publish
from ..formats.safetensors import DOWNLOAD_AGAIN, SHOWN_NAMES
from .folding import folded_weight

_LOGGER = logging.getLogger(__name__)

DAC_DEFAULTS: Mapping[str, Any] = {
    "encoder_dim": 64,
    "encoder_rates": [2, 4, 8, 8],
    "latent_dim": None,
    "decoder_dim": 1536,
    "decoder_rates": [8, 8, 4, 2],
    "n_codebooks": 9,
    "codebook_size": 1024,
    "codebook_dim": 8,
    "sample_rate": 44100,
}
"""descript-audio-codec 1.0.0 `dac.DAC.__init__` defaults: what `DAC.load` builds with where the
checkpoint's `metadata.kwargs` is silent (latent_dim None: encoder_dim · 2^len(encoder_rates))."""
CONVERTER_VERSION = "1"
"""Bump when the converted file changes: older conversions are then redone on the next load."""
CONVERTED_SUFFIX = ".converted.safetensors"
"""`weights_….pth` is converted into `weights_….converted.safetensors` next to it (a name of its
own: a user's `weights_….safetensors` beside it is not ours to replace)."""
HEADER_LENGTH = struct.Struct("<Q")
"""A safetensors file starts with its JSON header's length."""
MAX_HEADER_BYTES = 100_000_000
"""The longest header the safetensors format allows."""
METADATA_KEY = "__metadata__"
WEIGHT_G, WEIGHT_V = "weight_g", "weight_v"
"""How `torch.nn.utils.weight_norm` (dim 0) stores a weight: magnitude g and direction v."""
WRONG_FILE = "check that the catalog's codec file is a descript-audio-codec (DAC) .pth"
"""What to do about a readable file that is not a DAC checkpoint."""


# ---- shapes, read from the tensors ------------------------------------------------------------


@dataclass(frozen=True)
class DacShape:
    """The hyper-parameters of a DAC, as the tensors of its checkpoint give them."""

    encoder_dim: int
    encoder_rates: tuple[int, ...]
    """Strides of the encoder's downsampling convs (kernel 2·stride), first to last."""
    latent_dim: int
    decoder_dim: int
    decoder_rates: tuple[int, ...]
    """Strides of the decoder's transposed convs (kernel 2·stride), first to last."""
    codebook_size: int
    codebook_dims: tuple[int, ...]
    """Width of each codebook (one entry per codebook)."""

    @property
    def n_codebooks(self) -> int:
        return len(self.codebook_dims)

    @property
    def hop_length(self) -> int:
        """Audio samples per code frame (320 for the 24 kHz models)."""
        return math.prod(self.encoder_rates)

    @classmethod
    def from_tensors(cls, shapes: Mapping[str, tuple[int, ...]], path: Path) -> "DacShape":
        """The shape of the folded state dict whose tensor shapes are `shapes` (name → shape);
        ConvertError naming `path` when a tensor the layout needs is missing."""

        def shape(name: str) -> tuple[int, ...]:
            if name not in shapes:
                raise ConvertError(f"{path} lacks the DAC tensor {name}; {WRONG_FILE}")
            return shapes[name]

        def strides(prefix: str, conv: str) -> tuple[int, ...]:
            found: list[int] = []  # blocks 1, 2, … while their up/down-sampling conv exists
            while f"{prefix}.{len(found) + 1}.block.{conv}.weight" in shapes:
                found.append(shape(f"{prefix}.{len(found) + 1}.block.{conv}.weight")[2] // 2)
            return tuple(found)

        encoder_rates = strides("encoder.block", "4")  # EncoderBlock: 3 units, Snake, conv
        decoder_rates = strides("decoder.model", "1")  # DecoderBlock: Snake, transposed conv
        n_codebooks = 0
        while f"quantizer.quantizers.{n_codebooks}.codebook.weight" in shapes:
            n_codebooks += 1
        if not (encoder_rates and decoder_rates and n_codebooks):
            raise ConvertError(
                f"{path} has no encoder blocks, decoder blocks or codebooks "
                f"(encoder.block.1.*, decoder.model.1.*, quantizer.quantizers.0.*); {WRONG_FILE}"
            )
        codebooks = [shape(f"quantizer.quantizers.{j}.codebook.weight") for j in range(n_codebooks)]
        return cls(
            encoder_dim=shape("encoder.block.0.weight")[0],  # (encoder_dim, 1, 7)
            encoder_rates=encoder_rates,
            latent_dim=shape("decoder.model.0.weight")[1],  # (decoder_dim, latent_dim, 7)
            decoder_dim=shape("decoder.model.0.weight")[0],
            decoder_rates=decoder_rates,
            codebook_size=codebooks[0][0],  # (codebook_size, codebook_dim)
            codebook_dims=tuple(rows_cols[1] for rows_cols in codebooks),
        )

    def disagreements(self, kwargs: Mapping[str, Any]) -> list[str]:
        """Where the constructor kwargs `DAC.load` would use (DAC_DEFAULTS updated with the
        checkpoint's `metadata.kwargs`) describe another network than the tensors do."""
        given = {**DAC_DEFAULTS, **kwargs}
        latent = given["latent_dim"]
        codebook_dim = given["codebook_dim"]
        described = {
            "encoder_dim": given["encoder_dim"],
            "encoder_rates": tuple(given["encoder_rates"]),
            "latent_dim": (
                given["encoder_dim"] * 2 ** len(given["encoder_rates"])
                if latent is None
                else latent
            ),
            "decoder_dim": given["decoder_dim"],
            "decoder_rates": tuple(given["decoder_rates"]),
            "n_codebooks": given["n_codebooks"],
            "codebook_size": given["codebook_size"],
            "codebook_dims": (
                tuple(codebook_dim)
                if isinstance(codebook_dim, (list, tuple))
                else (codebook_dim,) * given["n_codebooks"]
            ),
        }
        return [
            f"{key} {value} (tensors: {getattr(self, key)})"
            for key, value in described.items()
            if value != getattr(self, key)
        ]


# ---- conversion and loading ----------------------------------------------------------------------


def converted_path(checkpoint: Path) -> Path:
    """Where the conversion of the release `checkpoint` goes: beside it, `CONVERTED_SUFFIX`."""
    return checkpoint.with_name(checkpoint.stem + CONVERTED_SUFFIX)


def convert_checkpoint(checkpoint: Path) -> Path:
    """The safetensors file of the release `checkpoint` (a `DAC.save` .pth), converting it now
    unless an up-to-date conversion is already there; returns its path.

    Weight norm is folded (`folded_state`), every tensor made float32, and the checkpoint's
    `metadata.kwargs` kept as JSON in the file's metadata with the source's size and mtime (a
    changed source is converted again). Written under a temporary name, synced and renamed,
    one process at a time (`formats.convert_once`), so an interrupted conversion is never taken
    for a finished one; a file of that name that this server did not write is never replaced.
    """
    out = converted_path(checkpoint)
    try:
        source = checkpoint.stat()
    except OSError as err:
        raise ConvertError(f"DAC checkpoint {checkpoint} is missing ({err})") from err
    stamp = {
        "converter": CONVERTER_VERSION,
        "source_size": str(source.st_size),
        "source_mtime_ns": str(source.st_mtime_ns),
    }

    def reused() -> Path | None:
        if not out.exists():
            return None
        size, metadata = _written_size_and_metadata(out)
        if "converter" not in metadata:
            raise ConvertError(
                f"{out} is in the way of the conversion of {checkpoint} and was not written "
                "by this server: move it away"
            )
        whole = out.stat().st_size == size
        return out if whole and metadata.items() >= stamp.items() else None

    return convert_once(
        out,
        reused,
        lambda: _convert(checkpoint, out, stamp, source.st_mode),
        f"cannot write {out}; make {out.parent} writable",
    )


def _convert(checkpoint: Path, out: Path, stamp: dict[str, str], mode: int) -> Path:
    """Write `out`, the folded, checked float32 tensors of `checkpoint` stamped with `stamp`."""
    start = time.monotonic()
    state, kwargs = read_release(checkpoint)
    folded = folded_state(state, checkpoint)
    shape = DacShape.from_tensors({name: tuple(t.shape) for name, t in folded.items()}, checkpoint)
    disagreements = shape.disagreements(kwargs)
    if disagreements:
        raise ConvertError(
            f"{checkpoint}: its metadata.kwargs describe another network than its tensors "
            f"({'; '.join(disagreements)}); the file is damaged or not one DAC.load reads"
        )
    partial = partial_path(out)
    metadata = {**stamp, "source": checkpoint.name, "kwargs": json.dumps(kwargs)}
    # pylint: disable-next=import-outside-toplevel  # safetensors' torch half only here
    from safetensors import SafetensorError
    from safetensors.torch import save_file

    try:
        save_file(folded, str(partial), metadata=metadata)
        partial.chmod(mode & 0o777)  # readable by whoever can read the download
        publish(partial, out)
    except (OSError, SafetensorError) as err:
        raise ConvertError(
            f"cannot write {out} ({err}); check the free space and permissions of {out.parent}"
        ) from err
    finally:
        partial.unlink(missing_ok=True)
    _LOGGER.info(
        "Converted %s to %s (%d tensors, %s) in %.1f s",
        checkpoint,
        out,
        len(folded),
        shape,
        time.monotonic() - start,
    )
    return out


def _written_size_and_metadata(path: Path) -> tuple[int, dict[str, str]]:
    """The size a safetensors file was written with (its header says where the data ends) and
    its `__metadata__`, read without the library, which refuses a file cut short; (0, {}) when
    it is not one."""
    try:
        with open(path, "rb") as file:
            (length,) = HEADER_LENGTH.unpack(file.read(HEADER_LENGTH.size))
            header = json.loads(file.read(min(length, MAX_HEADER_BYTES)))
        ends = [int(v["data_offsets"][1]) for k, v in header.items() if k != METADATA_KEY]
        return HEADER_LENGTH.size + length + max(ends, default=0), dict(header[METADATA_KEY])
    except (OSError, struct.error, ValueError, TypeError, KeyError, IndexError):
        return 0, {}


def read_release(checkpoint: Path) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """(state_dict, metadata.kwargs) of a `DAC.save` .pth, loaded with `weights_only=True`."""
    try:
        loaded = torch.load(checkpoint, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        refused = _unsafe_globals(checkpoint)
        if refused:
            raise ConvertError(
                f"{checkpoint} holds Python objects that a safe load refuses "
                f"({', '.join(refused)}); {WRONG_FILE}"
            ) from err
        raise ConvertError(
            f"{checkpoint} is not a PyTorch checkpoint ({err}); {WRONG_FILE}"
        ) from err
    except (RuntimeError, OSError, EOFError, ValueError, zipfile.BadZipFile) as err:
        raise ConvertError(f"cannot read {checkpoint} ({err}); {DOWNLOAD_AGAIN}") from err
    state = loaded.get("state_dict") if isinstance(loaded, dict) else None
    metadata = loaded.get("metadata") if isinstance(loaded, dict) else None
    kwargs = metadata.get("kwargs") if isinstance(metadata, dict) else None
    if not isinstance(state, dict) or not isinstance(kwargs, dict):
        raise ConvertError(
            f"{checkpoint} is not a DAC checkpoint: DAC.save writes a dict with state_dict and "
            f"metadata.kwargs; {WRONG_FILE}"
        )
    return dict(state), dict(kwargs)


def folded_state(state: Mapping[str, torch.Tensor], path: Path) -> dict[str, torch.Tensor]:
    """The state dict with every (X.weight_g, X.weight_v) pair replaced by X.weight = g · v / ‖v‖,
    the norm over all but dim 0 (what `torch.nn.utils.weight_norm`'s hook computes before each
    forward, here once, by the same op), all tensors float32."""
    folded: dict[str, torch.Tensor] = {}
    for name, tensor in state.items():
        stem, _, leaf = name.rpartition(".")
        if leaf == WEIGHT_V:
            continue
        if leaf == WEIGHT_G:
            direction = state.get(f"{stem}.{WEIGHT_V}")
            if direction is None:
                raise ConvertError(f"{path} has {name} but no {stem}.{WEIGHT_V}; {DOWNLOAD_AGAIN}")
            folded[f"{stem}.weight"] = folded_weight(tensor, direction)
        else:
            folded[name] = tensor.float().contiguous()
    orphans = [
        name
        for name in state
        if name.endswith(f".{WEIGHT_V}") and name.removesuffix(WEIGHT_V) + WEIGHT_G not in state
    ]
    if orphans:
        raise ConvertError(f"{path} has {orphans[0]} but no {WEIGHT_G} for it; {DOWNLOAD_AGAIN}")
    return folded


def _unsafe_globals(checkpoint: Path) -> list[str]:
    """The Python globals a `weights_only` load refuses in `checkpoint` (none if unreadable)."""
    try:
        return list(torch.serialization.get_unsafe_globals_in_checkpoint(checkpoint))
    except Exception:  # noqa: BLE001  # a file it cannot parse has no globals to name
        return []


def read_converted(checkpoint: Path) -> tuple[Path, DacShape, int]:
    """(safetensors path, shape, sample rate) of `checkpoint`, converted first if needed."""
    # pylint: disable-next=import-outside-toplevel
    from safetensors import SafetensorError, safe_open

    path = convert_checkpoint(checkpoint)
    try:
        with safe_open(str(path), framework="pt") as weights:
            shapes = {name: tuple(weights.get_slice(name).get_shape()) for name in weights.keys()}
            kwargs = json.loads((weights.metadata() or {}).get("kwargs", "{}"))
    except (SafetensorError, OSError, ValueError) as err:
        raise ConvertError(f"cannot read {path} ({err}); delete it to convert again") from err
    shape = DacShape.from_tensors(shapes, path)
    return path, shape, int({**DAC_DEFAULTS, **kwargs}["sample_rate"])


def load_part(module: nn.Module, path: Path, what: str, unused: str) -> None:
    """Load `module`'s tensors from the converted file `path`, strictly: every tensor it has must
    be there with its shape, and nothing else may be except those under `unused` (the other
    half of the codec); otherwise a ConvertError names the file and the tensors."""
    # pylint: disable-next=import-outside-toplevel
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        state = {k: v for k, v in load_file(str(path)).items() if not k.startswith(unused)}
    except (SafetensorError, OSError) as err:
        raise ConvertError(f"cannot read {path} ({err}); delete it to convert again") from err
    expected = module.state_dict()
    missing = sorted(expected.keys() - state.keys())
    unexpected = sorted(state.keys() - expected.keys())
    misshapen = [k for k in expected.keys() & state.keys() if expected[k].shape != state[k].shape]
    if missing or unexpected or misshapen:
        raise ConvertError(
            f"{path} does not hold a {what} of the shape its tensors give: missing "
            f"{missing[:SHOWN_NAMES] or 'none'}, unexpected {unexpected[:SHOWN_NAMES] or 'none'}, "
            f"misshapen {misshapen[:SHOWN_NAMES] or 'none'}; {WRONG_FILE}"
        )
    module.load_state_dict(state, strict=True)
    _LOGGER.debug("loaded %d %s tensors from %s", len(state), what, path)
