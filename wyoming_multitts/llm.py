"""The one wrapper around llama-cpp-python: load a GGUF on a device, evaluate tokens, read logits.

Three kinds of context: a decoder fed token ids (`decode` → logits), a decoder fed embedding
rows that also returns its final hidden state (`hidden_states=True`, `decode_embeddings` →
logits and hidden state; the Qwen3-TTS talker as a stock `qwen3` GGUF), and an encoder
(`embeddings=True`, `encode` → one row per token; the WavTokenizer vocoder). A decoder fed token
ids also takes embedding rows (`decode_rows` → logits), for a model whose prompt tokens are not
in its own vocabulary: the Orpheus reduced output head reads them from the original GGUF with
`TokenRows`, exactly as llama.cpp would.

We use llama.cpp's C API through llama-cpp-python's ctypes bindings rather than its `Llama`
class: engines need raw logits per step (they sample themselves, over a few thousand candidate
tokens), exact control of the KV cache, and no stdout/stderr redirection while the server may be
writing to stdout. Native objects are owned by an `ExitStack` and freed in reverse order.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import mmap
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

import llama_cpp
import numpy as np
from llama_cpp import _ggml

from .errors import LlamaError
from .formats.gguf import read_gguf_tensors

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
SEQUENCE = 0
"""The one sequence id every batch and KV-cache call uses (a context holds one sequence)."""
GGML_TYPE_F32 = 0
"""`enum ggml_type` of float32, whose rows are copied as they are (it has no `to_float`)."""
SYSTEM_FEATURE = re.compile(r"(\w+) = 1\b")
"""A feature this llama.cpp build uses, as `llama_print_system_info` lists them (`AVX2 = 1`)."""
BACKEND_LIBRARY = re.compile(r"libggml-(\w+)\.(?:so|dylib|dll)")
"""A ggml backend's library (`libggml-cuda.so.0`; `libggml-base` holds no backend)."""
TOKEN_EMBD = "token_embd.weight"
"""The embedding matrix of every llama.cpp language model (`LLM_TENSOR_TOKEN_EMBD`)."""

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


