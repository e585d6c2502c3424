r"""The learning-rate schedule of CS336 (and of most LLM runs): warm-up, cosine, floor.

.. math::
    \alpha_t = \begin{cases}
        \frac{t}{T_w}\,\alpha_{\max} & t < T_w \\
        \alpha_{\min} + \tfrac12\left(1 + \cos\frac{t - T_w}{T_c - T_w}\pi\right)
            (\alpha_{\max} - \alpha_{\min}) & T_w \le t \le T_c \\
        \alpha_{\min} & t > T_c
    \end{cases}

Taught on: "Training and generating text".
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from llmlab.checks import check_finite_float, check_int

__all__ = ["cosine_schedule", "get_lr_cosine_schedule"]


def get_lr_cosine_schedule(
    it: int,
    max_learning_rate: float,
    min_learning_rate: float,
    warmup_iters: int,
    cosine_cycle_iters: int,
) -> float:
    """The learning rate at iteration ``it`` (CS336 assignment 1's definition).

    Args:
        it: Iteration, ``>= 0``.
        max_learning_rate: α_max, reached at the end of warm-up.
        min_learning_rate: α_min, the floor after ``cosine_cycle_iters``; ``<= α_max``.
        warmup_iters: T_w, iterations of linear warm-up from 0 (``>= 0``).
        cosine_cycle_iters: T_c, the iteration where the cosine reaches α_min;
            ``> warmup_iters``.

    Taught on: "Training and generating text".
    """
    _check_schedule(it, max_learning_rate, min_learning_rate, warmup_iters,
                    cosine_cycle_iters)
    if it < warmup_iters:  # linear warm-up
        return it / warmup_iters * max_learning_rate
    if it <= cosine_cycle_iters:  # cosine decay from α_max to α_min
        progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)
        cosine = 0.5 * (1 + math.cos(math.pi * progress))
        return min_learning_rate + cosine * (max_learning_rate - min_learning_rate)
    return min_learning_rate  # post-annealing floor


# a local composite (the schedule's settings against each other), built from llmlab.checks
def _check_schedule(it: int, max_lr: float, min_lr: float, warmup: int,
                    cycle: int) -> None:
    check_int("it", it, minimum=0)
    check_finite_float("max_learning_rate", max_lr, minimum=0.0)
    check_finite_float("min_learning_rate", min_lr, minimum=0.0)
    if min_lr > max_lr:
        raise ValueError(
            f"min_learning_rate ({min_lr}) must not exceed max_learning_rate ({max_lr})"
        )
    check_int("warmup_iters", warmup, minimum=0)
    check_int("cosine_cycle_iters", cycle, minimum=1)
    if cycle <= warmup:
        raise ValueError(
            f"cosine_cycle_iters ({cycle}) must be greater than warmup_iters ({warmup})"
        )


def cosine_schedule(
    max_learning_rate: float,
    min_learning_rate: float,
    warmup_iters: int,
    cosine_cycle_iters: int,
) -> Callable[[int], float]:
    """:func:`get_lr_cosine_schedule` with its settings bound: ``schedule(it) -> lr``.

    The settings are checked now, not at the first call.

    Taught on: "Training and generating text".
    """
    _check_schedule(0, max_learning_rate, min_learning_rate, warmup_iters,
                    cosine_cycle_iters)
    return functools.partial(
        _cosine_at, max_learning_rate=max_learning_rate,
        min_learning_rate=min_learning_rate, warmup_iters=warmup_iters,
        cosine_cycle_iters=cosine_cycle_iters,
    )


def _cosine_at(it: int, **settings: float) -> float:
    return get_lr_cosine_schedule(it, **settings)  # type: ignore[arg-type]
