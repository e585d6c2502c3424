"""Argument checks shared by every module of ``llmlab``.

Every public constructor, function and experiment checks what it is given through
this module, before any maths: a ``forward`` makes one call at the top, so that the
model reads first. A check raises

* ``TypeError`` when the argument is not even the right kind of object (a float or
  a bool where an int is expected, a list where a tensor is, a config of the other
  model family);
* ``ValueError`` when it is the right kind with a wrong value (a size of 0, NaN, an
  integer tensor where floats are computed on, a shape that does not fit, token ids
  out of range, an empty tuple of settings);

and the message names the argument, says what it got and what was expected. Each
check takes ``(name, value, ...)``, the argument's name first, and returns the
checked value, so that a caller can check and assign in one line.

Each rule is written here once. A module may keep a ``_check_*`` helper for several
of its arguments checked together (``min_lr <= max_lr``, ``top_k <= vocab_size``),
built from these functions; ``tests/test_checks_rules.py`` holds both rules.

Tensor shapes are patterns of named dimensions, the same names as the shape comments
in the code: ``check_tensor("x", x, "batch seq_len d_model", d_model=512)``. A name
used twice (in one pattern or in several tensors of one :func:`check_tensors` call)
must have one size; every named dimension must be at least 1 unless a range says
otherwise (``seq_len=(1, context_length)``); ``...`` stands for any leading
dimensions, and the leading dimensions of the tensors of one call must broadcast.
Tensors checked together must share a device, and the floating-point ones a dtype.

NaN in activations is not searched for: it propagates, as in torch (a scan would
cost a device sync on every call). NaN in a setting (``eps``, ``theta``,
``dropout``) is refused.

Taught on: every lecture (the errors a reader meets after changing an argument).
"""

from __future__ import annotations

import functools
import math
import numbers
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "check_bool",
    "check_callable",
    "check_choice",
    "check_corpus",
    "check_divisible",
    "check_dropout",
    "check_file",
    "check_finite_float",
    "check_floats",
    "check_int",
    "check_iterable",
    "check_language_model",
    "check_logits",
    "check_module",
    "check_parameters",
    "check_path",
    "check_reduction",
    "check_rope_size",
    "check_sizes",
    "check_str",
    "check_strs",
    "check_tensor",
    "check_tensors",
    "check_token_ids",
    "check_type",
]

# a required size: exact, (low, high) inclusive (None: open), (low, high, "name of
# high") to name the bound in the message, or None (any size >= 1)
Size = int | tuple[int | None, int | None] | tuple[int | None, int, str] | None


# ---------------------------------------------------------------------------
# numbers, flags, choices
# ---------------------------------------------------------------------------
def check_int(
    name: str, value: object, *, minimum: int | None = 1, maximum: int | None = None
) -> int:
    """``value`` as an int in ``[minimum, maximum]``; bools and floats are refused.

    ``minimum=None`` checks the type only (the caller explains the range).

    Raises:
        TypeError: ``value`` is not an integer (``2.0`` and ``True`` are not).
        ValueError: ``value`` is out of range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if minimum is None:
        return int(value)
    if maximum is not None and not minimum <= value <= maximum:
        raise ValueError(f"{name} must be an int in [{minimum}, {maximum}], got {value}")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    return int(value)


def check_finite_float(
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    open_min: bool = False,
    open_max: bool = False,
) -> float:
    """``value`` as a finite float in the given range (NaN and inf are refused).

    ``open_min``/``open_max`` exclude the bound itself, e.g. ``temperature > 0``
    is ``minimum=0.0, open_min=True``.

    Raises:
        TypeError: ``value`` is not a real number.
        ValueError: ``value`` is NaN, infinite or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        kind = type(value).__name__
        raise TypeError(f"{name} must be a number, got {kind} {value!r}")
    value = float(value)
    low = "" if minimum is None else ("(" if open_min else "[") + f"{minimum:g}"
    high = "" if maximum is None else f"{maximum:g}" + (")" if open_max else "]")
    wanted = f"a finite number in {low or '(-inf'}, {high or 'inf)'}"
    if not math.isfinite(value):
        raise ValueError(f"{name} must be {wanted}, got {value}")
    if minimum is not None and (value < minimum or (open_min and value == minimum)):
        raise ValueError(f"{name} must be {wanted}, got {value:g}")
    if maximum is not None and (value > maximum or (open_max and value == maximum)):
        raise ValueError(f"{name} must be {wanted}, got {value:g}")
    return value


