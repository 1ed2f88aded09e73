"""Whisper, as far as forced alignment needs it: the log-mel front end, the encoder and a teacher-
forced decoder pass that returns the cross-attention logits of chosen heads, and the tokenizer.

Our own torch copy of openai-whisper 20250625 (`whisper/audio.py`, `whisper/model.py`,
https://github.com/openai/whisper/tree/v20250625), computed the same way (attention scaled as
`q·d^-¼ @ (k·d^-¼)ᵀ`, no SDPA, float32), so its logits equal openai's; `alignment.py` turns them
into word times. It reads the hub's transformers-format repos (`openai/whisper-large-v3-turbo`,
`openai/whisper-small`, …): `config.json`, `generation_config.json`, `model.safetensors` (module
attributes are its tensor names under `model.`; fp16 weights become float32) and `tokenizer.json`,
read with `tokenizers`, so neither transformers nor openai-whisper is needed at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from torch import nn

from .audio import slaney_mel_filters
from .errors import ConvertError, EngineError, ModelFileError
from .formats import read_json_object
from .formats.safetensors import WEIGHTS, load_module_tensors

CONFIG = "config.json"
GENERATION_CONFIG = "generation_config.json"
TOKENIZER = "tokenizer.json"
"""The repo's files besides `model.safetensors`."""
DOWNLOAD_AGAIN = "download the Whisper model again"

SAMPLE_RATE = 16_000
N_FFT = 400
HOP_LENGTH = 160
"""Hz, and the STFT size and hop in samples (whisper/audio.py:13-15)."""
N_SAMPLES = 30 * SAMPLE_RATE
N_FRAMES = N_SAMPLES // HOP_LENGTH
"""Whisper's 30 s window: 480 000 samples, 3000 mel frames (1500 encoder positions)."""
LOG_FLOOR = 1e-10
LOG_RANGE = 8.0
LOG_OFFSET = 4.0
LOG_SCALE = 4.0
"""log10(max(mel, 1e-10)), floored 8 below its maximum, then (x + 4) / 4 (audio.py:154-156)."""
ENGLISH_ONLY_VOCAB = 51_864
"""Vocabulary size of the English-only models (`tiny.en` …), which take no language token."""

BUILT_IN_HEADS = {
    (384, 4, 4, 51_865): ((2, 2), (3, 0), (3, 2), (3, 3), (3, 4), (3, 5)),
    (512, 6, 6, 51_865): ((3, 1), (4, 2), (4, 3), (4, 7), (5, 1), (5, 2), (5, 4), (5, 6)),
    (768, 12, 12, 51_865): (
        *((5, 3), (5, 9), (8, 0), (8, 4), (8, 7), (8, 8), (9, 0), (9, 7), (9, 9), (10, 5)),
    ),
    (1024, 24, 24, 51_865): ((13, 15), (15, 4), (15, 15), (16, 1), (20, 0), (23, 4)),
    (1280, 32, 32, 51_866): (
        *((7, 0), (10, 17), (12, 18), (13, 12), (16, 1), (17, 14), (19, 11), (21, 4), (24, 1)),
        (25, 6),
    ),
    (1280, 32, 4, 51_866): ((2, 4), (2, 11), (3, 3), (3, 6), (3, 11), (3, 14)),
}
"""(d_model, encoder layers, decoder layers, vocabulary) → (decoder layer, head) pairs whose
cross-attention follows the words: openai's `_ALIGNMENT_HEADS` (whisper/__init__.py:36-51),
decoded, for tiny, base, small, medium, large-v3 and large-v3-turbo. large-v1 and -v2 share
their dimensions but not their heads, so they are left out (their generation_config has them)."""


