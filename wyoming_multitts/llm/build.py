"""What this llama.cpp build and this machine support: llama.cpp's start-up (backends, logs),
its backend devices, the backends it was compiled with, and the CPU features it uses.

The CPU-feature logic of the server lives here. llama.cpp is compiled per machine by
script/setup, or once for every x86 CPU in the image (docs/cpus.md); either way
`llama_print_system_info` reports what the running build uses (`AVX512_BF16 = 1`, …).
"""

from __future__ import annotations

import ctypes
import logging
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import llama_cpp
from llama_cpp import _ggml

from ..formats.ggml import ggml_function

_LLAMA_LOGGER = logging.getLogger("llama.cpp")

GGML_LOG_LEVELS = {
    0: logging.DEBUG,
    1: logging.DEBUG,
    2: logging.DEBUG,
    3: logging.WARNING,
    4: logging.ERROR,
}
"""`enum ggml_log_level` → logging level; llama.cpp's INFO chatter (metadata) goes to DEBUG."""
GGML_LOG_CONTINUE = 5
"""ggml level meaning "continuation of the previous message"."""
GGML_DEVICE_KINDS = {0: "cpu", 1: "gpu", 2: "igpu", 3: "accel"}
"""`enum ggml_backend_dev_type` (ggml-backend.h)."""
SYSTEM_FEATURE = re.compile(r"(\w+) = 1\b")
"""A feature this llama.cpp build uses, as `llama_print_system_info` lists them (`AVX2 = 1`)."""
BACKEND_LIBRARY = re.compile(r"libggml-([a-z]+)[-\w.]*?\.(?:so|dylib|dll)")
"""A ggml backend's library (`libggml-cuda.so.0`, a CPU variant `libggml-cpu-haswell.so`;
`libggml-base` holds no backend)."""
LIBRARY_DIR = Path(llama_cpp.__file__).parent / "lib"
"""Where llama-cpp-python keeps libllama, libggml and the backends' libraries."""


def _llama_libggml() -> ctypes.CDLL:
    """The libggml that libllama itself links (by its SONAME, beside it). A wheel holds no
    symbolic links, so `libggml.so`, which llama-cpp-python's `_ggml` opens, may be a second copy
    of it with a backend registry of its own: backends loaded or devices listed there would be
    unknown to llama.cpp."""
    linked = sorted(LIBRARY_DIR.glob("libggml.so.[0-9]*"), key=lambda path: len(path.name))
    return ctypes.CDLL(str(linked[0])) if linked else _ggml.libggml


_LIBGGML = _llama_libggml()
_INIT_LOCK = threading.Lock()
_initialized = False
_log_state = {"level": logging.DEBUG}


@llama_cpp.llama_log_callback
def _log_to_logging(level: int, text: bytes, _user_data: ctypes.c_void_p) -> None:
    """Route llama.cpp's log lines to the `llama.cpp` logger (set once, kept alive here)."""
    if level != GGML_LOG_CONTINUE:
        _log_state["level"] = GGML_LOG_LEVELS.get(level, logging.DEBUG)
    message = text.decode("utf-8", errors="replace").rstrip("\n")
    if message:
        _LLAMA_LOGGER.log(_log_state["level"], "%s", message)


_dev_count = ggml_function("ggml_backend_dev_count", ctypes.c_size_t, [], _LIBGGML)
_dev_get = ggml_function("ggml_backend_dev_get", ctypes.c_void_p, [ctypes.c_size_t], _LIBGGML)
_dev_name = ggml_function("ggml_backend_dev_name", ctypes.c_char_p, [ctypes.c_void_p], _LIBGGML)
_dev_description = ggml_function(
    "ggml_backend_dev_description", ctypes.c_char_p, [ctypes.c_void_p], _LIBGGML
)
_dev_type = ggml_function("ggml_backend_dev_type", ctypes.c_int, [ctypes.c_void_p], _LIBGGML)
_reg_count = ggml_function("ggml_backend_reg_count", ctypes.c_size_t, [], _LIBGGML)
_load_all_backends_from = ggml_function(
    "ggml_backend_load_all_from_path", None, [ctypes.c_char_p], _LIBGGML
)


def init_runtime() -> None:
    """Once per process: load llama.cpp's backends and send its logs to `logging`."""
    global _initialized
    with _INIT_LOCK:
        if _initialized:
            return
        llama_cpp.llama_log_set(_log_to_logging, ctypes.c_void_p(0))
        llama_cpp.llama_backend_init()
        if _reg_count() == 0:
            # a build with dynamically loaded backends (GGML_BACKEND_DL, the image's): the best
            # CPU variant for this CPU and any GPU backend, from beside libllama
            _load_all_backends_from(str(LIBRARY_DIR).encode())
        _initialized = True


@dataclass(frozen=True)
class BackendDevice:
    """One ggml backend device of this llama.cpp build."""

    name: str
    """`CPU`, `CUDA0`, `Vulkan0`, `MTL0`, `HTP0`, …"""
    description: str
    kind: str
    """`cpu`, `gpu`, `igpu` or `accel`."""
    handle: int


def backend_devices() -> list[BackendDevice]:
    """Every device this build of llama.cpp can run on."""
    init_runtime()
    devices = []
    for index in range(_dev_count()):
        handle = _dev_get(index)
        devices.append(
            BackendDevice(
                name=_dev_name(handle).decode(),
                description=(_dev_description(handle) or b"").decode(),
                kind=GGML_DEVICE_KINDS.get(_dev_type(handle), "other"),
                handle=handle,
            )
        )
    return devices


def built_backends() -> set[str]:
    """The ggml backends this llama-cpp-python was built with (`cpu`, `cuda`, `vulkan`, …), by
    their libraries beside libllama: one whose device is missing (no driver, no GPU) registers
    no device but still has its library."""
    return {
        match[1]
        for path in LIBRARY_DIR.glob("libggml-*")
        if (match := BACKEND_LIBRARY.match(path.name)) and match[1] != "base"
    }


def system_features() -> frozenset[str]:
    """What this llama.cpp build found and uses, as `llama_print_system_info` marks it `= 1`:
    its CPU backend's instruction sets (`AVX2`, `AVX512_BF16`, `NEON`, …) and the like."""
    init_runtime()
    return frozenset(SYSTEM_FEATURE.findall(llama_cpp.llama_print_system_info().decode()))