def check_dropout(name: str, value: object) -> float:
    """A dropout probability in ``[0, 1)``: at 1 every activation would be zeroed."""
    return check_finite_float(name, value, minimum=0.0, maximum=1.0, open_max=True)


def check_bool(name: str, value: object) -> bool:
    """``value`` if it is a bool (``0``, ``1`` and ``"yes"`` are not).

    Raises:
        TypeError: ``value`` is not a bool.
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return value


def check_str(name: str, value: object, *, nonempty: bool = False) -> str:
    """``value`` if it is a ``str`` (non-empty, if asked).

    Raises:
        TypeError: ``value`` is not a str.
        ValueError: ``nonempty`` and ``value`` is ``""``.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__} {value!r}")
    if nonempty and not value:
        raise ValueError(f"{name} must be a non-empty str, got ''")
    return value


def check_path(name: str, value: object) -> str | os.PathLike:
    """``value`` if it is a ``str`` or ``os.PathLike`` (a path to a file).

    Raises:
        TypeError: Anything else.
    """
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a str or os.PathLike, got {type(value).__name__}")
    return value


def check_file(name: str, value: object, method: str) -> Any:
    """``value`` if it is a path or a binary file object with ``method``
    (``"read"`` for one read from, ``"write"`` for one written to).

    Raises:
        TypeError: ``value`` is neither a path nor such a file object.
    """
    if not isinstance(value, (str, os.PathLike)) and not hasattr(value, method):
        raise TypeError(
            f"{name} must be a path or a binary file object with .{method}(), got "
            f"{type(value).__name__}"
        )
    return value


def _with_article(word: str) -> str:
    """``word`` after its indefinite article, as it sounds: "an int", "a list",
    "an AdamWCheckResult", "a OneLayerAttention" (a U is read "you": "a UnitTest")."""
    vowel = word[:1].lower() in "aeio" and not word.lower().startswith("one")
    return f"{'an' if vowel else 'a'} {word}"


def check_type(
    name: str,
    value: object,
    types: type | tuple[type, ...],
    *,
    expected: str | None = None,
    hint: str | None = None,
) -> Any:
    """``value`` if it is an instance of ``types``.

    Args:
        name: The argument's name.
        value: What was given.
        types: Accepted classes.
        expected: How to describe them (default: their names).
        hint: Said after the error, e.g. which function takes ``value`` instead.

    Raises:
        TypeError: ``value`` is not an instance of ``types``.
    """
    if not isinstance(value, types):
        if expected is None:
            classes = types if isinstance(types, tuple) else (types,)
            expected = " or ".join(_with_article(c.__name__) for c in classes)
        message = f"{name} must be {expected}, got {type(value).__name__}"
        raise TypeError(message + (f"; {hint}" if hint else ""))
    return value


def check_callable(name: str, value: object) -> Callable:
    """``value`` if it can be called.

    Raises:
        TypeError: ``value`` is not callable.
    """
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {type(value).__name__} {value!r}")
    return value


def check_iterable(name: str, value: object, expected: str) -> Iterable:
    """``value`` if it can be iterated over.

    Args:
        name: The argument's name.
        value: What was given.
        expected: What it should be, e.g. ``"an iterable of token ids (a list of
            ints or a tensor)"``.

    Raises:
        TypeError: ``value`` is not iterable.
    """
    try:
        iter(value)
    except TypeError:
        kind = type(value).__name__
        raise TypeError(f"{name} must be {expected}, got {kind}") from None
    return value


def check_module(name: str, value: object, *, optional: bool = False) -> Any:
    """``value`` if it is a ``torch.nn.Module`` (or ``None``, when ``optional``).

    Raises:
        TypeError: ``value`` is something else (a parameter list, a tensor, ...).
    """
    if optional and value is None:
        return value
    expected = "a torch.nn.Module" + (" or None" if optional else "")
    return check_type(name, value, torch.nn.Module, expected=expected)