@dataclass(frozen=True)
class WhisperShape:
    """The dimensions config.json gives (transformers' `WhisperConfig` names)."""

    num_mel_bins: int
    d_model: int
    encoder_layers: int
    encoder_attention_heads: int
    encoder_ffn_dim: int
    decoder_layers: int
    decoder_attention_heads: int
    decoder_ffn_dim: int
    vocab_size: int
    max_source_positions: int
    max_target_positions: int

    @classmethod
    def read(cls, folder: Path) -> "WhisperShape":
        """The shape in `folder`/config.json; a ModelFileError names a missing key."""
        doc = _json(folder / CONFIG)
        missing = [name for name in cls.__dataclass_fields__ if not isinstance(doc.get(name), int)]
        if missing:
            raise ModelFileError(f"{folder / CONFIG} lacks {', '.join(missing)}; {DOWNLOAD_AGAIN}")
        shape = cls(**{name: int(doc[name]) for name in cls.__dataclass_fields__})
        if shape.max_source_positions != N_FRAMES // 2:
            raise ModelFileError(
                f"{folder / CONFIG}: max_source_positions is {shape.max_source_positions}, but "
                f"openai's 30 s window needs {N_FRAMES // 2}; use an openai/whisper-* model"
            )
        if shape.vocab_size == ENGLISH_ONLY_VOCAB:
            raise ModelFileError(
                f"{folder}: English-only Whisper models (*.en) are not supported; use a "
                "multilingual one such as openai/whisper-large-v3-turbo"
            )
        return shape


def alignment_heads(folder: Path, shape: WhisperShape) -> tuple[tuple[int, int], ...]:
    """The (decoder layer, head) pairs to align with, sorted (openai reads them from a sparse
    mask, model.py:285, and averages them in that order): generation_config.json's
    `alignment_heads`, else openai's for a model of these dimensions, else a ModelFileError."""
    path = folder / GENERATION_CONFIG
    heads = _json(path).get("alignment_heads") if path.is_file() else None
    if heads is None:
        key = (shape.d_model, shape.encoder_layers, shape.decoder_layers, shape.vocab_size)
        if key not in BUILT_IN_HEADS:
            raise ModelFileError(
                f"{path} has no alignment_heads and openai publishes none for a Whisper of "
                f"d_model {key[0]}, {key[1]}+{key[2]} layers, vocabulary {key[3]}: add them "
                "there ([[layer, head], …]) or use an openai/whisper-* model"
            )
        return BUILT_IN_HEADS[key]
    try:
        pairs = tuple(sorted((int(layer), int(head)) for layer, head in heads))
    except (TypeError, ValueError) as err:
        raise ModelFileError(f"{path}: alignment_heads is not [[layer, head], …]") from err
    for layer, head in pairs:
        if not (0 <= layer < shape.decoder_layers and 0 <= head < shape.decoder_attention_heads):
            raise ModelFileError(f"{path}: alignment head {[layer, head]} is not in the model")
    if not pairs:
        raise ModelFileError(f"{path}: alignment_heads is empty")
    return pairs


def _json(path: Path) -> dict[str, Any]:
    """A JSON object of the repo, or a ModelFileError naming the file."""
    try:
        return read_json_object(path, DOWNLOAD_AGAIN)
    except ConvertError as err:
        raise ModelFileError(str(err)) from err


# ---- front end


def mel_filters(n_mels: int) -> np.ndarray:
    """Whisper's mel filters (n_mels, N_FFT // 2 + 1) float32: librosa's `filters.mel(sr=16000,
    n_fft=400, n_mels)`, which openai ships as mel_filters.npz (audio.py:92-107)."""
    return slaney_mel_filters(SAMPLE_RATE, N_FFT, n_mels, 0.0, SAMPLE_RATE / 2)


def log_mel(audio: np.ndarray, n_mels: int) -> tuple[torch.Tensor, int]:
    """16 kHz audio of at most 30 s → (log-mel (n_mels, N_FRAMES), content frames), as openai's
    `transcribe` makes its first window (transcribe.py:139, 283-286): the audio padded with 30 s
    of zeros, the log-mel of all of it, then its first content frames zero-padded to 3000."""
    samples = F.pad(torch.from_numpy(np.asarray(audio, np.float32)), (0, N_SAMPLES))  # (n + N,)
    window = torch.hann_window(N_FFT)
    stft = torch.stft(samples, N_FFT, HOP_LENGTH, window=window, return_complex=True)
    power = stft[..., :-1].abs() ** 2  # (201, frames): the last frame dropped
    mel = torch.from_numpy(mel_filters(n_mels)) @ power  # (n_mels, frames)
    log_spec = torch.clamp(mel, min=LOG_FLOOR).log10()
    log_spec = torch.maximum(log_spec, log_spec.max() - LOG_RANGE)
    log_spec = (log_spec + LOG_OFFSET) / LOG_SCALE
    num_frames = min(N_FRAMES, log_spec.shape[-1] - N_FRAMES)
    return F.pad(log_spec[:, :num_frames], (0, N_FRAMES - num_frames)), num_frames


