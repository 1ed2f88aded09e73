"""The three GGUFs of a converted Qwen3-TTS model, all stock llama.cpp `qwen3` files
(docs/engines.md, "Qwen3-TTS: GGUF route"):

* the talker: its layers and final norm (`talker.model.*`); `token_embd` is
  `talker.model.codec_embedding`, `output` is `talker.codec_head` (logits over the codec ids);
* the code predictor: its layers and norm. Its `token_embd` is a zero placeholder (llama.cpp
  requires one) and it has no `output`, so its logits are meaningless: the engine applies the
  heads from the tables to its hidden state;
* the text tokenizer: a vocabulary-only `gpt2`/`qwen2` GGUF built from vocab.json, merges.txt
  and tokenizer_config.json's added tokens; llama.cpp tokenizes text with it exactly like the
  release's Qwen2 tokenizer when special tokens are parsed (`parse_special=True`; Hugging Face
  always splits added tokens out).

Talker and predictor have no tokenizer (`tokenizer.ggml.model = none`, like the WavTokenizer
vocoder): both only ever see embedding rows.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

import gguf
import numpy as np

from ...errors import ConvertError
from ...formats.gguf import GgufTensor, LmShape, add_llama_hparams, write_gguf
from ...formats.safetensors import SafetensorsFiles
from .checkpoint import LAYER_TENSORS, PREDICTOR_PREFIX, TALKER_PREFIX, layer_shapes
from .config import ADVICE, MatrixType, Qwen3TTSRuntimeConfig, read_json, required

_LOGGER = logging.getLogger(__name__)

ARCH = "qwen3"
"""`general.architecture` of all three files."""
PLACEHOLDER_ROWS = 1
"""Rows of the code predictor's placeholder `token_embd` (`write_predictor`)."""
END_OF_TEXT = "<|endoftext|>"
"""Qwen2's BOS and padding token (as llama.cpp's converter writes them); EOS is `<|im_end|>`."""
MERGES_VERSION = "#version"
"""merges.txt's first line (`#version: 0.2`) is a comment, not a merge."""
MORE_BITS_TENSORS = ("attn_v", "ffn_down")
"""Block tensors llama.cpp's Q4_K_M stores in more bits in some layers (`more_bits_layer`)."""


def write_talker(path: Path, weights: SafetensorsFiles, stack: LmShape, matrix: MatrixType) -> None:
    """talker.gguf: codec embedding in, the stack, codec head out."""
    hidden, vocab = stack.n_embd, stack.n_vocab
    tensors = [
        _matrix(
            "token_embd.weight",
            (vocab, hidden),
            matrix,
            matrix.quant,
            _loader(weights, "talker.model.codec_embedding.weight"),
        ),
        *_layer_tensors(weights, stack, TALKER_PREFIX, matrix),
        _matrix(
            "output.weight",
            (vocab, hidden),
            matrix,
            matrix.quant if matrix.more_bits is None else matrix.more_bits,
            _loader(weights, "talker.codec_head.weight"),
        ),
    ]
    _write_stack(path, weights, stack, matrix, TALKER_PREFIX, "Qwen3-TTS talker", tensors)


