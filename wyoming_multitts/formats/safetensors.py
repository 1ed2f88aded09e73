"""safetensors, the Hugging Face checkpoint format: read into numpy without torch (bf16 included,
memory-mapped, row ranges without loading the rest), or strictly into a torch module.

The format (https://github.com/huggingface/safetensors, README "Format"): an 8-byte
little-endian header length, a JSON header (tensor name → dtype, shape, byte offsets into the
data section; an optional `__metadata__`), then the data section. A sharded checkpoint has a
`model.safetensors.index.json` whose `weight_map` names the shard of every tensor.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConvertError, EngineError
from . import read_json_object

if TYPE_CHECKING:
    from torch import nn

SAFETENSORS_DTYPES = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32}
"""safetensors dtypes we read (all become float32) and write → numpy storage type (bf16 is kept
as its raw 16 bits: the upper half of a float32)."""
TORCH_DTYPES = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "BOOL": "bool",
}
"""safetensors dtype → torch dtype name, for loading a torch module."""
WEIGHTS = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"
"""Single-file weights, or the index of a sharded download (some snapshots carry one)."""
MAX_HEADER_BYTES = 100_000_000
"""Longest JSON header we accept: a corrupt length is an error, not a huge allocation."""
DOWNLOAD_AGAIN = "the download is incomplete or damaged; download it again"
"""What to do about a broken file, unless the caller knows better."""
SHOWN_NAMES = 5
"""Tensor names listed in an error before "and N more"."""


def weight_files(model_dir: Path, advice: str = DOWNLOAD_AGAIN) -> list[Path]:
    """The weight files of a snapshot: `model.safetensors`, or the shards its index names."""
    index = model_dir / WEIGHTS_INDEX
    if not index.exists():
        return [model_dir / WEIGHTS]
    doc = read_json_object(index, advice)
    if doc.get("weight_map") is None:
        raise ConvertError(f"{index} lacks weight_map; {advice}")
    return sorted({model_dir / name for name in doc["weight_map"].values()})


class SafetensorsFiles:
    """The tensors of `model.safetensors` (or of the shards its index names), memory-mapped."""

    def __init__(self, tensors: dict[str, tuple[Path, dict[str, Any], int]]) -> None:
        self._tensors = tensors
        """name → (file, header entry, offset of the data section)."""
        self._maps: dict[Path, np.memmap] = {}

    @classmethod
    def open(cls, model_dir: Path, advice: str = DOWNLOAD_AGAIN) -> "SafetensorsFiles":
        """Read the headers of the snapshot's weight file(s); errors end with `advice`."""
        tensors: dict[str, tuple[Path, dict[str, Any], int]] = {}
        for path in weight_files(model_dir, advice):
            header, data_start = _safetensors_header(path, advice)
            tensors.update({name: (path, entry, data_start) for name, entry in header.items()})
        return cls(tensors)

    @property
    def paths(self) -> list[Path]:
        """The weight files."""
        return sorted({path for path, _, _ in self._tensors.values()})

    @property
    def names(self) -> list[str]:
        """Every tensor name, sorted."""
        return sorted(self._tensors)

    def __contains__(self, name: str) -> bool:
        return name in self._tensors

    def shape(self, name: str) -> tuple[int, ...]:
        """Shape of tensor `name`."""
        return tuple(self._tensors[name][1]["shape"])

    def get(self, name: str) -> np.ndarray:
        """Tensor `name` as a new float32 array."""
        path, entry, data_start = self._tensors[name]
        storage = SAFETENSORS_DTYPES.get(entry["dtype"])
        if storage is None:
            raise ConvertError(
                f"{path}: tensor {name} is {entry['dtype']}; only "
                f"{', '.join(SAFETENSORS_DTYPES)} are supported"
            )
        begin, end = entry["data_offsets"]
        raw = self._map(path)[data_start + begin : data_start + end]
        return _float32(raw.view(storage).reshape(entry["shape"]), entry["dtype"])

    def rows(self, name: str, start: int, stop: int) -> np.ndarray:
        """Rows start … stop-1 of a 2-D tensor as float32, read without loading the rest."""
        path, entry, data_start = self._tensors[name]
        cols = int(entry["shape"][1])
        storage = np.dtype(SAFETENSORS_DTYPES[entry["dtype"]])
        begin = data_start + entry["data_offsets"][0] + start * cols * storage.itemsize
        raw = self._map(path)[begin : begin + (stop - start) * cols * storage.itemsize]
        return _float32(raw.view(storage).reshape(stop - start, cols), entry["dtype"])

    def _map(self, path: Path) -> np.memmap:
        if path not in self._maps:
            self._maps[path] = np.memmap(path, dtype=np.uint8, mode="r")
        return self._maps[path]