# ---- model (module attributes are the hub's tensor names under `model.`)


class Attention(nn.Module):
    """Multi-head attention returning (output, pre-softmax logits (B, heads, T, S))."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(width, width)
        self.k_proj = nn.Linear(width, width, bias=False)
        self.v_proj = nn.Linear(width, width)
        self.out_proj = nn.Linear(width, width)

    def forward(
        self, x: torch.Tensor, source: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        batch, length, width = x.shape
        scale = (width // self.heads) ** -0.25  # model.py:118, on q and k each
        q = self.q_proj(x).view(batch, length, self.heads, -1).permute(0, 2, 1, 3)  # (B,H,T,D)
        k = self.k_proj(source).view(batch, -1, self.heads, width // self.heads).permute(0, 2, 1, 3)
        v = self.v_proj(source).view(batch, -1, self.heads, width // self.heads).permute(0, 2, 1, 3)
        qk = (q * scale) @ (k * scale).transpose(-1, -2)  # (B, H, T, S)
        if mask is not None:
            qk = qk + mask
        out = (F.softmax(qk, dim=-1) @ v).permute(0, 2, 1, 3).flatten(start_dim=2)  # (B, T, W)
        return self.out_proj(out), qk


class Layer(nn.Module):
    """A pre-LN block: self-attention, cross-attention (decoder only), GELU MLP."""

    def __init__(self, width: int, heads: int, ffn: int, cross: bool) -> None:
        super().__init__()
        self.self_attn = Attention(width, heads)
        self.self_attn_layer_norm = nn.LayerNorm(width)
        if cross:
            self.encoder_attn = Attention(width, heads)
            self.encoder_attn_layer_norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, ffn)
        self.fc2 = nn.Linear(ffn, width)
        self.final_layer_norm = nn.LayerNorm(width)

    def forward(
        self, x: torch.Tensor, audio: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(x after the block, the cross-attention logits or None in the encoder)."""
        normed = self.self_attn_layer_norm(x)
        x = x + self.self_attn(normed, normed, mask)[0]
        qk = None
        if audio is not None:
            attended, qk = self.encoder_attn(self.encoder_attn_layer_norm(x), audio)
            x = x + attended
        x = x + self.fc2(F.gelu(self.fc1(self.final_layer_norm(x))))
        return x, qk


class Encoder(nn.Module):
    """log-mel (1, n_mels, 3000) → audio states (1, 1500, d_model)."""

    def __init__(self, shape: WhisperShape) -> None:
        super().__init__()
        width = shape.d_model
        self.conv1 = nn.Conv1d(shape.num_mel_bins, width, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(width, width, kernel_size=3, stride=2, padding=1)
        self.embed_positions = nn.Embedding(shape.max_source_positions, width)
        self.layers = nn.ModuleList(
            Layer(width, shape.encoder_attention_heads, shape.encoder_ffn_dim, cross=False)
            for _ in range(shape.encoder_layers)
        )
        self.layer_norm = nn.LayerNorm(width)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).permute(0, 2, 1)  # (1, 1500, W)
        x = x + self.embed_positions.weight
        for layer in self.layers:
            x = layer(x)[0]
        return self.layer_norm(x)


class Decoder(nn.Module):
    """Token and position embeddings and the blocks (the final norm and logits are not needed)."""

    def __init__(self, shape: WhisperShape) -> None:
        super().__init__()
        width = shape.d_model
        self.embed_tokens = nn.Embedding(shape.vocab_size, width)
        self.embed_positions = nn.Embedding(shape.max_target_positions, width)
        self.layers = nn.ModuleList(
            Layer(width, shape.decoder_attention_heads, shape.decoder_ffn_dim, cross=True)
            for _ in range(shape.decoder_layers)
        )


