r"""AdamW written from its update rule, and gradient clipping by the global norm.

AdamW (Loshchilov & Hutter, 2019) keeps two running averages per parameter, of the
gradient :math:`g` and of its square, and decays the weights apart from them:

.. math::
    \theta &\leftarrow \theta - \alpha\lambda\,\theta \\
    m &\leftarrow \beta_1 m + (1-\beta_1)\, g, \qquad
    v \leftarrow \beta_2 v + (1-\beta_2)\, g^2 \\
    \theta &\leftarrow \theta - \frac{\alpha}{1-\beta_1^t}\,
        \frac{m}{\sqrt{v / (1-\beta_2^t)} + \epsilon}

The order of the operations is the one ``torch.optim.AdamW`` uses, so the two agree
step for step to float rounding.

Taught on: "Training and generating text".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch
from torch import Tensor, nn

from llmlab.checks import check_finite_float, check_parameters

__all__ = ["AdamW", "gradient_clipping"]


class AdamW(torch.optim.Optimizer):
    """Adam with decoupled weight decay; state per parameter: ``step``, ``m``, ``v``.

    Args:
        params: Parameters, or parameter groups (dicts) as for any torch optimizer.
        lr: Learning rate α, ``>= 0``. A schedule sets ``group["lr"]`` each step.
        betas: Decay rates ``(β₁, β₂)`` of the two averages, each in ``[0, 1)``.
        eps: ε added to the denominator, ``> 0``.
        weight_decay: λ, ``>= 0``; each step shrinks θ by ``α·λ·θ``.

    Taught on: "Training and generating text".
    """

    def __init__(
        self,
        params: Iterable[nn.Parameter] | Iterable[dict],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
    ) -> None:
        params = check_parameters("params", params, groups=True, nonempty=True)
        check_finite_float("lr", lr, minimum=0.0)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
        for name, beta in zip(("betas[0]", "betas[1]"), betas):
            check_finite_float(name, beta, minimum=0.0, maximum=1.0, open_max=True)
        check_finite_float("eps", eps, minimum=0.0, open_min=True)
        check_finite_float("weight_decay", weight_decay, minimum=0.0)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """One update of every parameter that has a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, (beta1, beta2) = group["lr"], group["betas"]
            eps, weight_decay = group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                state = self.state[p]
                if not state:  # first step: both averages start at zero
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p)  # average of g
                    state["v"] = torch.zeros_like(p)  # average of g²
                state["step"] += 1
                t, m, v = state["step"], state["m"], state["v"]
                # decoupled weight decay: θ ← θ − αλθ
                p.mul_(1 - lr * weight_decay)
                # running averages of g and g²
                m.mul_(beta1).add_(g, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                # bias-corrected step: θ ← θ − α/(1−β₁ᵗ) · m / (√(v/(1−β₂ᵗ)) + ε)
                bias1, bias2 = 1 - beta1**t, 1 - beta2**t
                denom = (v.sqrt() / math.sqrt(bias2)).add_(eps)
                p.addcdiv_(m, denom, value=-lr / bias1)
        return loss


def gradient_clipping(
    parameters: Iterable[nn.Parameter], max_l2_norm: float, eps: float = 1e-6
) -> float:
    r"""Scale all gradients in place so that their joint L2 norm is ``<= max_l2_norm``.

    The norm is taken over every gradient at once,
    :math:`\lVert g \rVert = \sqrt{\sum_p \sum_i g_{p,i}^2}`; when it exceeds
    ``max_l2_norm`` each gradient is multiplied by ``max_l2_norm / (‖g‖ + eps)``
    (CS336's ε = 1e-6, as ``torch.nn.utils.clip_grad_norm_``). Parameters without a
    gradient are skipped.

    Args:
        parameters: The model's parameters (any iterable; a generator is fine).
        max_l2_norm: The largest allowed norm, ``> 0``.
        eps: Added to the norm before dividing, ``>= 0``.

    Returns:
        The global norm before clipping (``0.0`` when no parameter has a gradient).

    Taught on: "Training and generating text".
    """
    parameters = check_parameters("parameters", parameters)
    check_finite_float("max_l2_norm", max_l2_norm, minimum=0.0, open_min=True)
    check_finite_float("eps", eps, minimum=0.0)
    grads: list[Tensor] = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    norms = torch.stack([g.detach().float().norm(2) for g in grads])  # (n_params,)
    total = norms.norm(2)  # √(Σ ‖g_p‖²) = ‖g‖ over everything
    if total > max_l2_norm:
        scale = max_l2_norm / (total + eps)
        for g in grads:
            g.mul_(scale.to(g.dtype))
    return float(total)
