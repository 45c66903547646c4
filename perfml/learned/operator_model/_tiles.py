"""The tile / wave group: how a call's output splits into thread-block tiles and waves on a board.

NeuSight [1]_ (Section 4) models a GPU kernel as tiles of the output run in waves: the
kernel launches ``n_tiles`` thread blocks, each SM holds a fixed number of them at once,
so the call runs ``waves = ceil(n_tiles / (SMs x tiles per SM))`` waves, the last one
possibly partial (wave quantization), and what carries across GPUs is the utilization of
one tile, not the time. The tile size is chosen by the library (cuBLAS heuristics) and is
not known for a query on a board never measured, so this group uses *nominal* tiles, the
same for every board, computed from the call's dimensions and the board's SM count only
(registry): no launch-configuration column is read, so every feature exists for a query
with only ``board``, ``op`` and the dims (issue 10 §2).

GEMM rows (BMM: B batches of an (M x K) output with reduction depth N; FC = linear: one
(B*M x K) output, depth N; :mod:`perfml.operators` for the semantics), for each nominal
tile ``t x u`` in :data:`GEMM_TILES` (the cuBLAS SGEMM tile shapes the corpus' kernel
names show: ``*_sgemm_128x128_*``, ``*_sgemm_128x64_*``, ``*_sgemm_64x64_*``,
``*_sgemm_32x32_*``):

``tile<t>x<u>_log_tiles``
    log n_tiles, ``n_tiles = B ceil(M/t) ceil(K/u)`` (BMM) or ``ceil(BM/t) ceil(K/u)`` (FC).
``tile<t>x<u>_log_waves``
    log waves, ``waves = ceil(n_tiles / SMs)`` (one tile resident per SM, nominal).
``tile<t>x<u>_last_wave_fill``
    share of the SMs busy in the last wave, ``(n_tiles - (waves - 1) SMs) / SMs`` in (0, 1].
``tile<t>x<u>_log_quantization``
    log of the work the waves pay for over the useful work,
    ``waves SMs t u / (outputs)``: >= 1, the padding of edge tiles times the idle SMs of
    the last wave. The wave-quantized compute time is the FP32 roofline time times it.

and ``gemm_log_tile_depth`` (log N, the K-loop length of every tile),
``gemm_log_flops_per_sm`` (per-SM work), ``gemm_log_operands_over_l2`` (do A and B fit in
L2 together).

Row-reduction rows (softmax, ln) and element-wise rows:

``vec_log_rows_per_sm``
    log(B / SMs): rows each SM reduces (softmax / ln run one row per warp or block).
``vec_row_wave_fill``
    ``(B - (ceil(B/SMs) - 1) SMs) / SMs``: the last wave of rows.
``vec_log_h_over_warp``
    log(H / 32): elements per lane of a warp-per-row kernel.
``vec_h_pow2_fill``
    H / 2^ceil(log2 H): PyTorch's warp softmax is instantiated for the next power of two
    of H, so the share of lanes doing useful work.
``vec_block_kernel``
    1 where H > 1024: PyTorch's softmax switches from the warp-per-row kernel
    (``softmax_warp_forward``) to the block-per-row one (``cunn_SoftMaxForward``) above
    1024 elements (ATen ``SoftMax.cu``, ``dispatch_softmax_forward``).
``vec_log_bytes_per_sm``
    log(bytes / SMs).

References
----------
.. [1] S. Lee, A. Phanishayee, D. Mahajan, "Forecasting GPU Performance for Deep Learning
   Training and Inference" (NeuSight), ASPLOS 2025, doi:10.1145/3669940.3707265, Section 4
   (tiles, waves and per-tile utilization).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["GEMM_TILES", "WAVE_TILE", "tile_block", "tile_feature_frame", "wave_quantized_base"]

#: nominal output tiles (rows x columns) of cuBLAS SGEMM kernels named in the corpus
GEMM_TILES = ((128, 128), (128, 64), (64, 64), (32, 32))
#: PyTorch 2.1 softmax: warp-per-row kernel up to this many elements per row (ATen SoftMax.cu)
SOFTMAX_WARP_MAX = 1024
WARP = 32
#: the nominal tile of the wave-quantized base time (the most frequent SGEMM tile of the corpus' P4 / P100 bmm rows)
WAVE_TILE = (128, 64)
_FLOAT_BYTES = 4.0


def _log(values) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v > 0, np.log(np.where(v > 0, v, 1.0)), np.nan)


def _column(X: pd.DataFrame, name: str) -> np.ndarray:
    if name not in X.columns:
        return np.full(len(X), np.nan)
    return pd.to_numeric(X[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def tile_feature_frame(X: pd.DataFrame, op_class: np.ndarray, nbytes: np.ndarray, flops: np.ndarray,
                       sms: np.ndarray, l2_bytes: np.ndarray) -> pd.DataFrame:
    """The tile / wave columns (module docstring) of every row; NaN where a column does not apply.

    Parameters
    ----------
    X : DataFrame
        Operator rows (dims ``B, M, N, K, H``).
    op_class : array of str
        NeuSight op class of every row (BMM, FC, EW, Softmax, LN, Conv).
    nbytes, flops : arrays
        Work of every row (:func:`perfml.operators.operator_work`).
    sms, l2_bytes : arrays
        The row's board: SM count and L2 bytes (registry).
    """
    B, M, N, K, H = (_column(X, c) for c in ("B", "M", "N", "K", "H"))
    is_bmm = op_class == "BMM"
    is_gemm = is_bmm | (op_class == "FC")
    is_vec = np.isin(op_class, ["EW", "Softmax", "LN"])
    cols: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        rows = np.where(is_bmm, M, B * M)
        batch = np.where(is_bmm, B, 1.0)
        outputs = batch * rows * K
        for t, u in GEMM_TILES:
            tiles = batch * np.ceil(rows / t) * np.ceil(K / u)
            waves = np.ceil(tiles / sms)
            name = f"tile{t}x{u}"
            cols[f"{name}_log_tiles"] = np.where(is_gemm, _log(tiles), np.nan)
            cols[f"{name}_log_waves"] = np.where(is_gemm, _log(waves), np.nan)
            cols[f"{name}_last_wave_fill"] = np.where(is_gemm, (tiles - (waves - 1) * sms) / sms, np.nan)
            cols[f"{name}_log_quantization"] = np.where(is_gemm, _log(waves * sms * t * u / outputs), np.nan)
        cols["gemm_log_tile_depth"] = np.where(is_gemm, _log(N), np.nan)
        cols["gemm_log_flops_per_sm"] = np.where(is_gemm, _log(flops / sms), np.nan)
        operands = _FLOAT_BYTES * (batch * rows * N + np.where(is_bmm, B, 1.0) * N * K)
        cols["gemm_log_operands_over_l2"] = np.where(is_gemm, _log(operands / l2_bytes), np.nan)
        row_waves = np.ceil(B / sms)
        cols["vec_log_rows_per_sm"] = np.where(is_vec, _log(B / sms), np.nan)
        cols["vec_row_wave_fill"] = np.where(is_vec, (B - (row_waves - 1) * sms) / sms, np.nan)
        cols["vec_log_h_over_warp"] = np.where(is_vec, _log(H / WARP), np.nan)
        cols["vec_h_pow2_fill"] = np.where(is_vec, H / 2.0 ** np.ceil(np.log2(np.where(H > 0, H, 1.0))), np.nan)
        cols["vec_block_kernel"] = np.where(is_vec, (H > SOFTMAX_WARP_MAX).astype(float), np.nan)
        cols["vec_log_bytes_per_sm"] = np.where(is_vec, _log(nbytes / sms), np.nan)
    return pd.DataFrame(cols, index=X.index)


def tile_block(X: pd.DataFrame, work_frame: pd.DataFrame) -> pd.DataFrame:
    """The tile / wave group of rows X from their work / board feature frame (:func:`operator_feature_frame`)."""
    op_class = np.full(len(X), "", dtype=object)
    for cls in ("BMM", "FC", "EW", "Softmax", "LN", "Conv"):
        column = f"class={cls}"
        if column in work_frame.columns:
            op_class[work_frame[column].to_numpy() > 0] = cls
    return tile_feature_frame(
        X, op_class.astype(str),
        nbytes=np.exp(work_frame["work_log_bytes"].to_numpy()),
        flops=np.exp(work_frame["work_log_flops"].to_numpy()),
        sms=np.exp(work_frame["board_log_sms"].to_numpy()),
        l2_bytes=np.exp(work_frame["board_log_l2"].to_numpy()),
    )


def wave_quantized_base(work_frame: pd.DataFrame, tiles: pd.DataFrame, bound: np.ndarray) -> np.ndarray:
    """Base time (ms) with wave quantization for GEMM rows: ``max(T_bound, T_compute x Q)``.

    ``T_compute = FLOPs / peak FP32`` and ``Q = waves SMs t u / outputs`` for the nominal
    tile :data:`WAVE_TILE` (NeuSight [1]_ Section 4: a GEMM runs whole waves of whole
    tiles, so its compute time is that of the padded, wave-rounded work). Other rows keep
    the roofline bound.
    """
    t, u = WAVE_TILE
    quant = np.exp(tiles[f"tile{t}x{u}_log_quantization"].to_numpy())
    compute = np.exp(work_frame["fit_log_compute_ms"].to_numpy())
    wave = compute * quant
    return np.where(np.isfinite(wave), np.fmax(wave, bound), bound)
