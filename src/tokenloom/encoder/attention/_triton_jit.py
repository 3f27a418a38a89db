"""The Triton forward kernel of the FlashAttention-2 path and the helpers it shares with the backward
kernels (``_triton_bwd``): score masking, key-tile bounds, varlen row bounds; imports ``triton``.

Imported only by ``triton_kernel`` (on first use, or by its ``kernel`` for ahead-of-time compiling) and ``_triton_bwd``.
Triton decides interpret-or-compile when a kernel is defined, i.e. when this module is imported, from
``TRITON_INTERPRET``.

Naming follows FlashAttention / Triton's fused-attention tutorial: ``BLOCK_M`` query rows per
program, ``BLOCK_N`` keys per inner step. Scores are kept in log2 units (``qk_scale = scale·log2 e``,
``exp2``), except under an additive mask (``BIAS``): there they are natural, ``s = (q·k)·scale + bias``
as ``reference`` forms them, and only the difference to the row max is scaled (``exp2((s − m)·log2 e)``),
so a bias of ``finfo(float32).min`` never overflows to −inf and rounds as in the reference. The saved
row statistics are natural (``_row_stats``: ``max``, +inf on rows that see no key, and ``log_sum``).

Which key tiles a query tile visits (``key_bounds``, the mirror of ``_common.key_range``): keys
``[lo, hi)`` that any of its rows may see under causal / window / key_lengths; inside, the tiles every
row sees wholly (``[mid_lo, mid_hi)``) run without per-element masks, only the edge tiles are masked.
With segment ids or a dense mask every visited tile is masked. A sparse pattern that lists key tiles
per query tile would replace these bounds.

Shapes: ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``G = H // Hkv``, ``N`` queries,
``M`` keys, ``D`` head width of q/k, ``DV`` head width of v.
"""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["attn_fwd", "key_bounds", "mask_scores", "seq_bounds", "tile_scores", "tile_weights"]

LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)


@triton.jit
def mask_scores(
    s, qi, kj, b, h, n_b, klen, offset, left, right,
    QSeg, KSeg, s_qsb, s_qsn, s_ksb, s_ksm, Mask, s_mb, s_mh, s_mn, s_mm,
    CAUSAL: tl.constexpr, WINDOW: tl.constexpr, SEGMENTS: tl.constexpr,
    HAS_MASK: tl.constexpr, MASK_IS_BOOL: tl.constexpr,
):  # fmt: skip
    """Scores with −inf where query ``qi`` may not see key ``kj`` (any broadcast layout); an additive
    mask is added as it is (the caller's scores are natural then: ``BIAS``)."""
    valid = (qi < n_b) & (kj < klen)
    if CAUSAL:
        valid = valid & (kj <= qi + offset)
    if WINDOW:
        valid = valid & (kj >= qi + offset - left) & (kj <= qi + offset + right)
    if SEGMENTS:
        qs = tl.load(QSeg + b * s_qsb + qi * s_qsn, mask=qi < n_b, other=-1)
        ks = tl.load(KSeg + b * s_ksb + kj * s_ksm, mask=kj < klen, other=-1)
        valid = valid & (qs == ks) & (qs >= 0)
    if HAS_MASK:
        mp = Mask + b * s_mb + h * s_mh + qi * s_mn + kj * s_mm
        if MASK_IS_BOOL:
            valid = valid & (tl.load(mp, mask=valid, other=0) != 0)
        else:
            s = s + tl.load(mp, mask=valid, other=0.0).to(tl.float32)
    return tl.where(valid, s, float("-inf"))


@triton.jit
def tile_scores(q, kt, qk_scale, scale, PRECISION: tl.constexpr, BIAS: tl.constexpr):
    """``q kᵀ`` scaled: natural units under an additive mask (``BIAS``), log2 units otherwise."""
    s = tl.dot(q, kt, input_precision=PRECISION)
    return s * scale if BIAS else s * qk_scale


@triton.jit
def tile_weights(s, row_max, log_sum, BIAS: tl.constexpr):
    """``p = exp(s − max − log_sum)`` for scores in the kernel's units (``max``, ``log_sum`` natural,
    broadcast to ``s``); ``max = +inf`` (a row that sees no key) gives 0."""
    if BIAS:
        p = tl.math.exp2((s - row_max) * LOG2E - log_sum * LOG2E)
    else:
        p = tl.math.exp2(s - (row_max + log_sum) * LOG2E)
    return p