class WhisperModel(nn.Module):
    """The encoder and decoder of a hub Whisper, for `cross_qk`."""

    def __init__(self, shape: WhisperShape) -> None:
        super().__init__()
        self.shape = shape
        self.encoder = Encoder(shape)
        self.decoder = Decoder(shape)

    @classmethod
    def load(cls, folder: Path, shape: WhisperShape, device: torch.device) -> "WhisperModel":
        """The model in `folder`/model.safetensors, every tensor's name and shape checked."""
        model = cls(shape)
        try:
            load_module_tensors(model, [folder / WEIGHTS], "model.", "Whisper", _not_ours)
        except EngineError as err:
            raise ModelFileError(f"{err}; {DOWNLOAD_AGAIN}") from err
        return model.to(device).eval()

    @torch.no_grad()
    def cross_qk(
        self, mel: torch.Tensor, tokens: list[int], heads: tuple[tuple[int, int], ...]
    ) -> torch.Tensor:
        """Cross-attention logits (len(heads), len(tokens), 1500) float32 on the CPU, before
        the softmax, of one teacher-forced pass of `tokens` over `mel` (n_mels, 3000)."""
        device = self.decoder.embed_tokens.weight.device
        audio = self.encoder(mel.to(device)[None])  # (1, 1500, W)
        ids = torch.tensor(tokens, device=device)[None]  # (1, T)
        x = self.decoder.embed_tokens(ids) + self.decoder.embed_positions.weight[: len(tokens)]
        mask = torch.full((len(tokens), len(tokens)), -np.inf, device=device).triu_(1)  # causal
        logits: dict[int, torch.Tensor] = {}
        for index in range(max(layer for layer, _ in heads) + 1):
            x, logits[index] = self.decoder.layers[index](x, audio, mask)
        return torch.stack([logits[layer][0, head] for layer, head in heads]).cpu()


def _not_ours(key: str) -> bool:
    """Tensors under `model.` that alignment does not use: the decoder's final norm."""
    return key.startswith("decoder.layer_norm.")


# ---- tokenizer


class WhisperTokenizer:
    """tokenizer.json (byte-level BPE) read with `tokenizers`; special tokens found by name.

    Decoding joins the tokens' bytes and decodes them as UTF-8 with replacement characters, as
    tiktoken does, which the word split relies on (tokenizer.py:286-309)."""

    def __init__(self, path: Path) -> None:
        try:
            self._tokenizer = Tokenizer.from_file(str(path))
        except Exception as err:  # tokenizers raises a bare Exception for a bad file
            raise ModelFileError(f"cannot read {path} ({err}); {DOWNLOAD_AGAIN}") from err
        self.path = path
        added = {t.content for t in self._tokenizer.get_added_tokens_decoder().values()}
        symbol_bytes = {symbol: byte for byte, symbol in enumerate(_byte_symbols())}
        pieces: dict[int, bytes] = {}
        for text, token_id in self._tokenizer.get_vocab(with_added_tokens=True).items():
            if text in added:
                pieces[token_id] = text.encode()
            elif all(symbol in symbol_bytes for symbol in text):
                pieces[token_id] = bytes(symbol_bytes[symbol] for symbol in text)
            else:
                raise ModelFileError(f"{path} is not a byte-level BPE tokenizer ({text!r})")
        self._pieces = pieces
        self.eot = self.special("<|endoftext|>")
        self.sot = self.special("<|startoftranscript|>")
        self.translate = self.special("<|translate|>")
        self.transcribe = self.special("<|transcribe|>")
        self.no_timestamps = self.special("<|notimestamps|>")

    def special(self, name: str) -> int:
        """The id of special token `name`; a ModelFileError if the tokenizer lacks it."""
        token_id = self._tokenizer.token_to_id(name)
        if token_id is None:
            raise ModelFileError(f"{self.path} lacks Whisper's {name} token; {DOWNLOAD_AGAIN}")
        return int(token_id)

    def language_token(self, language: str) -> int | None:
        """The id of `<|language|>`, None if this Whisper does not know the language."""
        token_id = self._tokenizer.token_to_id(f"<|{language}|>")
        if token_id is None or not self.sot < token_id < self.translate:
            return None
        return int(token_id)

    def encode(self, text: str) -> list[int]:
        """Text tokens (no special tokens added)."""
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def decode(self, tokens: list[int]) -> str:
        """The text of `tokens`; incomplete UTF-8 becomes U+FFFD."""
        return b"".join(self._pieces[t] for t in tokens).decode("utf-8", errors="replace")


def _byte_symbols() -> list[str]:
    """GPT-2's byte-level alphabet, by byte value: printable Latin-1 bytes stand for themselves,
    the others are shifted to U+0100 and up (a space is `Ġ`)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    symbols = {byte: chr(byte) for byte in printable}
    shifted = (byte for byte in range(256) if byte not in symbols)
    symbols.update({byte: chr(0x100 + n) for n, byte in enumerate(shifted)})
    return [symbols[byte] for byte in range(256)]
