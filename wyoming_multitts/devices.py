"""Device names of the catalog and CLI (`auto`, `cpu`, `cuda[:N]`, `vulkan[:N]`, `metal`, `htp[:N]`)
resolved to a llama.cpp backend device and a torch device.

A device this llama.cpp build lacks is an error naming the devices it has; only `auto` falls back.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import DeviceError

if TYPE_CHECKING:
    import torch

_LOGGER = logging.getLogger(__name__)

LLAMA_DEVICE_PREFIX = {"cuda": "CUDA", "vulkan": "Vulkan", "metal": "MTL", "htp": "HTP"}
"""Our device kind → the ggml backend device name prefix (`CUDA0`, `Vulkan0`, `MTL0`, `HTP0`)."""
AUTO_PREFERENCE = ("cuda", "metal", "vulkan", "htp")
"""What `auto` picks, best first, among the devices the build has; CPU when none."""
BACKEND_OF_KIND = {"cuda": "cuda", "vulkan": "vulkan", "metal": "metal", "htp": "hexagon"}
"""Our device kind → the name of its ggml backend library (`libggml-cuda.so`, …)."""
DRIVER_CHECK_OF_KIND = {
    "cuda": "the driver: nvidia-smi",
    "vulkan": "the driver: vulkaninfo --summary",
    "metal": "macOS's Metal support",
    "htp": "Qualcomm's FastRPC library libcdsprpc.so, ADSP_LIBRARY_PATH naming the folder of "
    "libggml-htp-v*.so, and GGML_HEXAGON_VERBOSE=1 for llama.cpp's log (docs/arm64.md)",
}
"""What to check when the backend is built but finds no device of that kind."""
TORCH_DEVICE_OF_KIND = {"cuda": "cuda", "metal": "mps"}
"""Where torch parts (codecs) run for each kind; every other kind keeps them on the CPU."""

GPU_PRESENT = {
    "cuda": lambda: Path("/dev/nvidiactl").exists(),
    "vulkan": lambda: any(Path("/dev/dri").glob("renderD*")),
    "metal": lambda: sys.platform == "darwin",
}
"""The GPU kinds a default voice may count on, and how the machine shows it has one (without a
driver call). `htp` is not one: Orpheus' codec would still run on the CPU."""

_TORCH_THREADS_LOCK = threading.Lock()


@dataclass(frozen=True)
class Device:
    """Where a model runs."""

    name: str
    """Canonical name (`cpu`, `cuda:0`, `htp:0`, …)."""
    llama_device: str | None
    """ggml backend device that llama.cpp offloads every layer to; None: CPU only."""
    torch_device: str
    """torch device for the non-llama parts (`cpu`, `cuda:0`, `mps`)."""
    picked_automatically: bool = False
    """Chosen by `auto`: torch parts fall back to the CPU when torch lacks that device."""


CPU = Device(name="cpu", llama_device=None, torch_device="cpu")


def parse_device_name(name: str) -> tuple[str, int]:
    """`cuda:1` → (`cuda`, 1); raises `DeviceError` for unknown names."""
    kind, _, index = name.strip().lower().partition(":")
    if kind not in ("auto", "cpu", *LLAMA_DEVICE_PREFIX) or (index and not index.isdigit()):
        raise DeviceError(
            f"unknown device {name!r}: use auto, cpu, cuda[:N], vulkan[:N], metal or htp[:N]"
        )
    return kind, int(index or 0)


def gpu_expected(device_override: str | None) -> bool:
    """Whether models will run on a GPU here, told without loading llama.cpp or torch (the
    server's front end loads neither): `--device` says so, or, for `auto`, this llama.cpp build
    has a GPU backend's library and the machine has such a GPU (its driver's device node, or
    macOS for Metal). Picks the default voice (`Catalog.for_machine`)."""
    if device_override is not None:
        kind, _ = parse_device_name(device_override)
        if kind != "auto":
            return kind in GPU_PRESENT
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return False
    libraries = " ".join(path.name for path in (Path(spec.origin).parent / "lib").glob("libggml-*"))
    return any(
        f"libggml-{BACKEND_OF_KIND[kind]}" in libraries and present()
        for kind, present in GPU_PRESENT.items()
    )


