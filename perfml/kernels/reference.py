"""Host side of a kernel launch: build the arguments a sidecar declares, and validate
the outputs against the sidecar's ``[validation]`` rule (numpy references for the
application kernels).

Every backend (CuPy on a GPU, replay of recorded results) uses these two functions, so
a measurement is only accepted when the kernel's output is right, as BabelStream does
before it reports a bandwidth.

Examples
--------
>>> from perfml.kernels.catalog import get_family
>>> from perfml.kernels.reference import build_arguments, validate
>>> fam = get_family("vectorAdd")                                      # doctest: +SKIP
>>> params = {"N": 1000}; launch = fam.launch(params)                  # doctest: +SKIP
>>> args = build_arguments(fam, params, launch, random_state=0)        # doctest: +SKIP
>>> out = {"C": args["A"] + args["B"]}     # what the GPU would return  # doctest: +SKIP
>>> validate(fam, params, launch, args, out)                           # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from perfml.errors import KernelValidationError
from perfml.kernels.family import ArgSpec, KernelFamily
from perfml.kernels.launch import LaunchConfig

__all__ = [
    "REFERENCES",
    "KernelValidationError",
    "build_arguments",
    "validate",
    "matmul",
    "matsum",
    "vector_add",
    "dotprod_partials",
    "subseqmax",
    "copy",
]


Inputs = Mapping[str, Any]
Reference = Callable[[Inputs, Mapping[str, int], LaunchConfig], np.ndarray]


# --------------------------------------------------------------------------- arguments


def _fill_value(fam: KernelFamily, arg: ArgSpec, names: Mapping[str, Any]) -> float:
    return fam.evaluate(arg.init_value if arg.init_value is not None else 0, names,
                        f"args.{arg.name}.init_value", KernelValidationError)


def _random_ring(n: int, stride: int, rng: np.random.Generator) -> np.ndarray:
    """A pointer-chasing ring over the hop slots 0, stride, 2 stride, ... in random order.

    Slot 0 starts the ring (the kernels begin their walk at offset 0); every slot holds
    the byte offset of the next slot of the ring, the last one that of slot 0; elements
    between slots stay 0 and are never read. Unlike ``chase`` (each hop ``stride`` on),
    consecutive hops land on unrelated DRAM pages, so no row-buffer hit or prefetch
    shortens a hop, and the ring can be dense (one hop per 128-byte line) and still touch
    more lines than a large L2 holds.
    """
    slots = np.arange(max(1, n // stride), dtype=np.uint64) * np.uint64(stride)
    order = np.concatenate([slots[:1], rng.permutation(slots[1:])])
    out = np.zeros(n, np.uint64)
    out[order] = np.roll(order, -1) * np.uint64(8)
    return out


def _buffer(fam: KernelFamily, arg: ArgSpec, params: Mapping[str, int], launch: LaunchConfig,
            rng: np.random.Generator) -> np.ndarray:
    n = fam.buffer_elements(arg, params, launch)
    dtype = np.dtype(arg.dtype)
    names = fam.expression_names(params, launch)
    if arg.init == "zeros":
        return np.zeros(n, dtype)
    if arg.init == "ones":
        return np.ones(n, dtype)
    if arg.init == "fill":
        return np.full(n, _fill_value(fam, arg, names), dtype)
    if arg.init == "arange":
        return np.arange(n).astype(dtype)
    if arg.init == "random":
        if dtype.kind == "f":
            return rng.random(n, dtype=np.float64).astype(dtype)
        return rng.integers(0, 1 << min(15, dtype.itemsize * 8 - 1), n).astype(dtype)
    if arg.init == "random_int":
        high = int(_fill_value(fam, arg, names))
        low = -high if dtype.kind in "if" else 0
        return rng.integers(low, high, n).astype(dtype)
    if arg.init in ("chase", "chase_random"):
        stride = int(fam.evaluate(arg.stride, names, f"args.{arg.name}.stride",
                                  KernelValidationError))
        if dtype.itemsize != 8:
            raise KernelValidationError(
                f"{fam.sidecar_path}: args.{arg.name}: init = \"{arg.init}\" needs a 64-bit dtype "
                f"(byte offsets), found {arg.dtype}"
            )
        if arg.init == "chase":
            nxt = (np.arange(n, dtype=np.uint64) + np.uint64(stride)) % np.uint64(n)
            return (nxt * np.uint64(8)).astype(dtype)
        return _random_ring(n, max(1, stride), rng).astype(dtype)
    raise KernelValidationError(f"{fam.sidecar_path}: args.{arg.name}: unknown init {arg.init!r}")


def build_arguments(
    family: KernelFamily,
    params: Mapping[str, int] | None,
    launch: LaunchConfig,
    *,
    random_state: int | np.random.Generator | None = None,
) -> dict[str, Any]:
    """Host values of every kernel argument, in call order.

    Buffers are 1-D numpy arrays of the declared dtype and length; scalars are numpy
    scalars of the declared dtype (so a backend passes them with the right C type).
    """
    rng = np.random.default_rng(random_state)
    resolved = family.resolve_params(params)
    out: dict[str, Any] = {}
    for arg in family.args:
        if arg.kind == "buffer":
            out[arg.name] = _buffer(family, arg, resolved, launch, rng)
        else:
            value = family.scalar_value(arg, resolved, launch)
            out[arg.name] = np.dtype(arg.dtype).type(value)
    return out


# --------------------------------------------------------------------------- references


def matmul(inputs: Inputs, params: Mapping[str, int], launch: LaunchConfig) -> np.ndarray:
    """``P = M N`` for row-major ``N x N`` matrices (all four matMul variants)."""
    n = int(params["N"])
    m = np.asarray(inputs["Md"], np.float64).reshape(n, n)
    b = np.asarray(inputs["Nd"], np.float64).reshape(n, n)
    return (m @ b).astype(np.float32).ravel()


def matsum(inputs: Inputs, params: Mapping[str, int], launch: LaunchConfig) -> np.ndarray:
    """``C = A + B`` (both matSum variants)."""
    return (np.asarray(inputs["A"], np.float32) + np.asarray(inputs["B"], np.float32))


def vector_add(inputs: Inputs, params: Mapping[str, int], launch: LaunchConfig) -> np.ndarray:
    """``C = A + B``."""
    return np.asarray(inputs["A"], np.float32) + np.asarray(inputs["B"], np.float32)


def dotprod_partials(inputs: Inputs, params: Mapping[str, int], launch: LaunchConfig) -> np.ndarray:
    """Per-block partial sums of ``a . b`` for the grid-stride mapping of ``dotProd.cu``.

    Element ``i`` is summed by global thread ``i % threads``, i.e. by block
    ``(i % threads) // threads_per_block``.
    """
    a = np.asarray(inputs["a"], np.float64)
    b = np.asarray(inputs["b"], np.float64)
    n = int(params["N"])
    owner = (np.arange(n) % launch.threads) // launch.threads_per_block
    return np.bincount(owner, weights=a[:n] * b[:n], minlength=launch.blocks).astype(np.float32)


def subseqmax(inputs: Inputs, params: Mapping[str, int], launch: LaunchConfig) -> np.ndarray:
    """Interval summaries of ``subSeqMax.cu``: per thread (best, prefix, suffix, sum, count).

    Thread ``t`` (global index) owns elements ``[t*L, (t+1)*L)`` with ``L = N // threads``;
    best = maximum subarray sum (non-empty), prefix = maximum non-empty prefix sum,
    suffix = maximum non-empty suffix sum, sum = total.
    """
    threads = launch.threads
    n = int(params["N"])
    length = n // threads
    x = np.asarray(inputs["vet"], np.int64)[: threads * length].reshape(threads, length)
    cs = np.cumsum(x, axis=1)
    zeros = np.zeros((threads, 1), np.int64)
    before = np.concatenate([zeros, cs[:, :-1]], axis=1)  # prefix sums p_0 .. p_{L-1}
    running_min = np.minimum.accumulate(before, axis=1)
    best = (cs - running_min).max(axis=1)
    prefix = cs.max(axis=1)
    total = cs[:, -1]
    suffix = total - before.min(axis=1)
    count = np.full(threads, length, np.int64)
    return np.stack([best, prefix, suffix, total, count], axis=1).astype(np.int32).ravel()


def copy(inputs: Inputs, params: Mapping[str, int], launch: LaunchConfig) -> np.ndarray:
    """``dst == src`` (access_size)."""
    return np.asarray(inputs["src"])


#: reference functions by the name used in sidecars (``validation.reference``)
REFERENCES: dict[str, Reference] = {
    "matmul": matmul,
    "matsum": matsum,
    "vector_add": vector_add,
    "dotprod_partials": dotprod_partials,
    "subseqmax": subseqmax,
    "copy": copy,
}


# --------------------------------------------------------------------------- validation


def validate(
    family: KernelFamily,
    params: Mapping[str, int] | None,
    launch: LaunchConfig,
    inputs: Inputs,
    outputs: Mapping[str, np.ndarray],
) -> None:
    """Check a launch's outputs against the family's ``[validation]`` rule.

    Parameters
    ----------
    inputs : mapping
        The host arguments as built by :func:`build_arguments` (before the launch).
    outputs : mapping
        The buffers read back after the launch, by argument name.

    Raises
    ------
    KernelValidationError
        Saying which buffer is wrong, how many elements differ and the first mismatch.
    """
    rule = family.validation
    if rule.kind == "none":
        return
    resolved = family.resolve_params(params)
    name = rule.buffer
    if name not in outputs:
        raise KernelValidationError(
            f"{family.name}: output buffer {name!r} was not read back; the driver must return "
            f"every [[args]] buffer with output = true"
        )
    got = np.asarray(outputs[name])
    if rule.kind == "untouched":
        expected: np.ndarray | float = np.asarray(inputs[name])
        what = "its initial value (the never-true store fired)"
    elif rule.kind == "equals":
        expected = family.evaluate(rule.expected, family.expression_names(resolved, launch),
                                   "validation.expected", KernelValidationError)
        what = f"{expected}"
    elif rule.kind == "finite":
        bad = ~np.isfinite(got.astype(np.float64))
        if bad.any():
            raise KernelValidationError(
                f"{family.name}: {int(bad.sum())} of {got.size} elements of {name!r} are not finite"
            )
        return
    else:  # reference
        fn = REFERENCES.get(rule.reference or "")
        if fn is None:
            raise KernelValidationError(
                f"{family.sidecar_path}: validation.reference {rule.reference!r} is not in "
                f"perfml.kernels.reference.REFERENCES ({', '.join(REFERENCES)})"
            )
        expected = fn(inputs, resolved, launch)
        what = f"the numpy reference {rule.reference}()"
    exp_arr = np.broadcast_to(np.asarray(expected), got.shape) if np.ndim(expected) == 0 \
        else np.asarray(expected)
    if exp_arr.shape != got.shape:
        raise KernelValidationError(
            f"{family.name}: {name!r} has shape {got.shape}, expected {exp_arr.shape}"
        )
    if got.dtype.kind == "f" or exp_arr.dtype.kind == "f":
        ok = np.isclose(got.astype(np.float64), exp_arr.astype(np.float64),
                        rtol=rule.rtol, atol=rule.atol, equal_nan=rule.kind == "untouched")
    else:
        ok = got == exp_arr
    if not ok.all():
        first = int(np.flatnonzero(~ok)[0])
        raise KernelValidationError(
            f"{family.name}: {int((~ok).sum())} of {got.size} elements of {name!r} differ from "
            f"{what}; first at index {first}: got {got.ravel()[first]!r}, expected "
            f"{exp_arr.ravel()[first]!r} (rtol={rule.rtol}, atol={rule.atol})"
        )
