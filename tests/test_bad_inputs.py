"""Bad input gets a clear error across the public API.

Every case is one distinct mistake a reader can make after copying a snippet and
changing an argument. Each must raise a ``ValueError`` (``TypeError`` where the
argument is not even the right kind of object) whose message names the argument
(checked on its own) and says what was got and what was expected (the ``match``
pattern). ``GOOD`` holds the controls: the same calls with a value that is just
right, which must go through. Every public name of the package that takes arguments
has at least one case (``test_every_public_name_has_a_bad_input``).

The cases live in one file per lecture, ``tests/bad_inputs/<topic>.py`` (the grouping
and how a new lecture adds its file: ``tests/bad_inputs/__init__.py``); this file
collects them from every file there and holds the checks.

NaN policy (where NaN matters):

* token ids and positions are integer tensors, so a float tensor (the only
  kind that can hold NaN) is refused by the dtype check;
* NaN in a scalar hyper-parameter (``eps``, RoPE's ``theta``, ``dropout``)
  would poison every output silently, so it is refused when the module is built;
* NaN in activations (attention inputs, norm inputs) is *not* searched for: it
  propagates to the output, as in ``nn.LayerNorm`` / ``F.scaled_dot_product_attention``,
  and scanning every tensor would cost a device sync on each call.
  ``test_nan_activations_propagate_instead_of_raising`` pins that decision.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import llmlab
import llmlab.checks as checks
import llmlab.models.gpt2 as gpt2
from llmlab.attention import SelfAttentionV1
from llmlab.functional import causal_mask
from llmlab.layers import Linear
from llmlab.norm import LayerNorm, RMSNorm
from llmlab.position import RotaryPositionalEmbedding

from bad_inputs import NAN, Case, _mha, _x, collect, shown, topic_of

torch.set_num_threads(1)

COLLECTED = collect()  # every file of tests/bad_inputs/
CASES = COLLECTED.cases
GOOD = COLLECTED.good
EXEMPT = COLLECTED.exempt  # public names without a bad-input case, and why


def _case_ids() -> list[str]:
    return [c.id for c in CASES]


def test_enough_distinct_bad_inputs(record_property) -> None:
    ids = _case_ids()
    assert len(set(ids)) == len(ids), "duplicate case ids"
    record_property("bad_inputs", len(ids))
    record_property("good_controls", len(GOOD))
    assert len(ids) >= 150, f"only {len(ids)} bad inputs"


@pytest.mark.parametrize("bad", CASES, ids=_case_ids())
def test_bad_input_is_refused_with_a_clear_message(bad: Case) -> None:
    with pytest.raises(bad.error) as info:
        bad.call()
    message = str(info.value)
    # the message names the argument, as a whole word ...
    where = f"{bad.id} ({shown(COLLECTED.where[bad.id])})"
    assert re.search(rf"(?<![\w]){re.escape(bad.arg)}(?![\w])", message), (
        f"{where}: the message does not name {bad.arg!r}: {message}")
    # ... and says what it got and what was expected
    assert re.search(bad.match, message), f"{where}: {message!r} !~ {bad.match!r}"
    assert type(info.value) is bad.error, f"{where}: {type(info.value).__name__}"


@pytest.mark.parametrize(("name", "call"), GOOD, ids=[g[0] for g in GOOD])
def test_good_input_goes_through(name: str, call: Callable[[], object]) -> None:
    result = call()
    assert result is not False, name


# --------------------------------------------------------------------------------------
# every public name that takes arguments has a bad input
# --------------------------------------------------------------------------------------
# Left out: the build's machinery, every module of llmlab.build but the two whose
# functions pages call (course, provenance): its own tests cover it
# (tests/test_precompute.py, test_blocks.py, test_html_transforms.py, test_cache.py);
# llmlab.cli (bad flags exit with code 2 and one line on stderr, tests/test_cli.py).
READERS_BUILD_MODULES = {"llmlab.build.course", "llmlab.build.provenance"}
NOT_PUBLIC = {"llmlab.cli"}


def _public_modules() -> list[str]:
    """Every module of the package a reader may import: found, not listed, so that a
    new lecture's module is checked without editing this file. Private modules (a
    ``_``-prefixed part anywhere in the name) and ``NOT_PUBLIC`` are left out."""
    found = ["llmlab"]
    for info in pkgutil.walk_packages(llmlab.__path__, prefix="llmlab."):
        parts = info.name.split(".")
        machinery = parts[:2] == ["llmlab", "build"] and info.name not in READERS_BUILD_MODULES
        if machinery or info.name in NOT_PUBLIC or any(p.startswith("_") for p in parts):
            continue
        found.append(info.name)
    return found


PUBLIC_MODULES = _public_modules()


def _is_data_class(obj: object) -> bool:
    """Results and records: dataclasses and NamedTuples that experiments fill in."""
    if not inspect.isclass(obj):
        return False
    validated = {"GPT2Config", "LlamaConfig", "TinyLMSettings", "Label"}
    if obj.__name__ in validated:
        return False
    return hasattr(obj, "__dataclass_fields__") or hasattr(obj, "_fields")


def _exported(module: object) -> list[str]:
    """``__all__``; for a module without one, the public names defined in it."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [name for name, obj in vars(module).items() if not name.startswith("_")
            and getattr(obj, "__module__", None) == module.__name__]


