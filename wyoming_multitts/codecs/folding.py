"""Fold weight norm into plain weights for inference: in a module, or in a checkpoint's tensors.

`torch.nn.utils.parametrizations.weight_norm` recomputes g * v / |v| on every forward call; for
inference the product never changes, so computing it once is the same output for less work
(SNAC: 1.5x faster decoding on CPU; docs/engines.md, "Weight-norm folding").
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils import parametrize


def fold_weight_norm(model: nn.Module) -> int:
    """Replace every parametrized tensor of `model` by its current value; returns how many."""
    folded = 0
    for module in model.modules():
        if parametrize.is_parametrized(module):
            parametrized: nn.ModuleDict = module.parametrizations  # type: ignore[assignment]
            for name in list(parametrized.keys()):
                parametrize.remove_parametrizations(module, name, leave_parametrized=True)
                folded += 1
    return folded


def folded_weight(magnitude: torch.Tensor, direction: torch.Tensor) -> torch.Tensor:
    """The weight a `torch.nn.utils.weight_norm` (dim 0) pair stands for, g · v / ‖v‖ with the
    norm over all but dim 0, computed by the op that weight norm's own hook runs (so the result
    is the reference's, bit for bit), in float32."""
    # pylint: disable-next=protected-access  # the op torch's WeightNorm hook runs
    return torch._weight_norm(direction.float(), magnitude.float(), 0)
