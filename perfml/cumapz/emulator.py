"""Warp-level emulation of a kernel description's memory accesses.

"Using the given thread block size and grid size information, CuMAPz constructs a
loop structure that exactly follows the execution of each warp in a block [...]
memory references, which are functions of block index, thread index, and loop
indices, are plugged in the loop. We essentially generate a trace of all memory
addresses accessed in each warp." (Kim & Shrivastava 2011, Sec. 5, Fig. 4.)

Here the loop over warps is vectorized: blocks are processed in chunks, and every
expression is evaluated once per chunk over NumPy arrays holding one element per
thread. Addresses are then folded per half-warp (coalescing, bank conflicts) and
per warp (branch divergence) without materialising the trace. The result is a
:class:`MemoryTrace` of counts; :mod:`perfml.cumapz.factors` turns it into the factors.

Order of emulation inside a block: every data fetch pair first (building the
block's global -> shared address mapping, Sec. 5 "Each buffer will have the mapping
information"), then unpaired shared accesses, then the global references in program
order; a reference whose address is in a buffer of the same block is served by
shared memory (Sec. 5.1), the rest go to global memory.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perfml.cumapz.description import KernelDescription
from perfml.cumapz.device import CumapzDevice
from perfml.cumapz.factors import channel_skew_of_counts, n_blk_to_check, occupancy
from perfml.errors import KernelDescriptionError, WorkLimitError

__all__ = ["DEFAULT_MAX_ACCESSES", "MIN_STEP_ACCESSES", "MemoryTrace", "emulate", "emulated_accesses", "LaunchGeometry",
           "geometry"]

_SENTINEL = np.iinfo(np.int64).max
#: threads emulated at once (bounds memory: a few int64 arrays of this length)
DEFAULT_CHUNK_THREADS = 1 << 20
#: most element accesses (emulated threads x memory references per thread) one
#: emulation may perform (about half a minute of emulation); the shipped descriptions
#: need at most 1.3e7 (transpose_5_diagonal_unpadded). A larger
#: analysis is refused before anything is allocated (``--max-accesses`` raises it).
DEFAULT_MAX_ACCESSES = 1 << 26
#: one evaluation step (a reference at one loop iteration over one chunk of blocks) costs
#: at least as much as this many element accesses: its fixed Python overhead (~0.2 ms)
MIN_STEP_ACCESSES = 512


@dataclass(frozen=True)
class LaunchGeometry:
    """Grid, block, occupancy and channel-skew window of one description on one device."""

    grid: tuple[int, int]
    block: tuple[int, int]
    threads_per_block: int
    shared_bytes_per_block: int
    max_blks: int
    occupancy_pct: float
    n_blk_to_check: int
    n_shm_load: int


@dataclass
class MemoryTrace:
    """Counts accumulated over every warp of the emulated kernel."""

    geometry: LaunchGeometry
    #: eq. (1) numerator: bytes served by shared memory buffers to global references
    bytes_shmem: int = 0
    #: element accesses of global references served by buffers (Table I "data reuse")
    n_buffered_accesses: int = 0
    #: eq. (1) denominator: bytes transferred by data fetch loads
    bytes_buffered: int = 0
    #: eq. (3): distinct bytes requested / transferred by global memory accesses
    bytes_access: int = 0
    bytes_tr: int = 0
    n_transactions: int = 0
    #: element accesses that reached global memory (fetch loads included)
    n_global_accesses: int = 0
    #: eq. (6): half-warp shared requests and the sum of their serialisation degrees
    n_shared_requests: int = 0
    n_shared_serialized: int = 0
    #: eq. (7): (reference, buffer, warp) terms and the sum of their path counts
    n_branch_slots: int = 0
    n_path: int = 0
    n_diverged: int = 0
    #: eq. (5) per global access instruction over the first n_blk_to_check blocks
    channel_skews: list[float] = field(default_factory=list)
    channel_weights: list[float] = field(default_factory=list)
    channel_labels: list[str] = field(default_factory=list)
    channel_skipped: bool = False


def _scalar(expr: Any, env: dict[str, Any], what: str) -> int:
    value = expr.evaluate(env)
    arr = np.asarray(value)
    if arr.ndim != 0 or not np.issubdtype(arr.dtype, np.integer) and not float(arr).is_integer():
        raise KernelDescriptionError(f"{expr.where}: {what} {expr.text!r} must be a whole number")
    return int(arr)


def geometry(desc: KernelDescription, device: CumapzDevice) -> LaunchGeometry:
    """Evaluate launch sizes, occupancy (for eq. 2) and ``n_blk_to_check`` (eq. 4)."""
    env: dict[str, Any] = dict(desc.params)
    gx, gy = (_scalar(e, env, "grid size") for e in desc.grid)
    bdx, bdy = (_scalar(e, env, "block size") for e in desc.block)
    for v, what in ((gx, "grid x"), (gy, "grid y"), (bdx, "block x"), (bdy, "block y")):
        if v <= 0:
            raise KernelDescriptionError(f"{desc.name}: {what} must be positive, found {v}")
    shared = 0
    for buf in desc.buffers.values():
        shape = [_scalar(e, env, "buffer dimension") for e in buf.shape]
        shared += math.prod(shape) * buf.elem_bytes
    blocks, occ = occupancy(
        threads_per_block=bdx * bdy,
        warp_size=device.warp_size,
        shared_bytes_per_block=shared,
        registers_per_thread=desc.registers_per_thread,
        max_blocks_per_sm=device.max_blocks_per_sm,
        max_threads_per_sm=device.max_threads_per_sm,
        shared_mem_per_sm_bytes=device.shared_mem_per_sm_bytes,
        registers_per_sm=device.registers_per_sm,
    )
    if blocks == 0:
        registers = (f" and {desc.registers_per_thread} registers per thread"
                     f" ({desc.registers_per_thread * bdx * bdy:,} of the SM's {device.registers_per_sm:,})"
                     if desc.registers_per_thread and device.registers_per_sm else "")
        raise KernelDescriptionError(
            f"{desc.name}: a block of {bdx}x{bdy} threads with {shared} bytes of shared memory{registers} "
            f"does not fit on one SM of {device.board} ({device.max_threads_per_sm} threads, "
            f"{device.shared_mem_per_sm_bytes:,} bytes of shared memory)"
        )
    elem = max(a.elem_bytes for a in desc.arrays.values())
    n_check = n_blk_to_check(device.n_channels, blocks, device.channel_width_bytes, bdx, elem)
    loops = _loop_values(desc)
    n_load = sum(
        math.prod(len(loops[n]) for n in f.loops)
        for buf in desc.buffers.values()
        for f in buf.fetches
    )
    return LaunchGeometry((gx, gy), (bdx, bdy), bdx * bdy, shared, blocks, occ, n_check, n_load)


def _loop_values(desc: KernelDescription) -> dict[str, range]:
    env: dict[str, Any] = dict(desc.params)
    out = {}
    for name, loop in desc.loops.items():
        start = _scalar(loop.start, env, "loop start")
        stop = _scalar(loop.stop, env, "loop stop")
        step = _scalar(loop.step, env, "loop step")
        if step == 0:
            raise KernelDescriptionError(f"{loop.step.where}: loop step must not be zero")
        out[name] = range(start, stop, step)  # a range: its length is known without a list
    return out


def emulated_accesses(desc: KernelDescription, device: CumapzDevice,
                      geo: LaunchGeometry | None = None, *,
                      chunk_threads: int = DEFAULT_CHUNK_THREADS) -> int:
    """Element accesses an emulation of ``desc`` performs, computed without emulating.

    Every emulated thread (blocks x block size, padded to whole warps) evaluates each
    data fetch, shared access and global reference once per iteration of its loops.
    Threads are emulated in chunks of blocks; one evaluation over one chunk counts as
    at least :data:`MIN_STEP_ACCESSES` accesses, its fixed cost, so a long loop over a
    small grid is bounded too.
    """
    geo = geo or geometry(desc, device)
    loops = _loop_values(desc)

    def iterations(names: tuple[str, ...]) -> int:
        return math.prod(len(loops[n]) for n in names)

    per_thread = sum(iterations(f.loops) for b in desc.buffers.values() for f in b.fetches)
    per_thread += sum(iterations(a.loops) for b in desc.buffers.values() for a in b.accesses)
    per_thread += sum(iterations(r.loops) for r in desc.refs)
    group = int(np.lcm(device.rule.group, device.warp_size))
    padded = -(-geo.threads_per_block // group) * group
    n_blocks = geo.grid[0] * geo.grid[1]
    per_chunk = max(1, chunk_threads // padded)
    full, rest = divmod(n_blocks, per_chunk)
    per_step = full * max(per_chunk * padded, MIN_STEP_ACCESSES)
    if rest:
        per_step += max(rest * padded, MIN_STEP_ACCESSES)
    return per_step * max(1, per_thread)


def check_work(desc: KernelDescription, device: CumapzDevice, geo: LaunchGeometry,
               max_accesses: int, chunk_threads: int = DEFAULT_CHUNK_THREADS) -> int:
    """Raise :class:`~perfml.errors.WorkLimitError` if the emulation exceeds ``max_accesses``."""
    work = emulated_accesses(desc, device, geo, chunk_threads=chunk_threads)
    if work > max_accesses:
        threads = geo.grid[0] * geo.grid[1] * geo.threads_per_block
        raise WorkLimitError(
            f"{desc.name}: emulating {threads:,} threads would take {work:.3g} element accesses, "
            f"above the limit of {max_accesses:.3g} (max_accesses); use smaller [params] "
            f"(--set NAME=VALUE) or raise the limit with --max-accesses {work}"
        )
    return work


# ---------------------------------------------------------------- half-warp folding


def _coalesce(addr: np.ndarray, active: np.ndarray, elem: int, group: int, device: CumapzDevice):
    """Transactions of each half-warp (CUDA C Programming Guide 3.1, G.3.2.2, cc 1.2/1.3).

    For every group of ``group`` threads: one transaction per distinct segment
    (32 B for 1-byte words, 64 B for 2-byte, 128 B for larger) touched by an active
    thread; a 128 B transaction whose used bytes lie in one half is reduced to 64 B,
    and a 64 B one to 32 B. Returns (distinct bytes requested, bytes transferred,
    transactions, transferred bytes per group).
    """
    rule = device.rule
    seg = rule.segment_by_elem.get(elem, 128)
    a = np.where(active, addr, _SENTINEL).reshape(-1, group)
    a.sort(axis=1)
    act = a != _SENTINEL
    distinct = act.copy()
    distinct[:, 1:] &= a[:, 1:] != a[:, :-1]
    segid = np.where(act, a // seg, -1)
    start = act.copy()
    start[:, 1:] &= segid[:, 1:] != segid[:, :-1]
    end = act.copy()
    end[:, :-1] &= segid[:, :-1] != segid[:, 1:]
    lo = a[start]
    hi = a[end] + (elem - 1)
    size = np.full(lo.shape, seg, dtype=np.int64)
    s = seg // 2
    while s >= rule.min_transaction:
        fits = (lo // s) == (hi // s)
        size = np.where(fits & (size == 2 * s), s, size)
        s //= 2
    per_group = np.zeros(a.shape[0], dtype=np.int64)
    if size.size:
        rows = np.nonzero(start)[0]
        np.add.at(per_group, rows, size)
    return int(distinct.sum()) * elem, int(size.sum()), int(size.size), per_group


def _bank_degrees(word: np.ndarray, active: np.ndarray, group: int, n_banks: int):
    """Serialisation degree of each half-warp shared request (Sec. 5.5).

    K distinct words in one bank serialise K times; threads reading the same word do
    not conflict. Returns (number of requests with an active thread, sum of degrees).
    """
    w = np.where(active, word, _SENTINEL).reshape(-1, group)
    w.sort(axis=1)
    act = w != _SENTINEL
    distinct = act.copy()
    distinct[:, 1:] &= w[:, 1:] != w[:, :-1]
    rows = np.nonzero(distinct)[0]
    banks = w[distinct] % n_banks
    counts = np.bincount(rows * n_banks + banks, minlength=w.shape[0] * n_banks)
    degree = counts.reshape(w.shape[0], n_banks).max(axis=1)
    return int((degree > 0).sum()), int(degree.sum())


# ---------------------------------------------------------------- the emulator


class _Chunk:
    """Thread coordinates and name bindings for a range of blocks (launch order)."""

    def __init__(self, desc, geo: LaunchGeometry, b0: int, b1: int, pad: int) -> None:
        gx, gy = geo.grid
        bdx, bdy = geo.block
        nthr = geo.threads_per_block
        self.nblk = b1 - b0
        self.pad = pad
        bid = np.arange(b0, b1, dtype=np.int64)
        bx, by = bid % gx, bid // gx
        if desc.block_index:  # e.g. diagonal block ordering, Sec. 6.1
            raw = {**desc.params, "bx": bx, "by": by, "gx": gx, "gy": gy}
            remapped = {
                k: np.broadcast_to(e.evaluate(raw), bid.shape).astype(np.int64)
                for k, e in desc.block_index.items()
            }
            bx, by = remapped.get("bx", bx), remapped.get("by", by)
        t = np.arange(pad, dtype=np.int64)
        self.valid = np.tile(t < nthr, self.nblk)
        self.block_local = np.repeat(np.arange(self.nblk, dtype=np.int64), pad)
        self.base = {
            **desc.params,
            "gx": gx, "gy": gy, "bdx": bdx, "bdy": bdy,
            "bx": np.repeat(bx, pad), "by": np.repeat(by, pad),
            "tx": np.tile(t % bdx, self.nblk), "ty": np.tile(t // bdx, self.nblk),
        }
        self.size = self.nblk * pad
        self._desc = desc
        self._cache: dict[tuple, dict[str, Any]] = {}

    def env(self, loop_binding: tuple[tuple[str, int], ...]) -> dict[str, Any]:
        env = self._cache.get(loop_binding)
        if env is None:
            env = dict(self.base)
            env.update(loop_binding)
            for name, expr in self._desc.let.items():
                env[name] = expr.evaluate(env)
            self._cache[loop_binding] = env
        return env

    def full(self, value: Any, dtype=np.int64) -> np.ndarray:
        return np.broadcast_to(np.asarray(value), (self.size,)).astype(dtype, copy=False)


def _bindings(loops: dict[str, list[int]], names: tuple[str, ...]):
    if not names:
        yield ()
        return
    for combo in itertools.product(*(loops[n] for n in names)):
        yield tuple(zip(names, combo))


def _active(chunk: _Chunk, when, env) -> np.ndarray:
    if when is None:
        return chunk.valid
    return chunk.valid & chunk.full(when.evaluate(env), dtype=bool)


def _element_index(expr, env, chunk: _Chunk, active, where: str, what: str) -> np.ndarray:
    """An index expression's value per thread, refused unless every active thread's is a
    non-negative whole number (an array element; a negative or fractional one is no address)."""
    idx = chunk.full(expr.evaluate(env), dtype=float)  # as computed: int64 would floor 0.5 to 0
    with np.errstate(invalid="ignore"):
        bad = active & ~(np.isfinite(idx) & (idx >= 0) & (np.floor(idx) == idx))
    if bad.any():
        raise KernelDescriptionError(
            f"{where}: {what} index {expr.text!r} = {float(idx[bad][0]):g} for an active thread is not a "
            "non-negative whole number (an element of the array); fix the index or its `when` condition"
        )
    return np.where(active, idx, 0).astype(np.int64)


def _shared_flat(at, shape: list[int], env, chunk: _Chunk, active, where: str) -> np.ndarray:
    flat = np.zeros(chunk.size, dtype=np.int64)
    for e, dim in zip(at, shape):
        idx = _element_index(e, env, chunk, active, where, "shared")  # >= 0 for every active thread
        bad = active & (idx >= dim)
        if bad.any():
            first = int(idx[bad][0])
            raise KernelDescriptionError(
                f"{where}: shared index {e.text!r} = {first} is outside the buffer dimension "
                f"of size {dim}; enlarge the buffer shape or fix the index"
            )
        flat = flat * dim + idx
    return flat


class _Emulator:
    """Runs chunks of blocks of one description on one device into a trace."""

    def __init__(self, desc: KernelDescription, device: CumapzDevice, geo: LaunchGeometry) -> None:
        self.desc = desc
        self.device = device
        self.geo = geo
        self.loops = _loop_values(desc)
        env = dict(desc.params)
        self.shapes = {
            name: [_scalar(e, env, "buffer dimension") for e in buf.shape]
            for name, buf in desc.buffers.items()
        }
        self.group = device.rule.group
        self.warp = device.warp_size
        unit = int(np.lcm(self.group, self.warp))
        self.pad = -(-geo.threads_per_block // unit) * unit

    # -- one chunk of blocks ------------------------------------------------
    def run_chunk(self, trace: MemoryTrace, b0: int, b1: int, channels: bool) -> None:
        desc, dev = self.desc, self.device
        chunk = _Chunk(desc, self.geo, b0, b1, self.pad)
        bank_bytes = dev.rule.bank_bytes
        # data fetch pairs: loads from global memory, stores into the buffer, mapping
        mappings: list[tuple[str, str, np.ndarray, np.ndarray, int, int]] = []
        for bname, buf in desc.buffers.items():
            shape = self.shapes[bname]
            per_array: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
            for i, f in enumerate(buf.fetches):
                label = f"{bname} fetch #{i + 1}"
                for binding in _bindings(self.loops, f.loops):
                    env = chunk.env(binding)
                    active = _active(chunk, f.when, env)
                    g = _element_index(f.index, env, chunk, active, f"{desc.name}: {label}", "global")
                    elem = desc.arrays[f.array].elem_bytes
                    tr = self._global(trace, chunk, g * elem, active, elem, label, channels)
                    trace.bytes_buffered += tr
                    s = _shared_flat(f.at, shape, env, chunk, active, f"{desc.name}: {label}")
                    self._shared(trace, (s * buf.elem_bytes) // bank_bytes, active)
                    keep = active
                    per_array.setdefault(f.array, []).append(
                        (chunk.block_local[keep], g[keep], s[keep])
                    )
            for array, parts in per_array.items():
                blk = np.concatenate([p[0] for p in parts])
                g = np.concatenate([p[1] for p in parts])
                s = np.concatenate([p[2] for p in parts])
                if g.size == 0:
                    continue
                gmin, gmax = int(g.min()), int(g.max())
                span = gmax - gmin + 1
                if chunk.nblk * span >= _SENTINEL // 2:
                    raise KernelDescriptionError(
                        f"{desc.name}: buffer {bname!r} fetches indices spanning {span} elements "
                        "of one array, too many to map; reduce the problem size parameters"
                    )
                key = blk * span + (g - gmin)
                order = np.argsort(key, kind="stable")
                key_sorted = key[order]
                first = np.ones(key_sorted.size, dtype=bool)  # first fetch of an address wins
                first[1:] = key_sorted[1:] != key_sorted[:-1]
                mappings.append((bname, array, key_sorted[first], s[order][first], gmin, span))
            for i, acc in enumerate(buf.accesses):
                for binding in _bindings(self.loops, acc.loops):
                    env = chunk.env(binding)
                    active = _active(chunk, acc.when, env)
                    s = _shared_flat(acc.at, shape, env, chunk, active,
                                     f"{desc.name}: {bname} access #{i + 1}")
                    self._shared(trace, (s * buf.elem_bytes) // bank_bytes, active)
        # global references in program order
        n_buffers = len(desc.buffers)
        for ref in desc.refs:
            elem = desc.arrays[ref.array].elem_bytes
            for binding in _bindings(self.loops, ref.loops):
                env = chunk.env(binding)
                active = _active(chunk, ref.when, env)
                g = _element_index(ref.index, env, chunk, active, f"{desc.name}: reference to {ref.array}", "global")
                served = np.zeros(chunk.size, dtype=bool)
                hits_by_buffer = {}
                for bname, array, keys, svals, gmin, span in mappings:
                    if array != ref.array:
                        continue
                    inside = active & ~served & (g >= gmin) & (g < gmin + span)
                    k = chunk.block_local * span + (g - gmin)
                    pos = np.searchsorted(keys, k)
                    pos = np.minimum(pos, keys.size - 1)
                    hit = inside & (keys[pos] == k)
                    if not hit.any():
                        continue
                    served |= hit
                    prev = hits_by_buffer.get(bname)
                    hits_by_buffer[bname] = hit if prev is None else (prev | hit)
                    buf = desc.buffers[bname]
                    self._shared(trace, (svals[pos] * buf.elem_bytes) // bank_bytes, hit)
                    n_hit = int(hit.sum())
                    trace.n_buffered_accesses += n_hit
                    trace.bytes_shmem += n_hit * elem
                # branch divergence, eq. (7): per warp and buffer
                if n_buffers:
                    act_w = active.reshape(-1, self.warp).sum(axis=1)
                    live = act_w > 0
                    n_live = int(live.sum())
                    trace.n_branch_slots += n_live * n_buffers
                    trace.n_path += n_live * n_buffers
                    for hit in hits_by_buffer.values():
                        hit_w = hit.reshape(-1, self.warp).sum(axis=1)
                        div = int(((hit_w > 0) & (hit_w < act_w)).sum())
                        trace.n_path += div
                        trace.n_diverged += div
                miss = active & ~served
                label = ref.name + (f" {dict(binding)}" if binding else "")
                self._global(trace, chunk, g * elem, miss, elem, label, channels)

    # -- folding helpers -----------------------------------------------------
    def _shared(self, trace: MemoryTrace, word: np.ndarray, active: np.ndarray) -> None:
        n, k = _bank_degrees(word, active, self.group, self.device.n_banks)
        trace.n_shared_requests += n
        trace.n_shared_serialized += k

    def _global(self, trace, chunk, addr, active, elem, label, channels) -> int:
        req, tr, ntr, per_group = _coalesce(addr, active, elem, self.group, self.device)
        if channels:
            if tr:
                self._channel(trace, chunk, addr, active, per_group, label)
            return tr
        trace.bytes_access += req
        trace.bytes_tr += tr
        trace.n_transactions += ntr
        trace.n_global_accesses += int(active.sum())
        return tr

    def _channel(self, trace, chunk, addr, active, per_group, label) -> None:
        dev = self.device
        ch = (addr[active] // dev.channel_width_bytes) % dev.n_channels
        blk = chunk.block_local[active]
        pairs = np.unique(blk * dev.n_channels + ch)
        counts = np.bincount(pairs % dev.n_channels, minlength=dev.n_channels)
        trace.channel_skews.append(channel_skew_of_counts(counts, dev.n_channels))
        trace.channel_weights.append(float(per_group.sum()))
        trace.channel_labels.append(label)


def _check_something_executes(desc: KernelDescription) -> None:
    """Refuse a description none of whose memory references executes: every one sits in a
    loop that runs no iteration (a step of the wrong sign, or stop before start). Its
    emulation counted nothing and reported an MPE of 0, the best possible, silently."""
    loops = _loop_values(desc)
    placed = [item.loops for b in desc.buffers.values() for item in (*b.fetches, *b.accesses)]
    placed += [r.loops for r in desc.refs]
    if placed and all(math.prod(len(loops[n]) for n in names) == 0 for names in placed):
        empty = [f"{n} (start {r.start}, stop {r.stop}, step {r.step})" for n, r in loops.items() if len(r) == 0]
        raise KernelDescriptionError(
            f"no memory reference of {desc.name!r} executes: loop {', '.join(empty)} runs no iteration; "
            "fix the loop's start, stop or step")


def emulate(
    desc: KernelDescription,
    device: CumapzDevice,
    *,
    chunk_threads: int = DEFAULT_CHUNK_THREADS,
    max_accesses: int = DEFAULT_MAX_ACCESSES,
) -> MemoryTrace:
    """Emulate every warp of ``desc`` on ``device`` and return the accumulated counts.

    Channel skew (eq. 4-5) is measured in a second pass over the first
    ``n_blk_to_check`` blocks in launch order; when the grid has fewer blocks the
    analysis is skipped, as in the paper, and ``channel_skipped`` is set.

    Raises
    ------
    WorkLimitError
        If the emulation would perform more than ``max_accesses`` element accesses
        (checked before anything is allocated; see :func:`emulated_accesses`).
    """
    geo = geometry(desc, device)
    check_work(desc, device, geo, max_accesses, chunk_threads)
    _check_something_executes(desc)
    em = _Emulator(desc, device, geo)
    trace = MemoryTrace(geometry=geo)
    n_blocks = geo.grid[0] * geo.grid[1]
    per_chunk = max(1, chunk_threads // em.pad)
    for b0 in range(0, n_blocks, per_chunk):
        em.run_chunk(trace, b0, min(n_blocks, b0 + per_chunk), channels=False)
    if n_blocks < geo.n_blk_to_check:
        trace.channel_skipped = True
    else:
        scratch = MemoryTrace(geometry=geo)  # keeps the counts of the first pass clean
        em.run_chunk(scratch, 0, geo.n_blk_to_check, channels=True)
        trace.channel_skews = scratch.channel_skews
        trace.channel_weights = scratch.channel_weights
        trace.channel_labels = scratch.channel_labels
    return trace
