"""The Triton backward kernels (dQ, and dK/dV) of the FlashAttention-2 path; imports ``triton``.

Imported only by ``triton_kernel`` (on first backward, and by ``kernel`` for ahead-of-time compiling). They
share the masking and tile-bound helpers of the forward kernel (``_triton_jit``): the same key tiles are
visited and the same scores masked, so gradients match the forward. Both recompute the probabilities
from the saved row statistics (``RowMax``, ``LogSum``: ``_row_stats``) and ``Delta = rowsum(dO · O)``;
scores are in the forward's units (log2, or natural under an additive mask: ``BIAS``). ``attn_bwd_dq`` runs one program per (``BLOCK_M`` query rows, batch row, head) and
walks key tiles; ``attn_bwd_dkdv`` one per (``BLOCK_N`` keys, batch row, key/value head) and walks the
query tiles of all ``G`` query heads that share it.

Shapes: ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``G = H // Hkv``, ``N`` queries,
``M`` keys, ``D`` head width of q/k, ``DV`` head width of v.
"""

from __future__ import annotations

import triton
import triton.language as tl

from tokenloom.encoder.attention._triton_jit import (
    key_bounds,
    mask_scores,
    seq_bounds,
    tile_scores,
    tile_weights,
)

__all__ = ["attn_bwd_dkdv", "attn_bwd_dq"]


@triton.jit
def attn_bwd_dq(
    Q, K, V, DO, DQ, RowMax, LogSum, Delta, KeyLen, CuQ, CuK, QSeg, KSeg, Mask,
    sqb, sqh, sqn, skb, skh, skm, svb, svh, svm, sob, soh, son, slb, slh, sln,
    s_qsb, s_qsn, s_ksb, s_ksm, s_mb, s_mh, s_mn, s_mm,
    H, G, N, M, left, right, qk_scale, scale,
    VARLEN: tl.constexpr, HAS_KLEN: tl.constexpr, CAUSAL: tl.constexpr, WINDOW: tl.constexpr,
    SEGMENTS: tl.constexpr, HAS_MASK: tl.constexpr, MASK_IS_BOOL: tl.constexpr, BIAS: tl.constexpr,
    PRECISION: tl.constexpr,
    D: tl.constexpr, DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):  # fmt: skip
    """dQ of ``BLOCK_M`` query rows: ``p = exp(s − max − log_sum)``, ``ds = p ∘ (dO vᵀ − delta)``,
    ``dq = ds k · scale``.

    ``DQ`` and ``DO`` share q's and the output's strides (``sq*``, ``so*``); ``Delta`` shares the row
    stats' strides (``sl*``).
    """
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    hk = h // G
    q0, n_b, k0, m_b = seq_bounds(b, CuQ, CuK, N, M, VARLEN)
    i0 = pid_m * BLOCK_M
    if i0 >= n_b:
        return
    offset = m_b - n_b
    klen = m_b
    if HAS_KLEN:
        klen = tl.minimum(klen, tl.load(KeyLen + b))
    offs_m = i0 + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    row_ok = offs_m < n_b
    q = tl.load(
        Q + b * sqb + h * sqh + (q0 + offs_m[:, None]) * sqn + offs_d[None, :],
        mask=row_ok[:, None] & (offs_d[None, :] < D),
        other=0.0,
    )  # [BLOCK_M, BLOCK_D]
    do = tl.load(
        DO + b * sob + h * soh + (q0 + offs_m[:, None]) * son + offs_dv[None, :],
        mask=row_ok[:, None] & (offs_dv[None, :] < DV),
        other=0.0,
    )  # [BLOCK_M, BLOCK_DV]
    lrow = b * slb + h * slh + (q0 + offs_m) * sln
    row_max = tl.load(RowMax + lrow, mask=row_ok, other=float("inf"))  # [BLOCK_M]
    log_sum = tl.load(LogSum + lrow, mask=row_ok, other=0.0)  # [BLOCK_M]
    delta = tl.load(Delta + lrow, mask=row_ok, other=0.0)  # [BLOCK_M]
    Kb = K + b * skb + hk * skh + k0 * skm
    Vb = V + b * svb + hk * svh + k0 * svm
    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    i_last = tl.minimum(i0 + BLOCK_M, n_b) - 1
    lo, _, _, hi = key_bounds(i0, i_last, offset, klen, left, right, CAUSAL, WINDOW, True, BLOCK_N)
    for start in range(lo, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        col_ok = offs_n < klen
        kt = tl.load(
            Kb + offs_n[None, :] * skm + offs_d[:, None],
            mask=col_ok[None, :] & (offs_d[:, None] < D),
            other=0.0,
        )  # [BLOCK_D, BLOCK_N]
        vt = tl.load(
            Vb + offs_n[None, :] * svm + offs_dv[:, None],
            mask=col_ok[None, :] & (offs_dv[:, None] < DV),
            other=0.0,
        )  # [BLOCK_DV, BLOCK_N]
        s = tile_scores(q, kt, qk_scale, scale, PRECISION, BIAS)  # [BLOCK_M, BLOCK_N]
        s = mask_scores(
            s,
            offs_m[:, None],
            offs_n[None, :],
            b,
            h,
            n_b,
            klen,
            offset,
            left,
            right,
            QSeg,
            KSeg,
            s_qsb,
            s_qsn,
            s_ksb,
            s_ksm,
            Mask,
            s_mb,
            s_mh,
            s_mn,
            s_mm,
            CAUSAL,
            WINDOW,
            SEGMENTS,
            HAS_MASK,
            MASK_IS_BOOL,
        )
        p = tile_weights(s, row_max[:, None], log_sum[:, None], BIAS)  # 0 where masked or the row is dead
        dp = tl.dot(do, vt, input_precision=PRECISION)  # [BLOCK_M, BLOCK_N]
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(kt.dtype), tl.trans(kt), input_precision=PRECISION)  # [BLOCK_M, BLOCK_D]
    tl.store(
        DQ + b * sqb + h * sqh + (q0 + offs_m[:, None]) * sqn + offs_d[None, :],
        (dq * scale).to(DQ.dtype.element_ty),
        mask=row_ok[:, None] & (offs_d[None, :] < D),
    )