def write_predictor(
    path: Path, weights: SafetensorsFiles, stack: LmShape, matrix: MatrixType
) -> None:
    """code_predictor.gguf: a placeholder embedding and the stack (no output head)."""
    # llama.cpp's qwen3 loader requires token_embd and ties the output head to it; inputs are
    # always embedding rows and the logits are never read, so one zero row does, and the head's
    # matmul costs nothing (the codebook's 2048 rows read 4 MB a step in f16)
    stack = dataclasses.replace(stack, n_vocab=PLACEHOLDER_ROWS)
    hidden = stack.n_embd
    tensors = [
        _matrix(
            "token_embd.weight",
            (PLACEHOLDER_ROWS, hidden),
            matrix,
            matrix.quant,
            lambda: np.zeros((PLACEHOLDER_ROWS, hidden)),
        ),
        # ffn_down multiplies the MLP activations, which reach ~1.5e5 in the released predictor,
        # and llama.cpp's CPU matmul first converts the activations to the weights' partner
        # type: fp16 for F16 weights (overflows past 65504), Q8_0 blocks for Q8_0 weights (32
        # values share one scale, so a 1.5e5 outlier gives its 31 neighbours a step of ~1.2e3
        # and rounds most of them to zero), Q8_K blocks for k-quants (worse: 256 values share
        # one scale). So every type but f32 stores it BF16: lossless for the bf16 release, and
        # bf16 activations keep each value's own exponent, rounded to what qwen-tts computes
        # in when run in bf16 (its default on GPUs). Measured (0.6B, 2 cores, q8_0
        # elsewhere): F32 86, BF16 73, Q8_0 68 ms a frame.
        *_layer_tensors(
            weights, stack, PREDICTOR_PREFIX, matrix, wide_range_modules=("mlp.down_proj",)
        ),
    ]
    name = "Qwen3-TTS code predictor"
    _write_stack(path, weights, stack, matrix, PREDICTOR_PREFIX, name, tensors)


def write_tokenizer(
    path: Path, model_dir: Path, config: Qwen3TTSRuntimeConfig, stack: LmShape
) -> None:
    """A vocabulary-only GGUF (no tensors) with the snapshot's Qwen2 tokenizer; its hyper-
    parameters are the talker's `stack` (llama.cpp reads them even when it loads the vocabulary
    only)."""
    tokens, types = _text_tokens(model_dir, config.text_vocab)
    merges = _read_merges(model_dir / "merges.txt")
    token_id = {token: i for i, token in enumerate(tokens)}
    shape = dataclasses.replace(stack, n_vocab=len(tokens))

    def metadata(writer: gguf.GGUFWriter) -> None:
        file_type = gguf.LlamaFileType.MOSTLY_F16
        add_llama_hparams(writer, shape, "Qwen3-TTS text tokenizer", file_type)
        writer.add_tokenizer_model("gpt2")
        writer.add_tokenizer_pre("qwen2")
        writer.add_token_list(tokens)
        writer.add_token_types(types)
        writer.add_token_merges(merges)
        end_of_text = token_id.get(END_OF_TEXT, config.im_end_id)
        writer.add_bos_token_id(end_of_text)  # as llama.cpp's converter writes Qwen2's
        writer.add_eos_token_id(config.im_end_id)
        writer.add_pad_token_id(end_of_text)
        writer.add_add_bos_token(False)
        writer.add_add_eos_token(False)

    write_gguf(path, ARCH, metadata, [])


def _write_stack(
    path: Path,
    weights: SafetensorsFiles,
    stack: LmShape,
    matrix: MatrixType,
    prefix: str,
    name: str,
    tensors: list[GgufTensor],
) -> None:
    """A plain `qwen3` GGUF of `tensors` plus the stack's final norm (`{prefix}.norm.weight`),
    with its hyper-parameters and no tokenizer: the talker and the code predictor alike."""
    norm = GgufTensor(
        "output_norm.weight", (stack.n_embd,), np.float32, _loader(weights, f"{prefix}.norm.weight")
    )

    def metadata(writer: gguf.GGUFWriter) -> None:
        add_llama_hparams(writer, stack, name, matrix.file_type)
        writer.add_tokenizer_model("none")  # only ever fed embedding rows

    write_gguf(path, ARCH, metadata, [*tensors, norm])


def _layer_tensors(
    weights: SafetensorsFiles,
    stack: LmShape,
    prefix: str,
    matrix: MatrixType,
    wide_range_modules: tuple[str, ...] = (),
) -> list[GgufTensor]:
    """Every block's tensors: norms (1-D) F32, `wide_range_modules` `matrix.wide_range`, the
    other matrices as `matrix` stores them in layer i (`block_type`)."""
    tensors = []
    shapes = layer_shapes(stack)
    for i in range(stack.n_layer):
        for gguf_name, module in LAYER_TENSORS:
            name = f"blk.{i}.{gguf_name}.weight"
            load = _loader(weights, f"{prefix}.layers.{i}.{module}.weight")
            shape = shapes[module]
            if len(shape) == 1:
                tensors.append(GgufTensor(name, shape, np.float32, load))
            elif module in wide_range_modules:
                tensors.append(GgufTensor(name, shape, np.float32, load, matrix.wide_range))
            else:
                quant = block_type(matrix, gguf_name, i, stack.n_layer)
                tensors.append(_matrix(name, shape, matrix, quant, load))
    return tensors