_type_traits = _ggml_function("ggml_get_type_traits", ctypes.POINTER(_TypeTraits), [ctypes.c_int])
_ToFloat = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
"""`ggml_to_float_t`: (const void * x, float * y, int64_t k)."""
_quantize_chunk = _ggml_function(
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
_quantize_requires_imatrix = _ggml_function(
    "ggml_quantize_requires_imatrix", ctypes.c_bool, [ctypes.c_int]
)
GGML_ACTIVATION_TYPES = frozenset({9, 15})
"""Q8_1 and Q8_K (`enum ggml_type`): what ggml converts activations to, never weights;
`ggml_quantize_chunk` has no case for them and aborts the process."""


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


def built_backends() -> set[str]:
    """The ggml backends this llama-cpp-python was built with (`cpu`, `cuda`, `vulkan`, …), by
    their libraries beside libllama: one whose device is missing (no driver, no GPU) registers
    no device but still has its library."""
    lib_dir = Path(llama_cpp.__file__).parent / "lib"
    return {
        match[1]
        for path in lib_dir.glob("libggml-*")
        if (match := BACKEND_LIBRARY.match(path.name)) and match[1] != "base"
    }


def system_features() -> frozenset[str]:
    """What this llama.cpp build found and uses, as `llama_print_system_info` marks it `= 1`:
    its CPU backend's instruction sets (`AVX2`, `AVX512_BF16`, `NEON`, …) and the like."""
    init_runtime()
    return frozenset(SYSTEM_FEATURE.findall(llama_cpp.llama_print_system_info().decode()))


def place_on_device(params: Any, llama_device: str, path: Path) -> ctypes.Array:
    """Set model load `params` to put every layer of `path` on backend device `llama_device`
    (`CUDA0`, …). Returns the NULL-terminated device list `params` points to, which must outlive
    the load call."""
    handle = next((d.handle for d in backend_devices() if d.name == llama_device), None)
    if handle is None:
        raise LlamaError(f"llama.cpp device {llama_device} vanished while loading {path}")
    device_list = (ctypes.c_void_p * 2)(handle, None)
    params.devices = ctypes.cast(device_list, ctypes.c_void_p)
    params.n_gpu_layers = OFFLOAD_ALL_LAYERS
    return device_list


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


class TokenRows:
    """Rows of a GGUF's embedding matrix as float32, the values llama.cpp's CPU backend makes of
    them for token ids.

    The matrix is memory-mapped (only the rows asked for are read). Each row goes through ggml's
    own `to_float` for its type, the function the CPU `get_rows` of quantized types calls; F16
    and BF16 widen exactly in both, and F32 rows are copied as `get_rows` copies them
    (docs/engines.md, "Orpheus: reduced output head"). Not thread-safe, like `LlamaModel`.
    """

    def __init__(self, path: Path, tensor: str = TOKEN_EMBD) -> None:
        """Map `tensor` of the GGUF at `path`; LlamaError when it is missing or unreadable."""
        self.path = path
        info = read_gguf_tensors(path).get(tensor)
        if info is None or len(info.dims) != 2:
            raise LlamaError(f"{path} has no 2-D tensor {tensor}; is it a language model GGUF?")
        self.n_embd, self.n_rows = info.dims
        try:
            row_bytes = ggml_row_bytes(info.ggml_type, self.n_embd)
            to_float = _traits(info.ggml_type).to_float
        except ValueError as err:
            raise LlamaError(f"{path}: {tensor}: {err}") from err
        if not to_float and info.ggml_type != GGML_TYPE_F32:
            raise LlamaError(f"{path}: ggml cannot convert the rows of {tensor} to float")
        self._to_float = _ToFloat(to_float) if to_float else None
        with open(path, "rb") as file:
            self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        size = self.n_rows * row_bytes
        if info.offset + size > len(self._map):
            self._map.close()
            raise LlamaError(f"{path} ends inside {tensor}: a truncated download? delete it")
        data = np.frombuffer(self._map, np.uint8, size, info.offset)  # (size,) the file's bytes
        self._rows: np.ndarray | None = data.reshape(self.n_rows, row_bytes)  # (n_rows, bytes)

    def __call__(self, ids: Sequence[int]) -> np.ndarray:
        """The rows of `ids`, (len(ids), n_embd) float32; LlamaError for an id out of range."""
        if self._rows is None:
            raise LlamaError(f"{self.path}: the token rows were closed")
        index = np.asarray(ids, np.int64)  # (n,)
        if index.ndim != 1 or index.size == 0:
            raise ValueError(f"token rows need a non-empty 1-D sequence of ids, got {index.shape}")
        bad = index[(index < 0) | (index >= self.n_rows)]
        if bad.size:
            raise LlamaError(f"{self.path}: token id {bad[0]} is outside its {self.n_rows} rows")
        raw = self._rows[index]  # (n, row_bytes) uint8, a copy
        if self._to_float is None:
            return raw.view(np.float32)  # (n, n_embd) float32
        rows = np.empty((index.size, self.n_embd), np.float32)  # (n, n_embd)
        for i in range(index.size):  # one call per row, as get_rows makes
            self._to_float(raw[i].ctypes.data, rows[i].ctypes.data, self.n_embd)
        return rows

    def close(self) -> None:
        """Unmap the file (idempotent)."""
        self._rows = None  # the view must go before the map can close
        self._map.close()


class LlamaPlacement(Protocol):
    """Where a model's layers go: all that llama.cpp needs of a `devices.Device`."""

    @property
    def llama_device(self) -> str | None:
        """The ggml backend device (`CUDA0`, `HTP0`, …) to offload every layer to; None: CPU."""


def flash_attention(device: LlamaPlacement) -> int:
    """llama.cpp's `flash_attn_type` for a context on `device`: off on the CPU, llama.cpp's
    choice (auto) on an accelerator.

    On the CPU, ggml's flash-attention kernel made OuteTTS 1.0 1B, 2,028 tokens deep (a cached
    speaker profile), prefill at 0.41x and decode at 0.79x the speed of plain attention on 2
    AVX2 cores (docs/benchmarks.md, "Flash attention on the CPU"). Plain attention holds a
    (context x batch x heads) float32 score matrix in the compute buffer instead: for that
    model's 2,068-token prompt in batches of 512, 143 MB more at the worker's peak."""
    if device.llama_device is None:
        return int(llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED)
    return int(llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO)


class LlamaModel:
    """One GGUF model with one context (a single sequence), on one device.

    Not thread-safe: the registry gives a model to one request at a time.
    """

    def __init__(
        self,
        path: Path,
        device: LlamaPlacement,
        *,
        n_ctx: int,
        threads: int,
        n_batch: int = DEFAULT_BATCH,
        embeddings: bool = False,
        hidden_states: bool = False,
        vocab_only: bool = False,
    ) -> None:
        """Load `path` with a context of `n_ctx` tokens.

        `embeddings=True` makes an encoder context (e.g. the WavTokenizer vocoder): `encode`
        returns one row per token and every sequence runs as one ubatch of up to `n_ctx`
        tokens, because a non-causal graph (attention, convolutions over the whole sequence)
        cannot be split; `n_batch` is then ignored. Such a context has no `decode`.

        `hidden_states=True` makes a decoder context that also returns the final hidden state
        (after the output norm, before the head) through `decode_embeddings`, which takes
        embedding rows instead of token ids. llama.cpp then outputs logits and hidden state for
        every row of a batch, so its output buffer holds n_batch x (n_vocab + n_embd) floats
        (Qwen3-TTS talker, 3072 + 1024 wide: 8 MB at n_batch 512). `decode` (token ids) still
        works on such a context and returns the logits as usual.

        `vocab_only=True` loads the vocabulary alone: no weights, no context (a tokenizer GGUF
        without tensors, like Qwen3-TTS's `text_tokenizer.gguf`). The vocabulary methods work;
        evaluating raises LlamaError; `device`, `n_ctx` and `threads` are unused.
        """
        if embeddings and hidden_states:
            raise ValueError("embeddings (encoder) and hidden_states (decoder) exclude each other")
        if vocab_only and (embeddings or hidden_states):
            raise ValueError(
                "vocab_only loads no weights: it excludes embeddings and hidden_states"
            )
        init_runtime()
        self.path = path
        self.n_ctx = n_ctx
        self.embeddings = embeddings
        self.hidden_states = hidden_states
        self.vocab_only = vocab_only
        self.n_batch = n_ctx if embeddings else n_batch
        self._stack = contextlib.ExitStack()
        self._embd_batch: Any = None
        """The batch of `decode_embeddings` and `decode_rows` (token = NULL, embd = rows)."""
        try:
            self._model = self._load_model(path, device, vocab_only)
            self._stack.callback(llama_cpp.llama_model_free, self._model)
            self.n_embd: int = llama_cpp.llama_model_n_embd(self._model)
            """Hidden size: the width of a `decode_embeddings` row and of the hidden state."""
            self._ctx = None if vocab_only else self._create_context(n_ctx, threads, device)
        except BaseException:
            self._stack.close()
            raise
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        # NULL for cache-less encoders; None without a context (vocab_only)
        self._memory = None if vocab_only else llama_cpp.llama_get_memory(self._ctx)
        self.n_vocab: int = llama_cpp.llama_vocab_n_tokens(self._vocab)
        self.has_tokenizer = (
            llama_cpp.llama_vocab_type(self._vocab) != llama_cpp.LLAMA_VOCAB_TYPE_NONE
        )
        """False for models without a vocabulary (the vocoder): no tokenize, no token text."""
        self.n_embd_out: int = llama_cpp.llama_model_n_embd_out(self._model)
        """Width of one `encode` row (WavTokenizer: 1282, a spectrum frame)."""
        self.n_past = 0
        """Tokens in the KV cache (positions 0 … n_past-1)."""
        if embeddings:
            self._prepare_encoder_batch()

    def _create_context(self, n_ctx: int, threads: int, device: LlamaPlacement) -> Any:
        """The context (one sequence) and the batches of a model that evaluates; owned by the
        stack."""
        path = self.path
        embeddings, hidden_states = self.embeddings, self.hidden_states
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = self.n_batch
        params.n_ubatch = self.n_batch
        params.n_threads = threads
        params.n_threads_batch = threads
        params.flash_attn_type = flash_attention(device)
        if embeddings:
            params.embeddings = True
            params.pooling_type = llama_cpp.LLAMA_POOLING_TYPE_NONE  # one row per token
            params.n_outputs_max = self.n_batch  # every token outputs
        elif hidden_states:
            params.embeddings = True  # read t_embd (the normed hidden state) as well
            params.pooling_type = llama_cpp.LLAMA_POOLING_TYPE_NONE  # one row per position
            # with embeddings on, llama.cpp makes every row of a batch an output (it
            # aborts when they outnumber n_outputs_max), even though we read the last only
            params.n_outputs_max = self.n_batch
        else:
            # we read the last token's logits only: saves n_batch x n_vocab floats
            params.n_outputs_max = 1
        params.no_perf = True
        context = llama_cpp.llama_init_from_model(self._model, params)
        if not context:
            raise LlamaError(
                f"llama.cpp could not create a context of {n_ctx} tokens for "
                f"{path} (out of memory?); see the llama.cpp log lines above"
            )
        self._stack.callback(llama_cpp.llama_free, context)

        self._batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        self._stack.callback(llama_cpp.llama_batch_free, self._batch)

        if hidden_states:
            self._add_embedding_batch()
        return context

    def _add_embedding_batch(self) -> None:
        """The batch for embedding rows (token = NULL, embd = n_batch rows of n_embd floats)."""
        self._check_plain_widths()
        self._embd_batch = llama_cpp.llama_batch_init(self.n_batch, self.n_embd, 1)
        self._stack.callback(llama_cpp.llama_batch_free, self._embd_batch)
        self._prepare_embedding_batch()

    def _check_plain_widths(self) -> None:
        """Input rows, hidden size and output rows must all be n_embd wide.

        Deepstack models (qwen3vl) take wider input rows than their hidden size; nothing here
        needs them, and a wrong row width would make llama.cpp read past our buffer.
        """
        n_in = llama_cpp.llama_model_n_embd_inp(self._model)
        n_out = llama_cpp.llama_model_n_embd_out(self._model)
        if not n_in == self.n_embd == n_out:
            raise LlamaError(
                f"{self.path} takes {n_in}-wide input rows and returns "
                f"{n_out}-wide hidden states for a hidden size of {self.n_embd}; "
                "embedding-row input supports models where all three are equal (qwen3, llama)"
            )

    @staticmethod
    def _load_model(path: Path, device: LlamaPlacement, vocab_only: bool) -> ctypes.c_void_p:
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = vocab_only
        # Read the weights rather than map them. The CPU backend repacks the common quantized
        # types (Q4_K, Q4_0, Q8_0, … on AVX2 and ARM) into buffers of its own, and every mapped
        # page it read to do so stayed resident beside the copy: Orpheus 3B Q4_K_M held 3.1 GB
        # mapped against 1.8 GB read (docs/benchmarks.md, "Resident memory").
        params.load_mode = llama_cpp.LLAMA_LOAD_MODE_NONE
        # The device list must outlive the load call: keep it in a local until it returns.
        device_list = None
        if device.llama_device is None or vocab_only:
            params.n_gpu_layers = 0
        else:
            device_list = place_on_device(params, device.llama_device, path)
        _LOGGER.debug("Loading %s on %s", path, device.llama_device or "CPU")
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
        del device_list
        if not model:
            raise LlamaError(
                f"llama.cpp could not load {path}: not a GGUF file, a truncated "
                "download, or an architecture this llama-cpp-python is too old for (see the "
                "llama.cpp log lines above; delete the file to download it again)"
            )
        return model

    def metadata(self, key: str) -> str | None:
        """A GGUF metadata value as text (`general.architecture`, …); None when absent."""
        size = 256
        while True:
            buffer = ctypes.create_string_buffer(size)
            length = llama_cpp.llama_model_meta_val_str(self._model, key.encode(), buffer, size)
            if length < 0:
                return None
            if length < size:
                return buffer.value.decode("utf-8", errors="replace")
            size = length + 1

    # ---- vocabulary
    #
    # llama.cpp aborts the whole process (GGML_ASSERT, or a C++ exception crossing the C API)
    # when asked to tokenize without a tokenizer or for the attributes of an id it does not
    # have; every method here checks first and raises LlamaError instead.

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        """Token ids of `text` (no BOS). `special=False` keeps control tokens out of user text."""
        self._check_tokenizer("tokenize text")
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
        self._check_token(token, "read the text of")
        return llama_cpp.llama_vocab_get_text(self._vocab, token).decode("utf-8", errors="replace")

    def special_token(self, text: str) -> int:
        """The id of a special token by its text; `LlamaError` when the vocabulary lacks it."""
        ids = self.tokenize(text, special=True)
        if len(ids) != 1:
            raise LlamaError(f"{self.path}: the vocabulary has no single token {text!r}")
        return ids[0]

    def is_control(self, token: int) -> bool:
        """Whether `token` is a control token (`<|im_start|>`, `<|audio_end|>`, …)."""
        self._check_token(token, "classify")
        return bool(llama_cpp.llama_vocab_is_control(self._vocab, token))

    def is_end_of_generation(self, token: int) -> bool:
        """Whether `token` ends generation (EOS, EOT and the model's other stop tokens)."""
        self._check_token(token, "classify")
        return bool(llama_cpp.llama_vocab_is_eog(self._vocab, token))

    def _check_tokenizer(self, action: str) -> None:
        if not self.has_tokenizer:
            raise LlamaError(
                f"{self.path} has no tokenizer (vocabulary type none), so it "
                f"cannot {action}; is the catalog's file role right?"
            )

    def _check_token(self, token: int, action: str) -> None:
        self._check_tokenizer(f"{action} a token")
        if not 0 <= token < self.n_vocab:
            raise LlamaError(
                f"{self.path}: token id {token} is outside its vocabulary " f"0..{self.n_vocab - 1}"
            )

    # ---- evaluation

    def reset(self) -> None:
        """Forget everything evaluated (empty KV cache)."""
        self._check_evaluates()
        llama_cpp.llama_memory_clear(self._memory, True)
        self.n_past = 0

    def keep_prefix(self, n_tokens: int) -> None:
        """Forget every cached position from `n_tokens` on; the first `n_tokens` stay cached.

        A prompt prefix shared by many requests (an OuteTTS speaker profile: 1000+ tokens) is
        then evaluated once: `keep_prefix(len(prefix))` before each request, then `decode` the
        rest, which continues at position `n_tokens`.
        """
        if not 0 <= n_tokens <= self.n_past:
            raise ValueError(f"keep_prefix({n_tokens}): only {self.n_past} tokens are cached")
        if n_tokens == self.n_past:
            return
        if not llama_cpp.llama_memory_seq_rm(self._memory, SEQUENCE, n_tokens, -1):
            self.reset()  # the cache may be half-trimmed: start from nothing rather than garbage
            raise LlamaError(
                f"{self.path}: llama.cpp cannot drop part of this model's memory "
                f"(recurrent state?); the cache was cleared instead of keeping {n_tokens} tokens"
            )
        self.n_past = n_tokens

    def decode(self, tokens: Sequence[int]) -> np.ndarray:
        """Evaluate `tokens` after what is cached; the logits (n_vocab,) after the last one.

        The array is a view into llama.cpp's buffer, valid until the next `decode` or
        `decode_embeddings`. Works on a `hidden_states=True` context too (same logits).
        """
        self._check_evaluates()
        if self.embeddings:
            raise LlamaError(f"{self.path} is loaded as an encoder: use encode")
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
                batch.seq_id[i][0] = SEQUENCE
                # a hidden-states context outputs every token anyway (llama.cpp overrides us)
                batch.logits[i] = self.hidden_states or i == len(part) - 1
            status = llama_cpp.llama_decode(self._ctx, batch)
            if status != 0:
                raise LlamaError(f"{self.path}: llama_decode failed with status {status}")
            self.n_past += len(part)
        logits = llama_cpp.llama_get_logits_ith(self._ctx, -1)
        return np.ctypeslib.as_array(logits, shape=(self.n_vocab,))  # (n_vocab,) float32 view

    def _check_evaluates(self) -> None:
        if self.vocab_only:
            raise LlamaError(f"{self.path} is loaded vocabulary-only: it cannot evaluate")

    def _prepare_embedding_batch(self) -> None:
        """Fill the embedding batch's fixed fields once: sequence 0, an output per row."""
        batch = self._embd_batch
        size = self.n_batch
        np.ctypeslib.as_array(batch.n_seq_id, shape=(size,))[:] = 1
        # llama.cpp outputs every row when embeddings are on; say so rather than rely on it
        # (`_evaluate_rows` flags the last row only on a plain context)
        self._batch_outputs = np.ctypeslib.as_array(batch.logits, shape=(size,))  # (n_batch,) int8
        self._batch_outputs[:] = 1
        for i in range(size):
            batch.seq_id[i][0] = SEQUENCE
        self._batch_rows = np.ctypeslib.as_array(batch.embd, shape=(size, self.n_embd))
        self._batch_pos = np.ctypeslib.as_array(batch.pos, shape=(size,))  # (n_batch,) int32

    def decode_embeddings(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Evaluate embedding rows (n, n_embd) float32 after what is cached, one position each.

        Returns copies of the logits (n_vocab,) and of the final hidden state (n_embd,), after
        the output norm, of the last row. Rows are evaluated n_batch at a time. Everything
        llama.cpp would abort on or reject (wrong width or dtype, NaN, a full context) raises
        LlamaError before it is called.
        """
        if not self.hidden_states:
            raise LlamaError(
                f"{self.path} was not loaded for embedding input " "(hidden_states=True)"
            )
        self._check_rows(rows)
        self._evaluate_rows(rows)
        logits = llama_cpp.llama_get_logits_ith(self._ctx, -1)
        hidden = llama_cpp.llama_get_embeddings_ith(self._ctx, -1)
        if not logits or not hidden:
            raise LlamaError(f"{self.path}: llama.cpp returned no logits or hidden state")
        return (
            np.ctypeslib.as_array(logits, shape=(self.n_vocab,)).copy(),  # (n_vocab,) float32
            np.ctypeslib.as_array(hidden, shape=(self.n_embd,)).copy(),  # (n_embd,) float32
        )

    def decode_rows(self, rows: np.ndarray) -> np.ndarray:
        """Evaluate embedding rows (n, n_embd) float32 after what is cached, one position each;
        the logits (n_vocab,) after the last one, a view as from `decode`.

        `decode` with the input rows given instead of looked up: for prompt tokens that are
        not in this model's vocabulary (the Orpheus reduced head takes them from the original
        GGUF with `TokenRows`). Works on any decoder context; one without hidden_states
        allocates its batch of n_batch x n_embd floats on first use. Rows are checked as in
        `decode_embeddings`.
        """
        self._check_evaluates()
        if self.embeddings:
            raise LlamaError(f"{self.path} is loaded as an encoder: use encode")
        if self._embd_batch is None:
            self._add_embedding_batch()
        self._check_rows(rows)
        self._evaluate_rows(rows)
        logits = llama_cpp.llama_get_logits_ith(self._ctx, -1)
        if not logits:
            raise LlamaError(f"{self.path}: llama.cpp returned no logits")
        return np.ctypeslib.as_array(logits, shape=(self.n_vocab,))  # (n_vocab,) float32 view

    def _evaluate_rows(self, rows: np.ndarray) -> None:
        """Run checked `rows` through llama_decode, n_batch at a time, after what is cached."""
        batch = self._embd_batch
        for start in range(0, rows.shape[0], self.n_batch):
            part = rows[start : start + self.n_batch]  # (m, n_embd)
            n_part = part.shape[0]
            self._batch_rows[:n_part] = part
            self._batch_pos[:n_part] = np.arange(self.n_past, self.n_past + n_part)
            if not self.hidden_states:  # we read the last row's logits only (n_outputs_max 1)
                self._batch_outputs[:n_part] = 0
                self._batch_outputs[n_part - 1] = 1
            batch.n_tokens = n_part
            status = llama_cpp.llama_decode(self._ctx, batch)
            if status != 0:
                raise LlamaError(f"{self.path}: llama_decode failed with status {status}")
            self.n_past += n_part

    def _check_rows(self, rows: np.ndarray) -> None:
        """LlamaError unless `rows` is a finite (n >= 1, n_embd) float32 array that fits."""
        if not isinstance(rows, np.ndarray) or rows.dtype != np.float32:
            kind = rows.dtype if isinstance(rows, np.ndarray) else type(rows).__name__
            raise LlamaError(f"{self.path}: embedding rows must be a float32 array, not {kind}")
        if rows.ndim != 2 or rows.shape[0] == 0 or rows.shape[1] != self.n_embd:
            raise LlamaError(
                f"{self.path}: embedding rows must have shape (n >= 1, {self.n_embd}) for "
                f"{self.path}, got {rows.shape}"
            )
        if not np.isfinite(rows).all():
            raise LlamaError(f"{self.path}: embedding rows contain NaN or infinity")
        if self.n_past + rows.shape[0] > self.n_ctx:
            raise LlamaError(
                f"{self.path}: context of {self.n_ctx} tokens is full "
                f"({self.n_past} cached + {rows.shape[0]} new)"
            )

    def _prepare_encoder_batch(self) -> None:
        """Fill the batch's fixed fields once: position i, sequence 0, an output per token."""
        batch = self._batch
        size = self.n_batch
        np.ctypeslib.as_array(batch.pos, shape=(size,))[:] = np.arange(size)
        np.ctypeslib.as_array(batch.n_seq_id, shape=(size,))[:] = 1
        np.ctypeslib.as_array(batch.logits, shape=(size,))[:] = 1
        for i in range(size):
            batch.seq_id[i][0] = SEQUENCE
        self._batch_tokens = np.ctypeslib.as_array(batch.token, shape=(size,))  # (n_batch,) int32

    def encode(self, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        """Run the encoder over `tokens` as one sequence; rows (T, n_embd_out) float32, a copy.

        Checked here because llama.cpp aborts the process (GGML_ASSERT "encoder requires
        n_ubatch >= n_tokens") for a sequence longer than the context, and rejects ids outside
        the vocabulary: both raise LlamaError before llama.cpp is called.
        """
        if not self.embeddings:
            raise LlamaError(f"{self.path} was not loaded as an encoder (embeddings=True)")
        ids = np.asarray(tokens)
        if ids.ndim != 1 or ids.size == 0:
            raise ValueError(f"encode needs a non-empty 1-D sequence of ids, got shape {ids.shape}")
        if ids.dtype.kind not in "iu":
            raise ValueError(f"encode needs integer ids, got {ids.dtype}")
        if ids.size > self.n_batch:
            raise LlamaError(
                f"{self.path}: {ids.size} tokens do not fit the encoder's "
                f"{self.n_batch}-token context; encode longer sequences in windows"
            )
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= self.n_vocab:
            bad = low if low < 0 else high
            raise LlamaError(
                f"{self.path}: id {bad} is outside the model's range " f"0..{self.n_vocab - 1}"
            )
        n_tokens = int(ids.size)
        self._batch_tokens[:n_tokens] = ids
        self._batch.n_tokens = n_tokens
        status = llama_cpp.llama_encode(self._ctx, self._batch)
        if status != 0:
            raise LlamaError(f"{self.path}: llama_encode failed with status {status}")
        rows = llama_cpp.llama_get_embeddings(self._ctx)
        if not rows:
            raise LlamaError(f"{self.path}: llama.cpp returned no embeddings after encode")
        shape = (n_tokens, self.n_embd_out)
        return np.ctypeslib.as_array(rows, shape=shape).copy()  # (T, n_embd_out) float32

    def close(self) -> None:
        """Free the context and the model (idempotent)."""
        self._stack.close()