def _public_callables() -> dict[str, object]:
    found: dict[int, tuple[str, object]] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for attr in _exported(module):
            obj = getattr(module, attr)
            if not callable(obj) or _is_data_class(obj) or inspect.isclass(obj) and (
                    issubclass(obj, BaseException)):
                continue
            home = getattr(obj, "__module__", module_name)
            name = f"{module_name}.{attr}"
            key = id(getattr(obj, "uncached", obj))
            # prefer the name of the module the object is defined in
            if key not in found or home == module_name:
                found[key] = (name, obj)
    return dict(found.values())


def test_every_public_name_has_a_bad_input() -> None:
    public = _public_callables()
    covered = set()
    by_object = {id(getattr(o, "uncached", o)): n for n, o in public.items()}
    for c in CASES:
        module_name, _, attr = c.target.rpartition(".")
        obj = getattr(importlib.import_module(module_name), attr)
        covered.add(by_object.get(id(getattr(obj, "uncached", obj)), c.target))
    missing = sorted(set(public) - covered - set(EXEMPT))
    assert not missing, "public names without a bad-input case: " + "; ".join(
        f"{name} (add one to {_file_for(name)})" for name in missing)
    stale = sorted(set(EXEMPT) - set(public))
    assert not stale, "EXEMPT names that are not public callables: " + "; ".join(
        f"{name} ({shown(COLLECTED.exempt_where[name])})" for name in stale)


def _file_for(name: str) -> str:
    topic = topic_of(name)
    if topic is not None:
        return shown(topic)
    return (f"{shown('core')} if several lectures use it, else the file of the lecture "
            f"that teaches it")


def test_cases_live_in_the_file_of_their_topic() -> None:
    """A case or an EXEMPT entry whose target's module path names a topic
    (``llmlab.report.training.x``) sits in that topic's file."""
    misplaced = [f"{c.id!r} -> {c.target} is in {shown(COLLECTED.where[c.id])}, "
                 f"move it to {shown(topic)}" for c in CASES
                 if (topic := topic_of(c.target)) not in (None, COLLECTED.where[c.id])]
    misplaced += [f"EXEMPT {name} is in {shown(where)}, move it to {shown(topic)}"
                  for name, where in COLLECTED.exempt_where.items()
                  if (topic := topic_of(name)) not in (None, where)]
    assert not misplaced, "\n".join(misplaced)


# --------------------------------------------------------------------------------------
# property tests of the size and dtype checks
# --------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(value=st.one_of(st.integers(-50, 50), st.booleans(), st.floats(allow_nan=True),
                       st.text(max_size=3), st.none()),
       minimum=st.integers(-5, 5))
def test_check_int_accepts_exactly_the_ints_in_range(value, minimum) -> None:
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if is_int and value >= minimum:
        assert checks.check_int("size", value, minimum=minimum) == value
        return
    error = ValueError if is_int else TypeError
    with pytest.raises(error, match=r"^size must be an int"):
        checks.check_int("size", value, minimum=minimum)