@triton.jit
def attn_bwd_dkdv(
    Q, K, V, DO, DK, DV_, RowMax, LogSum, Delta, KeyLen, CuQ, CuK, QSeg, KSeg, Mask,
    sqb, sqh, sqn, skb, skh, skm, svb, svh, svm, sob, soh, son, slb, slh, sln,
    s_qsb, s_qsn, s_ksb, s_ksm, s_mb, s_mh, s_mn, s_mm,
    Hkv, G, N, M, left, right, qk_scale, scale,
    VARLEN: tl.constexpr, HAS_KLEN: tl.constexpr, CAUSAL: tl.constexpr, WINDOW: tl.constexpr,
    SEGMENTS: tl.constexpr, HAS_MASK: tl.constexpr, MASK_IS_BOOL: tl.constexpr, BIAS: tl.constexpr,
    PRECISION: tl.constexpr,
    D: tl.constexpr, DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):  # fmt: skip
    """dK, dV of ``BLOCK_N`` keys of one key/value head, summed over its G query heads (no atomics).

    ``DK`` / ``DV_`` share k's / v's strides. Visits only the query tiles that can see these keys.
    """
    pid_n = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // Hkv
    hk = pid_bh % Hkv
    q0, n_b, k0, m_b = seq_bounds(b, CuQ, CuK, N, M, VARLEN)
    j0 = pid_n * BLOCK_N
    if j0 >= m_b:
        return
    offset = m_b - n_b
    klen = m_b
    if HAS_KLEN:
        klen = tl.minimum(klen, tl.load(KeyLen + b))
    offs_n = j0 + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    col_ok = offs_n < klen
    k = tl.load(
        K + b * skb + hk * skh + (k0 + offs_n[:, None]) * skm + offs_d[None, :],
        mask=col_ok[:, None] & (offs_d[None, :] < D),
        other=0.0,
    )  # [BLOCK_N, BLOCK_D]
    v = tl.load(
        V + b * svb + hk * svh + (k0 + offs_n[:, None]) * svm + offs_dv[None, :],
        mask=col_ok[:, None] & (offs_dv[None, :] < DV),
        other=0.0,
    )  # [BLOCK_N, BLOCK_DV]
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_DV], dtype=tl.float32)
    # query rows that may see a key of this tile (the inverse of key_bounds)
    j_last = tl.minimum(j0 + BLOCK_N, klen) - 1
    q_lo = 0
    q_hi = n_b
    if CAUSAL:
        q_lo = tl.maximum(q_lo, j0 - offset)
    if WINDOW:
        q_lo = tl.maximum(q_lo, j0 - offset - right)
        q_hi = tl.minimum(q_hi, j_last - offset + left + 1)
    if j0 >= klen:
        q_hi = 0
    q_lo = (tl.maximum(q_lo, 0) // BLOCK_M) * BLOCK_M
    for g in range(0, G):
        h = hk * G + g
        Qh = Q + b * sqb + h * sqh + q0 * sqn
        DOh = DO + b * sob + h * soh + q0 * son
        Lh = b * slb + h * slh + q0 * sln
        for start in range(q_lo, q_hi, BLOCK_M):
            offs_m = start + tl.arange(0, BLOCK_M)
            row_ok = offs_m < n_b
            qt = tl.load(
                Qh + offs_m[None, :] * sqn + offs_d[:, None],
                mask=row_ok[None, :] & (offs_d[:, None] < D),
                other=0.0,
            )  # [BLOCK_D, BLOCK_M] (q transposed)
            do = tl.load(
                DOh + offs_m[:, None] * son + offs_dv[None, :],
                mask=row_ok[:, None] & (offs_dv[None, :] < DV),
                other=0.0,
            )  # [BLOCK_M, BLOCK_DV]
            row_max = tl.load(RowMax + Lh + offs_m * sln, mask=row_ok, other=float("inf"))  # [BLOCK_M]
            log_sum = tl.load(LogSum + Lh + offs_m * sln, mask=row_ok, other=0.0)  # [BLOCK_M]
            delta = tl.load(Delta + Lh + offs_m * sln, mask=row_ok, other=0.0)
            st = tile_scores(
                k, qt, qk_scale, scale, PRECISION, BIAS
            )  # [BLOCK_N, BLOCK_M] (scores transposed)
            st = mask_scores(
                st,
                offs_m[None, :],
                offs_n[:, None],
                b,
                h,
                n_b,
                klen,
                offset,
                left,
                right,
                QSeg,
                KSeg,
                s_qsb,
                s_qsn,
                s_ksb,
                s_ksm,
                Mask,
                s_mb,
                s_mh,
                s_mn,
                s_mm,
                CAUSAL,
                WINDOW,
                SEGMENTS,
                HAS_MASK,
                MASK_IS_BOOL,
            )
            pt = tile_weights(st, row_max[None, :], log_sum[None, :], BIAS)  # [BLOCK_N, BLOCK_M]
            dv += tl.dot(pt.to(do.dtype), do, input_precision=PRECISION)  # [BLOCK_N, BLOCK_DV]
            dpt = tl.dot(v, tl.trans(do), input_precision=PRECISION)  # [BLOCK_N, BLOCK_M]
            dst = pt * (dpt - delta[None, :])
            dk += tl.dot(dst.to(qt.dtype), tl.trans(qt), input_precision=PRECISION)  # [BLOCK_N, BLOCK_D]
    tl.store(
        DK + b * skb + hk * skh + (k0 + offs_n[:, None]) * skm + offs_d[None, :],
        (dk * scale).to(DK.dtype.element_ty),
        mask=(offs_n[:, None] < m_b) & (offs_d[None, :] < D),
    )
    tl.store(
        DV_ + b * svb + hk * svh + (k0 + offs_n[:, None]) * svm + offs_dv[None, :],
        dv.to(DV_.dtype.element_ty),
        mask=(offs_n[:, None] < m_b) & (offs_dv[None, :] < DV),
    )