@triton.jit
def key_bounds(
    i0, i_last, offset, klen, left, right,
    CAUSAL: tl.constexpr, WINDOW: tl.constexpr, ALL_MASKED: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """Key tiles of the query rows ``i0 .. i_last``: masked ``[lo, mid_lo)``, plain ``[mid_lo, mid_hi)``,
    masked ``[mid_hi, hi)``; ``lo`` and the plain range are tile-aligned."""
    lo = 0
    hi = klen
    full_lo = 0
    full_hi = klen
    if CAUSAL:
        hi = tl.minimum(hi, i_last + offset + 1)
        full_hi = tl.minimum(full_hi, i0 + offset + 1)
    if WINDOW:
        lo = tl.maximum(lo, i0 + offset - left)
        full_lo = tl.maximum(full_lo, i_last + offset - left)
        hi = tl.minimum(hi, i_last + offset + right + 1)
        full_hi = tl.minimum(full_hi, i0 + offset + right + 1)
    hi = tl.maximum(hi, 0)
    lo = (tl.maximum(lo, 0) // BLOCK_N) * BLOCK_N
    if ALL_MASKED:
        mid_lo = hi
        mid_hi = hi
    else:
        mid_lo = tl.minimum(tl.cdiv(tl.maximum(full_lo, 0), BLOCK_N) * BLOCK_N, hi)
        mid_hi = tl.maximum((tl.maximum(full_hi, 0) // BLOCK_N) * BLOCK_N, mid_lo)
    return lo, mid_lo, mid_hi, hi


@triton.jit
def _fwd_tiles(
    acc, l_i, m_i, q, K, V, skm, svm, lo, hi, offs_m, qk_scale, scale,
    b, h, n_b, klen, offset, left, right,
    QSeg, KSeg, s_qsb, s_qsn, s_ksb, s_ksm, Mask, s_mb, s_mh, s_mn, s_mm,
    CAUSAL: tl.constexpr, WINDOW: tl.constexpr, SEGMENTS: tl.constexpr,
    HAS_MASK: tl.constexpr, MASK_IS_BOOL: tl.constexpr, BIAS: tl.constexpr, MASKED: tl.constexpr,
    PRECISION: tl.constexpr,
    D: tl.constexpr, DV: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):  # fmt: skip
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    for start in range(lo, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        col_ok = offs_n < klen
        if not MASKED:
            col_ok = offs_n >= 0  # plain tiles lie wholly inside [0, klen)
        kt = tl.load(
            K + offs_n[None, :] * skm + offs_d[:, None],
            mask=col_ok[None, :] & (offs_d[:, None] < D),
            other=0.0,
        )  # [BLOCK_D, BLOCK_N] (k transposed)
        s = tile_scores(q, kt, qk_scale, scale, PRECISION, BIAS)  # [BLOCK_M, BLOCK_N] fp32
        if MASKED:
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
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # no visible key yet: shift by 0
        else:
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_safe = m_new
        if BIAS:  # natural units: scale only the differences to the max (never overflows)
            alpha = tl.math.exp2((m_i - m_safe) * LOG2E)
            p = tl.math.exp2((s - m_safe[:, None]) * LOG2E)  # [BLOCK_M, BLOCK_N]
        else:
            alpha = tl.math.exp2(m_i - m_safe)
            p = tl.math.exp2(s - m_safe[:, None])  # [BLOCK_M, BLOCK_N]
        l_i = l_i * alpha + tl.sum(p, 1)
        vt = tl.load(
            V + offs_n[:, None] * svm + offs_dv[None, :],
            mask=col_ok[:, None] & (offs_dv[None, :] < DV),
            other=0.0,
        )  # [BLOCK_N, BLOCK_DV]
        acc = acc * alpha[:, None] + tl.dot(p.to(vt.dtype), vt, input_precision=PRECISION)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def seq_bounds(b, CuQ, CuK, N, M, VARLEN: tl.constexpr):
    """First row and length of this batch row's queries and keys (packed varlen or padded layout)."""
    if VARLEN:
        q0 = tl.load(CuQ + b)
        n_b = tl.load(CuQ + b + 1) - q0
        k0 = tl.load(CuK + b)
        m_b = tl.load(CuK + b + 1) - k0
    else:
        q0 = 0
        n_b = N
        k0 = 0
        m_b = M
    return q0, n_b, k0, m_b


@triton.jit
def attn_fwd(
    Q, K, V, Out, RowMax, LogSum, KeyLen, CuQ, CuK, QSeg, KSeg, Mask,
    sqb, sqh, sqn, skb, skh, skm, svb, svh, svm, sob, soh, son, slb, slh, sln,
    s_qsb, s_qsn, s_ksb, s_ksm, s_mb, s_mh, s_mn, s_mm,
    H, G, N, M, left, right, qk_scale, scale,
    VARLEN: tl.constexpr, HAS_KLEN: tl.constexpr, CAUSAL: tl.constexpr, WINDOW: tl.constexpr,
    SEGMENTS: tl.constexpr, HAS_MASK: tl.constexpr, MASK_IS_BOOL: tl.constexpr, BIAS: tl.constexpr,
    PRECISION: tl.constexpr,
    D: tl.constexpr, DV: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):  # fmt: skip
    """One program: ``BLOCK_M`` query rows of one (batch row, head); writes their output and row stats."""
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    hk = h // G  # the key/value head this query head shares (never a copy)
    q0, n_b, k0, m_b = seq_bounds(b, CuQ, CuK, N, M, VARLEN)
    i0 = pid_m * BLOCK_M
    if i0 >= n_b:
        return
    offset = m_b - n_b  # bottom-right alignment: query i sits at key position i + offset
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
    Kb = K + b * skb + hk * skh + k0 * skm
    Vb = V + b * svb + hk * svh + k0 * svm
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], dtype=tl.float32)
    i_last = tl.minimum(i0 + BLOCK_M, n_b) - 1
    lo, mid_lo, mid_hi, hi = key_bounds(
        i0, i_last, offset, klen, left, right, CAUSAL, WINDOW, SEGMENTS or HAS_MASK, BLOCK_N
    )
    acc, l_i, m_i = _fwd_tiles(  # masked lower edge (window start)
        acc, l_i, m_i, q, Kb, Vb, skm, svm, lo, mid_lo, offs_m, qk_scale, scale, b, h, n_b, klen, offset, left, right,
        QSeg, KSeg, s_qsb, s_qsn, s_ksb, s_ksm, Mask, s_mb, s_mh, s_mn, s_mm,
        CAUSAL, WINDOW, SEGMENTS, HAS_MASK, MASK_IS_BOOL, BIAS, True, PRECISION, D, DV, BLOCK_N, BLOCK_D,
        BLOCK_DV,
    )  # fmt: skip
    acc, l_i, m_i = _fwd_tiles(  # tiles every row sees wholly: no per-element mask
        acc, l_i, m_i, q, Kb, Vb, skm, svm, mid_lo, mid_hi, offs_m, qk_scale, scale, b, h, n_b, klen, offset, left, right,
        QSeg, KSeg, s_qsb, s_qsn, s_ksb, s_ksm, Mask, s_mb, s_mh, s_mn, s_mm,
        CAUSAL, WINDOW, SEGMENTS, HAS_MASK, MASK_IS_BOOL, BIAS, False, PRECISION, D, DV, BLOCK_N, BLOCK_D,
        BLOCK_DV,
    )  # fmt: skip
    acc, l_i, m_i = _fwd_tiles(  # masked upper edge (diagonal, window end, key_lengths, M)
        acc, l_i, m_i, q, Kb, Vb, skm, svm, mid_hi, hi, offs_m, qk_scale, scale, b, h, n_b, klen, offset, left, right,
        QSeg, KSeg, s_qsb, s_qsn, s_ksb, s_ksm, Mask, s_mb, s_mh, s_mn, s_mm,
        CAUSAL, WINDOW, SEGMENTS, HAS_MASK, MASK_IS_BOOL, BIAS, True, PRECISION, D, DV, BLOCK_N, BLOCK_D,
        BLOCK_DV,
    )  # fmt: skip
    alive = l_i > 0
    out = acc / tl.where(alive, l_i, 1.0)[:, None]  # rows that saw no key: 0
    tl.store(
        Out + b * sob + h * soh + (q0 + offs_m[:, None]) * son + offs_dv[None, :],
        out.to(Out.dtype.element_ty),
        mask=row_ok[:, None] & (offs_dv[None, :] < DV),
    )
    row_max = m_i if BIAS else m_i / LOG2E  # natural units
    log_sum = tl.math.log2(tl.where(alive, l_i, 1.0)) / LOG2E  # natural log of the row sum
    stat = b * slb + h * slh + (q0 + offs_m) * sln
    tl.store(RowMax + stat, tl.where(alive, row_max, float("inf")), mask=row_ok)  # +inf: saw no key
    tl.store(LogSum + stat, tl.where(alive, log_sum, 0.0), mask=row_ok)
