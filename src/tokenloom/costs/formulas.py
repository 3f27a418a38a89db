"""Cost formulas of a transformer encoder: FLOPs, attention-score memory, KV-cache bytes, units.

Pure functions over integers (and an :class:`~tokenloom.encoder.config.EncoderConfig`, or a sparse
:class:`~tokenloom.encoder.patterns.Pattern` for edge counts); nothing here imports torch, numpy or
pandas, runs a model or measures anything. ``scripts/bench_costs.py`` compares these numbers with
measurements; ``tokenloom.costs.tables`` builds the CLI's tables from them. Parameter
counts and weight bytes are in :mod:`tokenloom.costs.weights`.

Conventions shared by every formula (each docstring repeats the ones it relies on):

- one multiply-add = 2 FLOPs; a matmul ``[n, k] @ [k, m]`` costs ``2·n·k·m`` FLOPs;
- forward pass only; training ≈ 3 × forward (backward ≈ 2 × forward; Kaplan et al. 2020, §2.1);
- only matrix products are counted: no softmax, normalization, activation, bias, residual or RoPE FLOPs
  (each is O(N·d) or O(N·M) elementwise work, small next to the products at the usual sizes);
- bytes are exact integers: ``ceil(elements × bytes_per_element)`` (int4 packs two values per byte).

Shape letters (as in DESIGN.md): ``B`` batch, ``H`` query heads, ``Hkv`` key/value heads, ``N`` queries,
``M`` keys, ``D`` head width, ``d`` model width, ``f`` MLP hidden width, ``L`` layers, ``s`` bytes/element.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from tokenloom.costs._check import check_count
from tokenloom.encoder.patterns import Pattern, parse_pattern
from tokenloom.errors import ConfigError

if TYPE_CHECKING:
    from tokenloom.encoder.config import EncoderConfig

__all__ = [
    "DTYPE_BYTES",
    "DType",
    "EncoderFlops",
    "attention_edges",
    "attention_flops",
    "bytes_per_element",
    "encoder_flops",
    "encoder_kv_cache_bytes",
    "format_bytes",
    "format_count",
    "kv_cache_bytes",
    "linear_flops",
    "mlp_flops",
    "projection_flops",
    "score_bytes",
    "tensor_bytes",
    "vit_patch_dim",
    "vit_tokens",
]

DType = Literal["fp64", "fp32", "bf16", "fp16", "fp8", "int8", "int4"]

# bytes per element of each dtype name accepted wherever ``bytes_per_element`` is
DTYPE_BYTES: dict[str, float] = {
    "fp64": 8.0,
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}

MlpKind = Literal["gelu", "swiglu"]
UnitSystem = Literal["binary", "decimal"]


# --------------------------------------------------------------------------- inputs


def bytes_per_element(dtype: str | float) -> float:
    """Bytes per element of ``dtype``: a name from :data:`DTYPE_BYTES` or a positive number (``2``, ``"0.5"``).

    Raises :class:`ConfigError` listing the accepted names for anything else.
    """
    if isinstance(dtype, bool):
        raise ConfigError(f"bytes per element must be a dtype name or a positive number, got {dtype!r}")
    if isinstance(dtype, str):
        key = dtype.strip().lower()
        if key in DTYPE_BYTES:
            return DTYPE_BYTES[key]
        try:
            value = float(key)
        except ValueError:
            raise ConfigError(
                f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPE_BYTES)} "
                "or give bytes per element as a number (e.g. 2)"
            ) from None
    elif isinstance(dtype, int | float):
        value = float(dtype)
    else:
        raise ConfigError(f"bytes per element must be a dtype name or a positive number, got {dtype!r}")
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(
            f"bytes per element must be positive and finite, got {dtype!r}; "
            f"or use a dtype name: {', '.join(DTYPE_BYTES)}"
        )
    return value


def tensor_bytes(elements: int, dtype: str | float) -> int:
    """Bytes of ``elements`` values: ``ceil(elements × s)``, exact (no float rounding; int4 packs 2 per byte)."""
    return math.ceil(check_count("elements", elements, zero_ok=True) * Fraction(bytes_per_element(dtype)))


# --------------------------------------------------------------------------- memory


def score_bytes(batch: int, heads: int, q_len: int, kv_len: int, bytes_per_element: str | float) -> int:
    """Bytes of the naive, materialized attention-score matrix ``S = QKᵀ``: ``B·H·N·M·s``.

    Source: Dao et al. 2022 (FlashAttention, §2.2): standard attention writes ``S`` and ``P = softmax(S)``,
    both ``N×M`` per head, to memory, hence O(N²) memory; FlashAttention never materializes them.
    Assumptions: one copy of ``S`` for one layer; ``P`` (kept for the backward pass) is another buffer of
    the same size, and a training step keeps ``P`` for every layer (× L) unless it recomputes.
    Worked example: one head, N = M = 4096, 2 bytes → 32 MiB; 32 heads → 1 GiB.
    """
    elements = (
        check_count("batch", batch)
        * check_count("heads", heads)
        * check_count("q_len", q_len)
        * check_count("kv_len", kv_len)
    )
    return tensor_bytes(elements, bytes_per_element)


def kv_cache_bytes(
    layers: int, batch: int, seq_len: int, kv_heads: int, head_dim: int, bytes_per_element: str | float
) -> int:
    """Bytes of a key/value cache: ``2·L·B·N·Hkv·D·s`` (the 2 is one K and one V per position).

    Source: Pope et al. 2022 ("Efficiently Scaling Transformer Inference", KV-cache memory) and Kwon et al.
    2023 (vLLM / PagedAttention); grouped-query attention (Ainslie et al. 2023) caches ``Hkv < H`` heads.
    Assumptions: dense cache of all N positions of every layer, no paging overhead or fragmentation.
    Worked example: L=32, B=1, N=4096, Hkv=8, D=128, 2 bytes → 512 MiB; Hkv=32 → 2 GiB; N and B doubled → ×4.
    """
    elements = (
        2
        * check_count("layers", layers)
        * check_count("batch", batch)
        * check_count("seq_len", seq_len)
        * check_count("kv_heads", kv_heads)
        * check_count("head_dim", head_dim)
    )
    return tensor_bytes(elements, bytes_per_element)


def encoder_kv_cache_bytes(config: EncoderConfig, batch: int, seq_len: int, dtype: str | float) -> int:
    """:func:`kv_cache_bytes` for every layer of ``config`` (``L``, ``Hkv``, ``D`` taken from it)."""
    return kv_cache_bytes(
        config.depth, batch, seq_len, config.resolved_kv_heads, config.resolved_head_dim, dtype
    )


# --------------------------------------------------------------------------- FLOPs


def linear_flops(tokens: int, in_features: int, out_features: int) -> int:
    """FLOPs of ``y = x W`` for ``tokens`` rows: ``2·tokens·in·out`` (one multiply-add = 2 FLOPs; bias not counted)."""
    return (
        2
        * check_count("tokens", tokens)
        * check_count("in_features", in_features)
        * check_count("out_features", out_features)
    )


def attention_edges(pattern: Pattern | str, n: int, m: int | None = None) -> int:
    """Allowed (query, key) pairs of an attention pattern for ``n`` queries and ``m`` keys (default n).

    ``pattern`` is a :class:`tokenloom.encoder.patterns.Pattern` or its spelling (``"window:512"``,
    ``"global:2+window:64"``, ``"bigbird:192,128,3"``; see :func:`~tokenloom.encoder.patterns.parse_pattern`).
    Exact integers: dense ``N·M``; causal ``N(N+1)/2`` when ``N == M`` (the diagonal included) — with the
    queries the last N of M keys (query i sees keys ``j ≤ i + M − N``) ``N·M − N(N−1)/2`` for ``N ≤ M`` and
    ``M(M+1)/2`` for ``N > M``; a W-key window ``≈ N·W`` (less near the ends); unions (``+``) and
    intersections (``&``, e.g. ``"causal&window:512"``) are counted row by row. Sparse attention does
    ``4·D`` FLOPs per edge and head (QKᵀ and PV), which is what makes a window's cost grow as ``N·W``, not N².
    Sources: Beltagy et al. 2020 (Longformer), Child et al. 2019 (Sparse Transformer), Zaheer et al. 2020 (BigBird).
    """
    if isinstance(pattern, str):
        try:
            pattern = parse_pattern(pattern)
        except ValueError as error:
            raise ConfigError(str(error)) from None
    if not isinstance(pattern, Pattern):
        raise ConfigError(f"pattern must be a Pattern or a spec such as 'window:512', got {pattern!r}")
    n = check_count("q_len", n, zero_ok=True)
    m = n if m is None else check_count("kv_len", m, zero_ok=True)
    try:
        return pattern.edges(n, m)
    except ValueError as error:
        raise ConfigError(str(error)) from None


def attention_flops(
    batch: int,
    heads: int,
    q_len: int,
    kv_len: int,
    head_dim: int,
    causal: bool = False,
    *,
    pattern: Pattern | str | None = None,
) -> int:
    """FLOPs of the two attention products ``S = QKᵀ`` and ``O = PV``: ``4·B·H·D·pairs``, ``pairs = N·M``.

    Each product is ``2·D`` FLOPs per (query, key) pair and head (one multiply-add = 2 FLOPs); the count is
    the same for GQA/MQA (sharing K/V heads saves memory, not arithmetic). Source: Dao 2023
    (FlashAttention-2, §4.1 counts ``4·N²·D`` per head forward).

    ``causal`` and ``pattern`` (a sparse pattern or its spelling, see :func:`attention_edges`) count only the
    allowed pairs, exactly: ``4·B·H·D·edges`` — the work of a path that skips the disallowed pairs. Causal
    is the ``causal`` pattern: ``N(N+1)/2`` pairs when ``N == M`` (the diagonal included; Dao 2023 rounds
    this to half of N²), with the queries the last N of the M keys otherwise (``N·M − N(N−1)/2`` for
    ``N ≤ M``; for ``N > M`` the first ``N − M`` queries see no key). Softmax, scaling and masking are not
    counted. Forward only.
    """
    b, h = check_count("batch", batch), check_count("heads", heads)
    n, m, d = check_count("q_len", q_len), check_count("kv_len", kv_len), check_count("head_dim", head_dim)
    if pattern is not None and causal:
        raise ConfigError(
            "give causal as part of the pattern (e.g. 'causal' or 'causal&window:512'), not both"
        )
    if pattern is None and not causal:
        return 4 * b * h * n * m * d
    return 4 * b * h * d * attention_edges("causal" if pattern is None else pattern, n, m)


def projection_flops(
    batch: int, seq_len: int, width: int, heads: int, head_dim: int, kv_heads: int | None = None
) -> int:
    """FLOPs of the attention projections: q ``d→H·D``, k and v ``d→Hkv·D`` each, output ``H·D→d``.

    ``2·B·N·d·(2·H·D + 2·Hkv·D)`` (one multiply-add = 2 FLOPs; biases not counted; forward only).
    Source: Kaplan et al. 2020, Table 1 (``2·n_layer·d_model·3·d_attn`` for QKV, ``2·d_attn·d_model`` out);
    Ainslie et al. 2023 for the smaller k/v projections of grouped-query attention.
    """
    hkv = heads if kv_heads is None else kv_heads
    tokens = check_count("batch", batch) * check_count("seq_len", seq_len)
    hd, kvd = (
        check_count("heads", heads) * check_count("head_dim", head_dim),
        check_count("kv_heads", hkv) * head_dim,
    )
    return (
        linear_flops(tokens, width, hd)
        + 2 * linear_flops(tokens, width, kvd)
        + linear_flops(tokens, hd, width)
    )


def mlp_flops(batch: int, seq_len: int, width: int, hidden: int, kind: MlpKind = "gelu") -> int:
    """FLOPs of the MLP: GELU ``2·B·N·(2·d·f)``; SwiGLU ``2·B·N·(3·d·f)`` (W1, W3 up, W2 down).

    Source: Kaplan et al. 2020, Table 1 (``2·n_layer·2·d_model·d_ff``); Shazeer 2020 ("GLU Variants
    Improve Transformer") for SwiGLU's third matrix (f ≈ 8d/3 keeps the parameters of a 4d MLP).
    The activation and the gating product are elementwise and not counted; forward only.
    """
    tokens = check_count("batch", batch) * check_count("seq_len", seq_len)
    if kind == "gelu":
        return linear_flops(tokens, width, hidden) + linear_flops(tokens, hidden, width)
    if kind == "swiglu":
        return 2 * linear_flops(tokens, width, hidden) + linear_flops(tokens, hidden, width)
    raise ConfigError(f"MLP kind must be one of ('gelu', 'swiglu'), got {kind!r}")


@dataclass(frozen=True)
class EncoderFlops:
    """Forward FLOPs of an encoder stack at one batch and sequence length, per layer and in total."""

    qkv: int  # per layer: q, k, v projections (grows with N)
    scores: int  # per layer: S = QKᵀ (grows with N·M, i.e. N² for self-attention)
    values: int  # per layer: O = PV (grows with N·M)
    out: int  # per layer: output projection (grows with N)
    mlp: int  # per layer: the MLP (grows with N)
    layers: int  # number of blocks L

    @property
    def per_layer(self) -> int:
        """Forward FLOPs of one block."""
        return self.qkv + self.scores + self.values + self.out + self.mlp

    @property
    def linear(self) -> int:
        """All layers' FLOPs that grow linearly with N (projections and MLP): ≈ 2·params·tokens."""
        return self.layers * (self.qkv + self.out + self.mlp)

    @property
    def attention(self) -> int:
        """All layers' FLOPs that grow with N·M (QKᵀ and PV)."""
        return self.layers * (self.scores + self.values)

    @property
    def total(self) -> int:
        """Forward FLOPs of the whole stack."""
        return self.layers * self.per_layer

    @property
    def training(self) -> int:
        """≈ one training step (forward + backward): 3 × forward (Kaplan et al. 2020, §2.1)."""
        return 3 * self.total


def encoder_flops(
    config: EncoderConfig, batch: int, seq_len: int, *, causal: bool | None = None
) -> EncoderFlops:
    """Forward FLOPs of ``Encoder(config)`` on ``batch`` sequences of ``seq_len`` tokens, per component.

    Per layer: projections (:func:`projection_flops`), attention (:func:`attention_flops`, self-attention,
    ``M = N``) and MLP (:func:`mlp_flops`); total = L × per layer; ``.training`` ≈ 3 × forward.
    For multi-head attention with f = 4d this is ``24·B·N·d² + 4·B·N²·d`` per layer (Narayanan et al. 2021,
    Megatron-LM FLOP count) and ``linear ≈ 2·params·tokens`` (Kaplan et al. 2020). Front ends (token or patch
    embedding), heads, norms, softmax and biases are not counted. ``causal`` defaults to ``config.causal``.
    """
    b, n = check_count("batch", batch), check_count("seq_len", seq_len)
    d, h, hkv = config.width, config.heads, config.resolved_kv_heads
    hd, f = config.resolved_head_dim, config.resolved_mlp_hidden
    causal = config.causal if causal is None else causal
    tokens = b * n
    half = attention_flops(b, h, n, n, hd, causal=causal) // 2  # QKᵀ and PV cost the same
    return EncoderFlops(
        qkv=linear_flops(tokens, d, h * hd) + 2 * linear_flops(tokens, d, hkv * hd),
        scores=half,
        values=half,
        out=linear_flops(tokens, h * hd, d),
        mlp=mlp_flops(b, n, d, f, config.mlp),
        layers=config.depth,
    )


# --------------------------------------------------------------------------- vision tokens


def vit_tokens(
    image_size: int | tuple[int, int], patch_size: int, class_token: bool = True, *, pad: bool = False
) -> int:
    """Tokens a ViT makes of one image: ``(H/P)·(W/P)`` patches, + 1 with a class token.

    Source: Dosovitskiy et al. 2021 (ViT, §3.1: ``N = HW/P²``). ``image_size`` is ``S`` (square) or
    ``(H, W)``. A side not divisible by P is refused unless ``pad=True`` (then rounded up, as
    ``patchify(..., pad=True)`` pads). Worked example: 224×224, P=16 → 196 patches (197 with the class token).
    Attention work grows with the square of this count: halving P or doubling the side costs ×16.
    """
    h, w = (image_size, image_size) if isinstance(image_size, int) else tuple(image_size)
    h, w, p = (
        check_count("image height", h),
        check_count("image width", w),
        check_count("patch_size", patch_size),
    )
    if not pad and (h % p or w % p):
        raise ConfigError(
            f"image size {h}x{w} is not a multiple of patch_size={p}; resize to a multiple of {p} "
            "or pass pad=True (--pad) to pad up to the next multiple"
        )
    return math.ceil(h / p) * math.ceil(w / p) + (1 if class_token else 0)


def vit_patch_dim(patch_size: int, channels: int = 3) -> int:
    """Values in one flattened patch: ``C·P·P`` (Dosovitskiy et al. 2021). RGB, P=16 → 768."""
    return check_count("channels", channels) * check_count("patch_size", patch_size) ** 2


# --------------------------------------------------------------------------- human units

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
_DECIMAL = ("B", "kB", "MB", "GB", "TB", "PB", "EB")
_SI = ("", "k", "M", "G", "T", "P", "E", "Z")


def format_bytes(n: float, *, system: UnitSystem = "binary", digits: int = 1) -> str:
    """``n`` bytes in human units: binary (KiB, MiB, GiB: powers of 1024) or decimal (kB, MB, GB: 1000).

    >>> format_bytes(2**29)
    '512.0 MiB'
    >>> format_bytes(140e9, system="decimal")
    '140.0 GB'
    """
    if system not in ("binary", "decimal"):
        raise ConfigError(f"unit system must be 'binary' or 'decimal', got {system!r}")
    base, units = (1024, _BINARY) if system == "binary" else (1000, _DECIMAL)
    value, i = float(n), 0
    while abs(value) >= base and i < len(units) - 1:
        value /= base
        i += 1
    return f"{int(n)} B" if i == 0 else f"{value:.{digits}f} {units[i]}"


def format_count(n: float, unit: str = "FLOP", *, digits: int = 1) -> str:
    """``n`` with an SI prefix (powers of 1000): ``format_count(2.5e11) == '250.0 GFLOP'``."""
    value, i = float(n), 0
    while abs(value) >= 1000 and i < len(_SI) - 1:
        value /= 1000
        i += 1
    return f"{int(n)} {unit}" if i == 0 else f"{value:.{digits}f} {_SI[i]}{unit}"