def check_parameters(
    name: str, value: object, *, groups: bool = False, nonempty: bool = False
) -> list:
    """An iterable of tensors (``model.parameters()``), as a list.

    A module (but an ``nn.ParameterList``), a single tensor or anything not
    iterable is refused with a hint, as is an item that is not a tensor.

    Args:
        name: The argument's name.
        value: What was given.
        groups: Accept what a torch optimizer accepts besides tensors: parameter
            groups (``{"params": [...], "lr": ...}``) and named parameters
            (``(name, tensor)`` pairs, ``model.named_parameters()``).
        nonempty: Refuse an empty iterable.

    Raises:
        TypeError: ``value`` is not an iterable of tensors (or dicts).
        ValueError: ``nonempty`` and ``value`` holds nothing.
    """
    kinds = "tensors (or parameter-group dicts)" if groups else "tensors"
    expected = f"an iterable of {kinds} such as model.parameters()"
    if isinstance(value, (Tensor, str, bytes, Mapping)) or (
            isinstance(value, torch.nn.Module)
            and not isinstance(value, torch.nn.ParameterList)):
        raise TypeError(f"{name} must be {expected}, got {type(value).__name__}")
    items = list(check_iterable(name, value, expected))
    for i, item in enumerate(items):
        named = (isinstance(item, tuple) and len(item) == 2
                 and isinstance(item[0], str) and isinstance(item[1], Tensor))
        if not (isinstance(item, Tensor) or groups and (isinstance(item, dict)
                                                        or named)):
            held = "tensors, dicts or (name, tensor) pairs" if groups else "tensors"
            raise TypeError(
                f"{name} must hold {held}, got {type(item).__name__} at index {i}"
            )
    if nonempty and not items:
        raise ValueError(f"{name} is empty; expected at least one parameter")
    return items


def check_choice(name: str, value: object, choices: Iterable[object]) -> Any:
    """``value`` if it is one of ``choices``.

    Raises:
        ValueError: ``value`` is not one of ``choices``.
    """
    choices = tuple(choices)
    if isinstance(value, bool) or value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}, got {value!r}")
    return value


def check_rope_size(name: str, value: object) -> int:
    """``value``, the size of the vectors RoPE rotates, as an even positive int.

    RoPE rotates pairs of dimensions; this is the one place that rule is written
    (the rotary embedding, the Llama configuration and attention, the CLI, a figure).

    Raises:
        TypeError: ``value`` is not an int.
        ValueError: ``value`` is not positive, or odd.
    """
    value = check_int(name, value)
    if value % 2:
        raise ValueError(f"{name} must be even (RoPE rotates pairs of dimensions), "
                         f"got {value}")
    return value


def check_divisible(
    name: str, value: int, by_name: str, by: int, *, reason: str | None = None
) -> int:
    """``value`` if ``value % by == 0`` (both already checked as positive ints).

    Args:
        name: The argument's name.
        value: What was given.
        by_name: The name of the divisor (another argument, a setting).
        by: The divisor.
        reason: Why, said after the error (e.g. "every rank takes an equal share").

    Raises:
        ValueError: ``by`` does not divide ``value``.
    """
    if value % by:
        raise ValueError(f"{name} ({value}) must be divisible by {by_name} ({by})"
                         + (f": {reason}" if reason else ""))
    return value


def check_sizes(
    name: str,
    value: object,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    nonempty: bool = True,
) -> tuple[int, ...]:
    """A list or tuple of ints, each in ``[minimum, maximum]``, as a tuple.

    Raises:
        TypeError: ``value`` is not a list or tuple, or holds a non-int.
        ValueError: ``value`` is empty (when ``nonempty``) or one is out of range.
    """
    if not isinstance(value, (list, tuple)):
        raise TypeError(
            f"{name} must be a tuple of ints, got {type(value).__name__} {value!r}"
        )
    if nonempty and not value:
        raise ValueError(f"{name} must hold at least one value, got {value!r}")
    return tuple(
        check_int(f"{name}[{i}]", v, minimum=minimum, maximum=maximum)
        for i, v in enumerate(value)
    )


def check_strs(name: str, value: object) -> tuple[str, ...]:
    """A list or tuple of str (texts, words), as a tuple; a str alone is refused.

    Raises:
        TypeError: ``value`` is not a list or tuple, or holds a non-str.
    """
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of str, got {type(value).__name__}")
    return tuple(check_str(f"{name}[{i}]", v) for i, v in enumerate(value))


