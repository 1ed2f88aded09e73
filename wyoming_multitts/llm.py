"""The one wrapper around llama-cpp-python: load a GGUF on a device, evaluate tokens, read logits.

We use llama.cpp's C API through llama-cpp-python's ctypes bindings rather than its `Llama`
class: engines need raw logits per step (they sample themselves, over a few thousand candidate
tokens), exact control of the KV cache, and no stdout/stderr redirection while the server may be
writing to stdout. Native objects are owned by an `ExitStack` and freed in reverse order.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import llama_cpp
import numpy as np
from llama_cpp import _ggml

from .devices import Device
from .errors import VoiceError

_LOGGER = logging.getLogger(__name__)
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
OFFLOAD_ALL_LAYERS = 999
"""`n_gpu_layers` that puts every layer on the chosen device (llama.cpp caps it at n_layer)."""
DEFAULT_BATCH = 512
"""Tokens evaluated per `llama_decode` call during prefill (llama.cpp's default n_batch)."""

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


def _ggml_function(name: str, restype: Any, argtypes: list[Any]) -> Any:
    function = getattr(_ggml.libggml, name)
    function.restype = restype
    function.argtypes = argtypes
    return function


_dev_count = _ggml_function("ggml_backend_dev_count", ctypes.c_size_t, [])
_dev_get = _ggml_function("ggml_backend_dev_get", ctypes.c_void_p, [ctypes.c_size_t])
_dev_name = _ggml_function("ggml_backend_dev_name", ctypes.c_char_p, [ctypes.c_void_p])
_dev_description = _ggml_function(
    "ggml_backend_dev_description", ctypes.c_char_p, [ctypes.c_void_p]
)
_dev_type = _ggml_function("ggml_backend_dev_type", ctypes.c_int, [ctypes.c_void_p])
_reg_count = _ggml_function("ggml_backend_reg_count", ctypes.c_size_t, [])
_load_all_backends = _ggml_function("ggml_backend_load_all", None, [])


def init_runtime() -> None:
    """Once per process: load llama.cpp's backends and send its logs to `logging`."""
    global _initialized
    with _INIT_LOCK:
        if _initialized:
            return
        llama_cpp.llama_log_set(_log_to_logging, ctypes.c_void_p(0))
        llama_cpp.llama_backend_init()
        if _reg_count() == 0:  # builds with dynamically loaded backends (GGML_BACKEND_DL)
            _load_all_backends()
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


class LlamaError(VoiceError):
    """llama.cpp refused a model or a step; the message names the file and what to check."""


class LlamaModel:
    """One GGUF model with one context (a single sequence), on one device.

    Not thread-safe: the registry gives a model to one request at a time.
    """

    def __init__(
        self,
        path: Path,
        device: Device,
        *,
        n_ctx: int,
        threads: int,
        where: str,
        n_batch: int = DEFAULT_BATCH,
    ) -> None:
        init_runtime()
        self.path = path
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self._stack = contextlib.ExitStack()
        try:
            self._model = self._load_model(path, device, where)
            self._stack.callback(llama_cpp.llama_model_free, self._model)

            params = llama_cpp.llama_context_default_params()
            params.n_ctx = n_ctx
            params.n_batch = n_batch
            params.n_ubatch = n_batch
            params.n_threads = threads
            params.n_threads_batch = threads
            params.n_outputs_max = (
                1  # we read the last token's logits only: saves n_batch x n_vocab floats
            )
            params.no_perf = True
            self._ctx = llama_cpp.llama_init_from_model(self._model, params)
            if not self._ctx:
                raise LlamaError(
                    f"{where}: llama.cpp could not create a context of {n_ctx} tokens for "
                    f"{path} (out of memory?); see the llama.cpp log lines above"
                )
            self._stack.callback(llama_cpp.llama_free, self._ctx)

            self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
            self._stack.callback(llama_cpp.llama_batch_free, self._batch)
        except BaseException:
            self._stack.close()
            raise
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self.n_vocab: int = llama_cpp.llama_vocab_n_tokens(self._vocab)
        self.n_past = 0
        """Tokens in the KV cache (positions 0 … n_past-1)."""

    @staticmethod
    def _load_model(path: Path, device: Device, where: str) -> ctypes.c_void_p:
        params = llama_cpp.llama_model_default_params()
        # The device list must outlive the load call: keep it in a local until it returns.
        device_list = None
        if device.llama_device is None:
            params.n_gpu_layers = 0
        else:
            handle = next(
                (d.handle for d in backend_devices() if d.name == device.llama_device), None
            )
            if handle is None:
                raise LlamaError(f"{where}: llama.cpp device {device.llama_device} vanished")
            device_list = (ctypes.c_void_p * 2)(handle, None)  # NULL-terminated
            params.devices = ctypes.cast(device_list, ctypes.c_void_p)
            params.n_gpu_layers = OFFLOAD_ALL_LAYERS
        _LOGGER.debug("Loading %s on %s", path, device.llama_device or "CPU")
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
        del device_list
        if not model:
            raise LlamaError(
                f"{where}: llama.cpp could not load {path}: not a GGUF file, a truncated "
                "download, or an architecture this llama-cpp-python is too old for (see the "
                "llama.cpp log lines above; delete the file to download it again)"
            )
        return model

    # ---- vocabulary

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        """Token ids of `text` (no BOS). `special=False` keeps control tokens out of user text."""
        data = text.encode("utf-8")
        capacity = len(data) + 8
        tokens = (llama_cpp.llama_token * capacity)()
        count = llama_cpp.llama_tokenize(
            self._vocab, data, len(data), tokens, capacity, False, special
        )
        if count < 0:  # buffer too small: -count is the size needed
            capacity = -count
            tokens = (llama_cpp.llama_token * capacity)()
            count = llama_cpp.llama_tokenize(
                self._vocab, data, len(data), tokens, capacity, False, special
            )
        return list(tokens[:count])

    def token_text(self, token: int) -> str:
        """The text of one token, special tokens included (e.g. `<custom_token_10>`)."""
        return llama_cpp.llama_vocab_get_text(self._vocab, token).decode("utf-8", errors="replace")

    def special_token(self, text: str) -> int:
        """The id of a special token by its text; `LlamaError` when the vocabulary lacks it."""
        ids = self.tokenize(text, special=True)
        if len(ids) != 1:
            raise LlamaError(f"{self.path}: the vocabulary has no single token {text!r}")
        return ids[0]

    # ---- evaluation

    def reset(self) -> None:
        """Forget everything evaluated (empty KV cache)."""
        llama_cpp.llama_memory_clear(self._memory, True)
        self.n_past = 0

    def decode(self, tokens: Sequence[int]) -> np.ndarray:
        """Evaluate `tokens` after what is cached; the logits (n_vocab,) after the last one.

        The array is a view into llama.cpp's buffer, valid until the next `decode`.
        """
        if not tokens:
            raise ValueError("decode needs at least one token")
        if self.n_past + len(tokens) > self.n_ctx:
            raise LlamaError(
                f"{self.path}: context of {self.n_ctx} tokens is full "
                f"({self.n_past} cached + {len(tokens)} new)"
            )
        batch = self._batch
        for start in range(0, len(tokens), self.n_batch):
            part = tokens[start : start + self.n_batch]
            batch.n_tokens = len(part)
            for i, token in enumerate(part):
                batch.token[i] = token
                batch.pos[i] = self.n_past + i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = i == len(part) - 1
            status = llama_cpp.llama_decode(self._ctx, batch)
            if status != 0:
                raise LlamaError(f"{self.path}: llama_decode failed with status {status}")
            self.n_past += len(part)
        logits = llama_cpp.llama_get_logits_ith(self._ctx, -1)
        return np.ctypeslib.as_array(logits, shape=(self.n_vocab,))  # (n_vocab,) float32 view

    def close(self) -> None:
        """Free the context and the model (idempotent)."""
        self._stack.close()


def gguf_kv_cache_bytes(path: Path, n_ctx: int, where: str) -> int:
    """Bytes of an f16 KV cache of `n_ctx` tokens for the GGUF at `path` (read from its header)."""
    import gguf

    try:
        reader = gguf.GGUFReader(path)
    except (ValueError, OSError) as err:
        raise LlamaError(
            f"{where}: {path} is not a readable GGUF file ({err}); delete it to download it "
            "again, or fix the catalog's path"
        ) from err
    arch = _gguf_value(reader, "general.architecture")
    n_layer = int(_gguf_value(reader, f"{arch}.block_count"))
    n_embd = int(_gguf_value(reader, f"{arch}.embedding_length"))
    n_head = int(_gguf_value(reader, f"{arch}.attention.head_count"))
    n_head_kv = int(_gguf_value(reader, f"{arch}.attention.head_count_kv", n_head))
    head_dim = int(_gguf_value(reader, f"{arch}.attention.key_length", n_embd // n_head))
    bytes_per_value = 2  # f16 K and V, llama.cpp's default cache type
    return 2 * n_layer * n_ctx * n_head_kv * head_dim * bytes_per_value


def _gguf_value(reader: Any, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    if field is None:
        if default is None:
            raise LlamaError(f"GGUF metadata lacks {key}")
        return default
    return field.contents()
