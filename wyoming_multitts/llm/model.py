"""A GGUF language model on a device with one context: load it, read its vocabulary, evaluate
tokens or embedding rows, read logits.

Three kinds of context: a decoder fed token ids (`decode` → logits), a decoder fed embedding
rows that also returns its final hidden state (`hidden_states=True`, `decode_embeddings` →
logits and hidden state; the Qwen3-TTS talker as a stock `qwen3` GGUF), and an encoder
(`embeddings=True`, `encode` → one row per token; the WavTokenizer vocoder). A decoder fed token
ids also takes embedding rows (`decode_rows` → logits), for a model whose prompt tokens are not
in its own vocabulary (`token_rows.TokenRows`).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
from pathlib import Path
from typing import Any, Protocol, Sequence

import llama_cpp
import numpy as np

from ..errors import LlamaError
from ..formats.gguf import ARCHITECTURES
from .added_tokens import AddedTokenTexts
from .batches import SEQUENCE, EncoderBatch, RowBatch, TokenBatch
from .build import backend_devices, init_runtime

_LOGGER = logging.getLogger(__name__)

OFFLOAD_ALL_LAYERS = 999
"""`n_gpu_layers` that puts every layer on the chosen device (llama.cpp caps it at n_layer)."""
DEFAULT_BATCH = 512
"""Tokens evaluated per `llama_decode` call during prefill (llama.cpp's default n_batch)."""
KERNEL_CHECK_TOKENS = 8
"""Tokens a decoder evaluates once at load, then forgets. Several tokens at once take the matrix
kernels of a prompt (ggml's AMX and repacked kernels have separate paths for one row and for
several), so a kernel this CPU refuses (SIGILL) fails the load, not the first request."""


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
        self._tokens: TokenBatch | None = None
        self._rows: RowBatch | None = None
        """The batch of `decode_embeddings` and `decode_rows`, made on first use."""
        self._encoder: EncoderBatch | None = None
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
        self._added_texts = AddedTokenTexts(self._user_defined_texts())
        self.n_embd_out: int = llama_cpp.llama_model_n_embd_out(self._model)
        """Width of one `encode` row (WavTokenizer: 1282, a spectrum frame)."""
        self.n_past = 0
        """Tokens in the KV cache (positions 0 … n_past-1)."""
        if not (vocab_only or embeddings):
            self._check_kernels()

    def _check_kernels(self) -> None:
        """Evaluate `KERNEL_CHECK_TOKENS` tokens once and forget them (see there). Only for the
        language-model architectures we decode: another model in a decoder's place (a vocoder
        GGUF given as the model) is the engine's to reject, and decoding it aborts llama.cpp."""
        if self.metadata("general.architecture") not in ARCHITECTURES:
            return
        self.decode(range(min(KERNEL_CHECK_TOKENS, self.n_vocab)))
        self.reset()

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
        if embeddings:
            self._encoder = EncoderBatch(self.n_batch, self._stack)
        else:
            self._tokens = TokenBatch(self.n_batch, hidden_states, self._stack)
        if hidden_states:
            self._add_row_batch()
        return context

    def _add_row_batch(self) -> RowBatch:
        """The batch for embedding rows (n_batch rows of n_embd floats)."""
        self._check_plain_widths()
        self._rows = RowBatch(self.n_batch, self.n_embd, self.hidden_states, self._stack)
        return self._rows

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

    def _user_defined_texts(self) -> list[str]:
        """The spellings of the vocabulary's user-defined tokens (none without a tokenizer)."""
        if not self.has_tokenizer:
            return []
        user_defined = llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
        return [
            llama_cpp.llama_vocab_get_text(self._vocab, token).decode("utf-8", errors="replace")
            for token in range(self.n_vocab)
            if llama_cpp.llama_vocab_get_attr(self._vocab, token) & user_defined
        ]

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        """Token ids of `text` (no BOS). `special=False` tokenizes it as plain text: neither a
        control token nor an added one (`added_tokens`) comes out of user text."""
        self._check_tokenizer("tokenize text")
        if special or not self._added_texts:
            return self._tokenize(text, special)
        return [
            token
            for piece in self._added_texts.pieces(text)
            for token in self._tokenize(piece, False)
        ]

    def _tokenize(self, text: str, special: bool) -> list[int]:
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
        assert self._tokens is not None  # every decoder context has it
        for start in range(0, len(tokens), self.n_batch):
            part = tokens[start : start + self.n_batch]
            self._tokens.decode(self._ctx, part, self.n_past, self.path)
            self.n_past += len(part)
        logits = llama_cpp.llama_get_logits_ith(self._ctx, -1)
        return np.ctypeslib.as_array(logits, shape=(self.n_vocab,))  # (n_vocab,) float32 view

    def _check_evaluates(self) -> None:
        if self.vocab_only:
            raise LlamaError(f"{self.path} is loaded vocabulary-only: it cannot evaluate")

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
        self._evaluate_rows(rows, self._rows or self._add_row_batch())
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
        row_batch = self._rows or self._add_row_batch()
        self._check_rows(rows)
        self._evaluate_rows(rows, row_batch)
        logits = llama_cpp.llama_get_logits_ith(self._ctx, -1)
        if not logits:
            raise LlamaError(f"{self.path}: llama.cpp returned no logits")
        return np.ctypeslib.as_array(logits, shape=(self.n_vocab,))  # (n_vocab,) float32 view

    def _evaluate_rows(self, rows: np.ndarray, batch: RowBatch) -> None:
        """Run checked `rows` through llama_decode, n_batch at a time, after what is cached."""
        for start in range(0, rows.shape[0], self.n_batch):
            part = rows[start : start + self.n_batch]  # (m, n_embd)
            batch.decode(self._ctx, part, self.n_past, self.path)
            self.n_past += part.shape[0]

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

    def encode(self, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        """Run the encoder over `tokens` as one sequence; rows (T, n_embd_out) float32, a copy.

        Checked here because llama.cpp aborts the process (GGML_ASSERT "encoder requires
        n_ubatch >= n_tokens") for a sequence longer than the context, and rejects ids outside
        the vocabulary: both raise LlamaError before llama.cpp is called.
        """
        if self._encoder is None:
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
        self._encoder.encode(self._ctx, ids, self.path)
        rows = llama_cpp.llama_get_embeddings(self._ctx)
        if not rows:
            raise LlamaError(f"{self.path}: llama.cpp returned no embeddings after encode")
        shape = (n_tokens, self.n_embd_out)
        return np.ctypeslib.as_array(rows, shape=shape).copy()  # (T, n_embd_out) float32

    def close(self) -> None:
        """Free the context and the model (idempotent)."""
        self._stack.close()