def check_floats(
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    nonempty: bool = True,
) -> tuple[float, ...]:
    """A list or tuple of finite numbers in ``[minimum, maximum]``, as a tuple.

    Raises:
        TypeError: ``value`` is not a list or tuple, or holds a non-number.
        ValueError: ``value`` is empty (when ``nonempty``), or one is NaN, infinite
            or out of range.
    """
    if not isinstance(value, (list, tuple)):
        raise TypeError(
            f"{name} must be a tuple of numbers, got {type(value).__name__} {value!r}"
        )
    if nonempty and not value:
        raise ValueError(f"{name} must hold at least one value, got {value!r}")
    return tuple(
        check_finite_float(f"{name}[{i}]", v, minimum=minimum, maximum=maximum)
        for i, v in enumerate(value)
    )


# ---------------------------------------------------------------------------
# tensors
# ---------------------------------------------------------------------------
_KINDS = {
    "float": "a floating-point tensor",
    "int": "an integer tensor",
    "bool": "a boolean tensor",
}


@functools.lru_cache(maxsize=512)
def _parse(dims: str) -> tuple[bool, tuple[str, ...]]:
    """``"... seq_len d"`` -> ``(True, ("seq_len", "d"))``: leading dims, names."""
    tokens = tuple(dims.split())
    if "..." in tokens[1:]:
        raise ValueError(f"'...' may only lead a shape pattern, got {dims!r}")
    lead = bool(tokens) and tokens[0] == "..."
    return lead, tokens[1:] if lead else tokens


@functools.lru_cache(maxsize=64)
def _kind(kind: str | None) -> tuple[str | None, bool, str | None]:
    """``"index:vocab_size?"`` -> ``("int", True, "vocab_size")``: base, optional, bound."""
    if kind is None:
        return None, False, None
    optional = kind.endswith("?")
    kind = kind[:-1] if optional else kind
    if kind.startswith("index:"):
        return "int", optional, kind[len("index:"):]
    if kind and kind not in _KINDS:
        raise ValueError(f"unknown tensor kind {kind!r}; expected one of {list(_KINDS)}")
    return kind or None, optional, None


def _pattern(lead: bool, names: tuple[str, ...], sizes: Mapping[str, Size]) -> str:
    shown = ["..."] if lead else []
    for n in names:
        size = sizes.get(n)
        shown.append(f"{n}={size}" if isinstance(size, int) else n)
    return "(" + ", ".join(shown) + ("," if len(shown) == 1 and not lead else "") + ")"


def _shape(t: Tensor) -> str:
    dims = tuple(t.shape)
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def _wanted(dim: str, size: Size) -> str:
    if isinstance(size, int):
        return f"{dim} = {size}"
    low, high, *named = size if size is not None else (1, None)
    low = 1 if low is None else low
    if high is None:
        return f"{dim} >= {low}"
    return f"{low} <= {dim} <= {named[0]} ({high})" if named else f"{low} <= {dim} <= {high}"


def _in_range(value: int, size: Size) -> bool:
    if size is None:
        return value >= 1
    if isinstance(size, int):
        return value == size
    low, high = size[0], size[1]
    return value >= (1 if low is None else low) and (high is None or value <= high)


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """numpy's broadcasting of two shapes, ``None`` where it fails."""
    if a == b or not b:
        return a
    if not a:
        return b
    a, b = tuple(a), tuple(b)
    out = []
    for x, y in zip(reversed((1,) * (len(b) - len(a)) + a),
                    reversed((1,) * (len(a) - len(b)) + b)):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y) if 0 not in (x, y) else 0)
    return tuple(reversed(out))


_NO_SIZES: Mapping[str, Size] = {}