def block_type(
    matrix: MatrixType, tensor: str, layer: int, n_layer: int
) -> gguf.GGMLQuantizationType | None:
    """Block type of `tensor` (`attn_v`, …) in `layer` of `n_layer`: `matrix.more_bits` where
    llama.cpp's Q4_K_M mix picks more bits, else `matrix.quant`."""
    more = matrix.more_bits is not None and tensor in MORE_BITS_TENSORS
    return matrix.more_bits if more and more_bits_layer(layer, n_layer) else matrix.quant


def more_bits_layer(layer: int, n_layer: int) -> bool:
    """The layers whose attn_v and ffn_down Q4_K_M stores in Q6_K: the first and last eighth
    and every third between (llama.cpp `use_more_bits`, src/llama-quant.cpp, as vendored in
    llama-cpp-python 0.3.36; tests/test_qwen3tts_convert.py checks it against llama.cpp)."""
    eighth = n_layer // 8
    return layer < eighth or layer >= 7 * n_layer // 8 or (layer - eighth) % 3 == 2


def _matrix(
    name: str,
    shape: tuple[int, ...],
    matrix: MatrixType,
    quant: gguf.GGMLQuantizationType | None,
    load: Callable[[], np.ndarray],
) -> GgufTensor:
    """A weight matrix in block type `quant` (None: `matrix.dtype`). Quantized rows must be
    whole blocks (32 values for Q8_0, 256 for the k-quants): every width of the released models
    is, but a matrix whose rows are not (the tiny test models' 16- and 32-wide stacks) falls
    back to `matrix.dtype` (f16) rather than failing."""
    if quant is not None and shape[-1] % gguf.GGML_QUANT_SIZES[quant][0]:
        _LOGGER.info(
            "%s: rows of %d values are not whole %s blocks; storing it as %s",
            name,
            shape[-1],
            quant.name,
            np.dtype(matrix.dtype).name,
        )
        quant = None
    return GgufTensor(name, shape, matrix.dtype, load, quant)


def _loader(weights: SafetensorsFiles, name: str) -> Callable[[], np.ndarray]:
    return lambda: weights.get(name)


def _text_tokens(model_dir: Path, n_vocab: int) -> tuple[list[str], list[int]]:
    """Token strings and types by id: vocab.json (NORMAL), added tokens (CONTROL when special,
    else USER_DEFINED, as llama.cpp's converter marks them), `[PADn]` (UNUSED) up to n_vocab."""
    vocab_path = model_dir / "vocab.json"
    config_path = model_dir / "tokenizer_config.json"
    vocab = read_json(vocab_path)
    added = required(read_json(config_path), "added_tokens_decoder", config_path)
    tokens: list[str | None] = [None] * n_vocab
    types = [int(gguf.TokenType.UNUSED)] * n_vocab
    entries = [(int(i), token, gguf.TokenType.NORMAL, vocab_path) for token, i in vocab.items()]
    entries += [
        (
            int(i),
            entry["content"],
            gguf.TokenType.CONTROL if entry.get("special", False) else gguf.TokenType.USER_DEFINED,
            config_path,
        )
        for i, entry in added.items()
    ]
    for i, token, kind, source in entries:
        if not 0 <= i < n_vocab:
            raise ConvertError(
                f"{source}: token {token!r} has id {i}, outside the text table's "
                f"{n_vocab} rows (talker_config.text_vocab_size); {ADVICE}"
            )
        tokens[i] = token
        types[i] = int(kind)
    return [f"[PAD{i}]" if token is None else token for i, token in enumerate(tokens)], types


def _read_merges(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise ConvertError(f"cannot read {path} ({err}); {ADVICE}") from err
    return [line for line in lines if line and not line.startswith(MERGES_VERSION)]