def resolve_device(name: str, uses_llama: bool = True) -> Device:
    """The `Device` for a catalog/CLI device name, checked against this llama.cpp build; for an
    engine that runs wholly in torch (`uses_llama=False`: Bark) against torch instead."""
    kind, index = parse_device_name(name)
    if kind == "cpu":
        return CPU
    if not uses_llama:
        return _torch_only_device(kind, index)
    from .llm import build  # imports llama.cpp: only when a model really loads

    available = [dev.name for dev in build.backend_devices() if dev.kind != "cpu"]
    if kind == "auto":
        for candidate in AUTO_PREFERENCE:
            wanted = f"{LLAMA_DEVICE_PREFIX[candidate]}0"
            if wanted in available:
                return replace(_device(candidate, 0, wanted), picked_automatically=True)
        return CPU
    wanted = f"{LLAMA_DEVICE_PREFIX[kind]}{index}"
    if wanted not in available:
        has = ", ".join(available) or "CPU only"
        if BACKEND_OF_KIND[kind] in build.built_backends():
            raise DeviceError(
                f"device {name} needs the llama.cpp device {wanted}: this llama-cpp-python has "
                f"the {BACKEND_OF_KIND[kind]} backend, but it found no such device (it has: "
                f"{has}). Check {DRIVER_CHECK_OF_KIND[kind]}, and llama.cpp's message at "
                "startup, or set device: auto / cpu"
            )
        raise DeviceError(
            f"device {name} needs the llama.cpp backend device {wanted}, but this "
            f"llama-cpp-python build has: {has}. Rebuild it with the backend "
            "(see README, 'Devices') or set device: auto / cpu"
        )
    return _device(kind, index, wanted)


def _torch_only_device(kind: str, index: int) -> Device:
    """`auto`: CUDA or Apple's MPS when torch has it, else the CPU; other kinds as named (one
    torch cannot use, like `htp`, keeps torch_device `cpu` and the engine says so)."""
    import torch

    if kind != "auto":
        return _device(kind, index, None)
    if torch.cuda.is_available():
        return replace(_device("cuda", 0, None), picked_automatically=True)
    if torch.backends.mps.is_available():
        return replace(_device("metal", 0, None), picked_automatically=True)
    return CPU


def _device(kind: str, index: int, llama_device: str | None) -> Device:
    torch_kind = TORCH_DEVICE_OF_KIND.get(kind, "cpu")
    torch_device = f"cuda:{index}" if torch_kind == "cuda" else torch_kind
    return Device(name=f"{kind}:{index}", llama_device=llama_device, torch_device=torch_device)


def torch_device_for(device: Device) -> "torch.device":
    """The torch.device of `device`, checked to exist in this torch build."""
    import torch

    has_device = (
        torch.cuda.is_available()
        if device.torch_device.startswith("cuda")
        else device.torch_device != "mps" or torch.backends.mps.is_available()
    )
    if not has_device and device.picked_automatically:
        _LOGGER.info("torch has no %s; the codec runs on the CPU", device.torch_device)
        return torch.device("cpu")
    if device.torch_device.startswith("cuda") and not torch.cuda.is_available():
        raise DeviceError(
            f"device {device.name} runs the codec on CUDA, but this torch is a "
            "CPU build; install a CUDA torch (README, 'GPU builds') or use device: cpu"
        )
    if device.torch_device == "mps" and not torch.backends.mps.is_available():
        raise DeviceError(
            f"device {device.name} needs torch with MPS (Apple); use device: cpu or auto"
        )
    return torch.device(device.torch_device)


def set_torch_threads(threads: int) -> None:
    """Size torch's intra-op pool once, to the same `--threads` llama.cpp uses."""
    import torch

    with _TORCH_THREADS_LOCK:
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
            _LOGGER.debug("torch intra-op threads: %d", threads)