def check_tensors(
    *,
    like: Tensor | None = None,
    device: torch.device | str | None = None,
    sizes: Mapping[str, Size] | None = None,
    broadcast: str | tuple[str, ...] = (),
    same_dtype: bool = True,
    **tensors: tuple,
) -> dict[str, int]:
    """Check several tensors that meet in one computation; return the sizes found.

    Each tensor is given as ``name=(value, dims)`` or ``name=(value, dims, kind)``:

    * ``dims``: a shape pattern, ``"batch seq_len d_model"``; a tuple of patterns
      accepts any of them (``("seq_len d", "batch seq_len d")``).
    * ``kind``: ``"float"``, ``"int"``, ``"bool"``, or ``"index:<size>"`` (integers
      in ``[0, sizes[<size>])``, e.g. ``"index:vocab_size"``); ``None`` accepts any
      dtype. A trailing ``?`` allows ``None`` for the value (an optional argument).

    Args:
        like: A tensor the inputs meet (a layer's weight): every input must be on
            its device, and with ``kind`` ``None`` or ``"float"``, of its dtype.
        device: A device every input must be on (when no dtype is implied).
        sizes: Required sizes by name: an int (exact), ``(low, high)`` (inclusive,
            ``None`` for open; a third item names ``high`` in the message, e.g.
            ``(1, 64, "context_length")``), or ``None``. Named dims default to
            ``>= 1``.
        broadcast: Names of tensors (masks) whose named dims may also be 1 and
            whose rank may be lower; they bind no size.
        same_dtype: Require one dtype of the floating-point tensors (``False``
            where the computation converts them, as a norm does). Not enforced
            while autocast is enabled for the tensors' device.
        **tensors: The tensors, in order: the first to use a dim name binds it.

    Returns:
        ``{dim name: size}`` for every named dim bound.

    Raises:
        TypeError: A value is not a tensor.
        ValueError: Wrong dtype, rank, size, device; tensors that disagree; index
            values out of range.
    """
    sizes = _NO_SIZES if sizes is None else sizes
    if broadcast:
        broadcast = (broadcast,) if isinstance(broadcast, str) else tuple(broadcast)
        items = sorted(tensors.items(), key=lambda item: item[0] in broadcast)
    else:
        items = tensors.items()
    want_dtype = None
    where = "the module's weights"
    if like is not None:
        device = like.device
        if like.dtype.is_floating_point:
            want_dtype = like.dtype
    elif isinstance(device, str):
        device = torch.device(device)
    bound: dict[str, int] = {}
    binder: dict[str, str] = {}
    lead_shape: tuple[int, ...] | None = None
    lead_name = ""
    float_name = ""
    for name, spec in items:
        value, dims = spec[0], spec[1]
        if len(spec) > 2 and spec[2] is not None:
            base, optional, index = _kind(spec[2])
        else:
            base, optional, index = None, False, None
        if value is None and optional:
            continue
        if not isinstance(value, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        dtype = value.dtype
        # the kind of numbers
        if base is None and want_dtype is not None:
            base = "float"  # it must match a floating-point weight
        if base is not None:
            if base == "float":
                ok = dtype.is_floating_point
            elif base == "bool":
                ok = dtype == torch.bool
            else:
                ok = not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)
            if not ok:
                raise ValueError(f"{name} must be {_KINDS[base]}, got dtype {dtype}")
        # the shape
        mask = name in broadcast
        shape = value.shape
        ndim = len(shape)
        if dims.__class__ is str:
            lead, names = _parse(dims)
            if not (ndim == len(names) or (lead and ndim > len(names))):
                lead, names = _match_rank(name, value, dims, sizes, mask)
        else:
            lead, names = _match_rank(name, value, dims, sizes, mask)
        offset = ndim - len(names)
        for i, dim in enumerate(names):
            got = shape[offset + i]
            if mask:
                if got != 1 and dim in bound and got != bound[dim]:
                    raise ValueError(
                        f"{name} of shape {_shape(value)} does not broadcast to "
                        f"{_pattern(lead, names, sizes)}: {dim} is {got}, but "
                        f"{binder[dim]} has {dim} {bound[dim]} (a mask's dims may "
                        "also be 1)"
                    )
            elif dim in bound:
                if got != bound[dim]:
                    raise ValueError(
                        f"{name} must have shape {_pattern(lead, names, sizes)}, got "
                        f"shape {_shape(value)}: {dim} is {got}, but {binder[dim]} has "
                        f"{dim} {bound[dim]}"
                    )
            else:
                size = sizes.get(dim)
                if (got < 1) if size is None else (
                        got != size if size.__class__ is int else not _in_range(got, size)):
                    raise ValueError(
                        f"{name} must have shape {_pattern(lead, names, sizes)}, got "
                        f"shape {_shape(value)}: {dim} is {got}, expected "
                        f"{_wanted(dim, size)}"
                    )
                bound[dim], binder[dim] = got, name
        if lead:  # leading dims broadcast together (a mask's: to the others')
            front = shape[:offset]
            merged = front if lead_shape is None else _broadcast(lead_shape, front)
            if merged is None or (mask and lead_shape is not None and merged != lead_shape):
                raise ValueError(
                    f"the leading dims of {name} {tuple(front)} do not broadcast "
                    + (f"to those of {lead_name} {tuple(lead_shape)}" if mask else
                       f"with those of {lead_name} {tuple(lead_shape)}")
                )
            if lead_shape is None:
                lead_name = name
            lead_shape = merged
        if index is not None:
            _check_index(name, value, index, sizes)
        # one dtype for what is computed together, one device for everything
        if same_dtype and dtype.is_floating_point and base in (None, "float"):
            if want_dtype is None:
                want_dtype, float_name = dtype, name
            elif dtype != want_dtype and not torch.is_autocast_enabled(value.device.type):
                # under autocast, mixed dtypes are how the computation is meant to run
                if like is not None:
                    raise ValueError(
                        f"{name} has dtype {dtype} but the module's weights have "
                        f"{want_dtype}; convert one of them (e.g. {name}.to({want_dtype}))"
                    )
                raise ValueError(
                    f"{name} has dtype {dtype} but {float_name} has {want_dtype}; tensors "
                    f"computed together must share a dtype (e.g. {name}.to({want_dtype}))"
                )
        if device is None:
            device, where = value.device, name
        elif device != value.device:
            raise ValueError(
                f"{name} is on {value.device} but {where} is on {device}; move it "
                f"(e.g. {name}.to({str(device)!r}))"
            )
    return bound