@settings(max_examples=40, deadline=None)
@given(size=st.one_of(st.integers(-3, 6), st.booleans(), st.floats(-3, 6)))
def test_public_sizes_refuse_what_check_int_refuses(size) -> None:
    """Every size argument of a layer behaves as check_int: Linear, RMSNorm, RoPE..."""
    makers = {"in_features": lambda s: Linear(s, 2), "d_model": lambda s: RMSNorm(s),
              "n_heads": lambda s: gpt2.MultiHeadSelfAttention(12, s),
              "max_seq_len": lambda s: RotaryPositionalEmbedding(1e4, 4, s),
              "seq_len": causal_mask}
    ok = isinstance(size, int) and not isinstance(size, bool) and size >= 1
    for arg, make in makers.items():
        if ok and not (arg == "n_heads" and 12 % size):
            make(size)
            continue
        with pytest.raises((TypeError, ValueError), match=arg):
            make(size)


DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8,
          torch.uint8, torch.int32, torch.int64, torch.bool, torch.complex64]


@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from(DTYPES), kind=st.sampled_from(["float", "int", "bool"]),
       shape=st.lists(st.integers(1, 3), min_size=1, max_size=3))
def test_check_tensor_kinds_follow_the_dtype(dtype, kind, shape) -> None:
    x = torch.zeros(tuple(shape), dtype=dtype)
    accepted = {"float": dtype.is_floating_point, "bool": dtype == torch.bool,
                "int": not (dtype.is_floating_point or dtype.is_complex
                            or dtype == torch.bool)}[kind]
    if accepted:
        assert checks.check_tensor("x", x, "...", kind) == {}
    else:
        with pytest.raises(ValueError, match=rf"^x must be .* tensor, got dtype {dtype}"):
            checks.check_tensor("x", x, "...", kind)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=4),
       want=st.integers(1, 4))
def test_check_tensor_shapes(shape, want) -> None:
    """``"... d"`` with ``d=want``: passes iff the last dim is ``want``, else names d."""
    x = torch.zeros(tuple(shape))
    if shape and shape[-1] == want:
        assert checks.check_tensor("x", x, "... d", d=want) == {"d": want}
    else:
        with pytest.raises(ValueError, match=r"^x must have shape \(\.\.\., d=\d\)"):
            checks.check_tensor("x", x, "... d", d=want)


@settings(max_examples=30, deadline=None)
@given(a=st.sampled_from([torch.float16, torch.float32, torch.float64]),
       b=st.sampled_from([torch.float16, torch.float32, torch.float64]))
def test_tensors_that_meet_share_a_dtype(a, b) -> None:
    q, k = torch.zeros(2, 3, dtype=a), torch.zeros(2, 3, dtype=b)
    if a == b:
        checks.check_tensors(q=(q, "n d", "float"), k=(k, "n d", "float"))
    else:
        with pytest.raises(ValueError, match=rf"^k has dtype {b} but q has {a}"):
            checks.check_tensors(q=(q, "n d", "float"), k=(k, "n d", "float"))


def test_nan_activations_propagate_instead_of_raising() -> None:
    """The documented choice: NaN in activations flows through, row by row."""
    x = torch.randn(2, 3, 4)
    x[0, 1, 2] = NAN
    for norm in (RMSNorm(4), LayerNorm(4)):
        y = norm(x)
        assert torch.isnan(y[0, 1]).all()  # the poisoned row
        assert not torch.isnan(y[1]).any()  # the others are untouched
    # attention raises nothing either; note that even a *future* NaN reaches
    # position 0, through 0 * NaN = NaN in weights @ values (torch's SDPA agrees)
    out = _mha().eval()(x)
    assert torch.isnan(out[0]).all() and not torch.isnan(out[1]).any()


def test_autocast_mixes_dtypes_on_purpose() -> None:
    """Under autocast bf16 activations meet fp32 weights by design; outside, refused."""
    module = SelfAttentionV1(3, 2)
    x = _x(1, 6, 3, dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert module(x).dtype == torch.bfloat16
    with pytest.raises(ValueError, match=r"x has dtype torch\.bfloat16 but the module"):
        module(x)