def _float32(values: np.ndarray, dtype: str) -> np.ndarray:
    """Stored values as a new float32 array (a copy, off the memory map)."""
    if dtype == "BF16":  # the upper half of a float32
        return (values.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return values.astype(np.float32)


def _safetensors_header(path: Path, advice: str) -> tuple[dict[str, Any], int]:
    """The tensor entries of a safetensors file and where its data section starts."""
    try:
        with open(path, "rb") as file:
            length = int.from_bytes(file.read(8), "little")
            if not 2 <= length <= MAX_HEADER_BYTES:
                raise ValueError(f"implausible header length {length}")
            header = json.loads(file.read(length))
        size = path.stat().st_size
    except FileNotFoundError as err:
        raise ConvertError(f"{path} is missing; {advice}") from err
    except (OSError, ValueError) as err:
        raise ConvertError(f"{path} is not a safetensors file ({err}); {advice}") from err
    header.pop("__metadata__", None)
    data_start = 8 + length
    for name, entry in header.items():
        end = entry["data_offsets"][1]
        if data_start + end > size:
            raise ConvertError(
                f"{path} is truncated (tensor {name} ends past the end of the file); " f"{advice}"
            )
    return header, data_start


def load_module_tensors(
    module: nn.Module,
    files: Sequence[Path],
    prefix: str,
    what: str,
    unused: Callable[[str], bool] = lambda key: False,
) -> int:
    """Load the tensors named `prefix` + key of the safetensors `files` into `module`, as its
    state-dict entries `key`, and return how many were loaded.

    Strict: every tensor the module has must be there and no other may be, except the keys
    that `unused(key)` says belong to something else (e.g. the encoder's tensors among a
    decoder's); otherwise an `EngineError` names the file, the `what` ("speaker encoder") and
    the missing, unexpected or misshapen tensors, so a file of another layout fails here instead
    of producing noise.

    Each tensor is read with a plain read and copied into the module before the next, so a
    load needs the module's memory and one tensor more. (`safetensors.safe_open` maps the whole
    file, and every page it reads stays resident until the file is closed: the 12 Hz decoder
    then peaked at twice its 0.44 GB.)
    """
    # pylint: disable-next=import-outside-toplevel  # torch only when a module loads
    import torch

    shown = ", ".join(str(path) for path in files)
    sources: dict[str, tuple[Path, str, dict[str, Any], int]] = {}
    for path in files:
        try:
            header, data_start = _safetensors_header(path, DOWNLOAD_AGAIN)
        except ConvertError as err:
            raise EngineError(f"cannot read {path} ({err})") from err
        for name, entry in header.items():
            key = name[len(prefix) :]
            if name.startswith(prefix) and not unused(key):
                sources[key] = (path, name, entry, data_start)
    expected = module.state_dict()  # key → tensor sharing the module's storage
    missing = sorted(prefix + key for key in expected.keys() - sources.keys())
    unexpected = sorted(prefix + key for key in sources.keys() - expected.keys())
    if missing or unexpected:
        raise EngineError(
            f"{shown} does not hold the {what} its config.json describes: "
            f"missing {_some(missing)}, unexpected {_some(unexpected)}"
        )
    try:
        with contextlib.ExitStack() as stack, torch.no_grad():
            opened = {path: stack.enter_context(open(path, "rb")) for path in files}
            for key, target in expected.items():
                path, name, entry, data_start = sources[key]
                if tuple(entry["shape"]) != tuple(target.shape):
                    raise EngineError(
                        f"{path}: tensor {name} has shape {tuple(entry['shape'])}, the {what} "
                        f"needs {tuple(target.shape)}"
                    )
                target.copy_(_read_tensor(opened[path], name, entry, data_start))
    except OSError as err:
        raise EngineError(f"cannot read {shown} ({err})") from err
    return len(expected)


def _read_tensor(file: io.BufferedReader, name: str, entry: dict[str, Any], data_start: int) -> Any:
    """One tensor of an open safetensors file as a new torch tensor of its stored dtype."""
    import torch  # pylint: disable=import-outside-toplevel

    dtype = getattr(torch, TORCH_DTYPES.get(entry["dtype"], ""), None)
    if dtype is None:
        raise EngineError(f"{file.name}: tensor {name} is {entry['dtype']}, which we cannot read")
    begin, end = entry["data_offsets"]
    data = bytearray(end - begin)
    file.seek(data_start + begin)
    if file.readinto(data) != len(data):
        raise EngineError(f"{file.name} ends inside tensor {name}; {DOWNLOAD_AGAIN}")
    if not data:
        return torch.empty(entry["shape"], dtype=dtype)
    return torch.frombuffer(data, dtype=dtype).reshape(entry["shape"])


def _some(names: list[str], shown: int = SHOWN_NAMES) -> str:
    """At most `shown` names, then how many more."""
    if not names:
        return "none"
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