def check_tensor(
    name: str,
    value: object,
    dims: str | tuple[str, ...] = "...",
    kind: str | None = None,
    *,
    like: Tensor | None = None,
    device: torch.device | str | None = None,
    **sizes: Size,
) -> dict[str, int]:
    """Check one tensor: :func:`check_tensors` with ``name=(value, dims, kind)``.

    ``check_tensor("x", x, "batch seq_len d_in", like=self.W_query, d_in=3)``.
    """
    if dims == "..." and kind == "float" and like is None and device is None and (
            isinstance(value, Tensor) and value.dtype.is_floating_point):
        return {}  # the common case of an activation function, without the engine
    return check_tensors(like=like, device=device, sizes=sizes,
                         **{name: (value, dims, kind)})


def _match_rank(
    name: str,
    value: Tensor,
    dims: str | tuple[str, ...],
    sizes: Mapping[str, Size],
    broadcastable: bool,
) -> tuple[bool, tuple[str, ...]]:
    patterns = (dims,) if isinstance(dims, str) else dims
    ndim = value.ndim
    for pattern in patterns:
        lead, names = _parse(pattern)
        if ndim == len(names) or (lead and ndim >= len(names)):
            return lead, names
        if broadcastable and lead and 1 <= ndim < len(names):
            return lead, names[len(names) - ndim:]
    wanted = " or ".join(_pattern(*_parse(p), sizes) for p in patterns)
    raise ValueError(
        f"{name} must have shape {wanted}, got a {ndim}-D tensor of shape "
        f"{_shape(value)}"
    )


def _check_index(name: str, value: Tensor, bound_name: str, sizes: Mapping) -> None:
    high = sizes.get(bound_name)
    if value.numel() == 0 or value.device.type == "meta":
        return
    low_v, high_v = (int(v) for v in torch.aminmax(value))
    if low_v < 0 or (high is not None and high_v >= high):
        upper = f"{high}) ({bound_name})" if high is not None else "inf)"
        raise ValueError(
            f"{name} must lie in [0, {upper}, got values from {low_v} to {high_v}"
        )


def check_reduction(name: str, value: object, dim: object) -> int:
    """A floating-point tensor that can be reduced along ``dim``; ``dim`` normalised.

    Raises:
        TypeError: ``value`` is not a tensor or ``dim`` not an int.
        ValueError: ``value`` is 0-d, not floating point or empty along ``dim``, or
            ``dim`` is out of range.
    """
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension, got a 0-d tensor")
    if not value.dtype.is_floating_point:
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    dim = check_int("dim", dim, minimum=-value.ndim, maximum=value.ndim - 1)
    if value.shape[dim] == 0:
        raise ValueError(
            f"{name} has size 0 along dim={dim} (shape {_shape(value)}); expected at "
            "least one element to normalise over"
        )
    return dim % value.ndim


def check_token_ids(
    name: str,
    value: Tensor | np.ndarray,
    vocab_size: int | None = None,
    *,
    arrays: bool = False,
) -> Tensor | np.ndarray:
    """Integer token ids in ``[0, vocab_size)``, at least one of them.

    Args:
        name: The argument's name.
        value: A tensor (or, with ``arrays``, a numpy array or memmap) of ids.
        vocab_size: The ids' upper bound (``None``: not checked).
        arrays: Accept numpy arrays too (a tokenized corpus); their range check
            reads them whole.

    Raises:
        TypeError: ``value`` is not a tensor (or numpy array, with ``arrays``).
        ValueError: Empty, not integer (floats, bools) or out of range.
    """
    if not (isinstance(value, Tensor) or arrays and isinstance(value, np.ndarray)):
        kinds = "a torch.Tensor or numpy array" if arrays else "a torch.Tensor"
        raise TypeError(f"{name} must be {kinds}, got {type(value).__name__}")
    if not _integer(value):
        raise ValueError(f"{name} must hold integer token ids, got dtype {value.dtype}")
    if value.size == 0 if isinstance(value, np.ndarray) else value.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(value.shape)}); expected ids")
    if vocab_size is not None and (isinstance(value, np.ndarray)
                                   or value.device.type != "meta"):
        low, high = int(value.min()), int(value.max())
        if low < 0 or high >= vocab_size:
            raise ValueError(
                f"{name} must lie in [0, {vocab_size}) (vocab_size), "
                f"got values from {low} to {high}"
            )
    return value


def check_corpus(name: str, value: object) -> Tensor | np.ndarray:
    """A tokenized corpus: a 1-D array of integer token ids (a numpy array, a
    ``numpy.memmap`` of a file on disk, or a CPU tensor), read in windows.

    Its ids are not scanned: a corpus on disk may be gigabytes.

    Raises:
        TypeError: ``value`` is none of those.
        ValueError: A tensor not on the CPU, a dtype that is not integer, not 1-D.
    """
    if isinstance(value, Tensor):
        if value.device.type != "cpu":
            raise ValueError(f"{name} must be on the CPU, got {value.device}")
    elif not isinstance(value, np.ndarray):
        raise TypeError(
            f"{name} must be a numpy array, numpy.memmap or torch.Tensor of token "
            f"ids, got {type(value).__name__}"
        )
    if not _integer(value):
        raise ValueError(f"{name} must hold integer token ids, got dtype {value.dtype}")
    if value.ndim != 1:
        raise ValueError(f"{name} must be 1-D (n_tokens,), got shape {tuple(value.shape)}")
    return value


def check_logits(name: str, value: object) -> Tensor:
    """``value`` if it is a floating-point ``(..., vocab_size)`` tensor with
    ``vocab_size >= 1`` (the scores a language model gives every token).

    Raises:
        TypeError: ``value`` is not a tensor.
        ValueError: ``value`` is 0-d, has no last dimension to speak of, or is
            not floating point.
    """
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.ndim == 0 or value.shape[-1] == 0 or not value.dtype.is_floating_point:
        raise ValueError(
            f"{name} must be a floating-point (..., vocab_size) tensor, got shape "
            f"{tuple(value.shape)} and dtype {value.dtype}"
        )
    return value


def _integer(value: Tensor | np.ndarray) -> bool:
    """Whether ``value`` holds integers (not floats, complex numbers or bools)."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "iu"
    dtype = value.dtype
    return not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)


def check_language_model(name: str, value: object) -> torch.nn.Module:
    """``value`` is a language model the sampling and evaluation code can drive: an
    ``nn.Module`` with ``vocab_size``, ``context_length`` and ``layers`` (a
    :class:`llmlab.models.llama.TransformerLM`); returns it."""
    check_type(name, value, torch.nn.Module, expected="a TransformerLM")
    missing = [a for a in ("vocab_size", "context_length", "layers") if not hasattr(value, a)]
    if missing:
        raise TypeError(
            f"{name} must be a language model with vocab_size, context_length and "
            f"layers (a llmlab.models.llama.TransformerLM); {type(value).__name__} lacks "
            f"{', '.join(missing)}")
    return value
