"""Attention masks: one convention, builders, combining and explicit converters.

The convention everywhere in tokenloom: a mask is a **bool** tensor broadcastable to ``[B, H, N, M]``
where **True means "query i may attend key j"**. Builders return the smallest broadcastable shape
(``[N, M]``, ``[B, 1, 1, M]``, ``[B, 1, N, M]``) so that no ``[B, H, N, M]`` tensor is materialized.

Converters have explicit names so the two opposite polarities cannot be confused:

- ``to_additive`` / ``from_additive``: bool ⇄ float additive bias (0 = may attend, −inf = masked);
- ``from_ignore_mask`` / ``to_ignore_mask``: PyTorch's polarity (True = *ignore*, as in
  ``nn.MultiheadAttention``'s ``key_padding_mask`` and bool ``attn_mask``) ⇄ ours;
- ``from_key_padding_mask``: PyTorch's ``key_padding_mask`` ``[B, M]`` (True = padding) → ``[B, 1, 1, M]``.

Alignment when N ≠ M: queries are the **last** N of M positions (as with a KV cache), so query ``i`` sits
at absolute position ``i + (M − N)``. ``causal`` and ``window`` use that alignment.

Structured masks: ``attention(..., key_lengths=, segment_ids=, window=)`` take the numbers these
builders start from, so the Triton kernel never materializes a mask; ``key_padding``, ``segment`` and
``window`` build their dense equivalents (``window=(w, w)`` is ``window(n, m, w)``, ``window=(w, 0)``
with ``causal=True`` is ``window(n, m, w, causal=True)``), which the other paths and the tests use.

This module builds and converts masks; it does not apply them (see ``tokenloom.encoder.attention``).

Shapes: ``B`` batch, ``H`` heads, ``N`` queries, ``M`` keys.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = [
    "causal",
    "combine",
    "from_additive",
    "from_ignore_mask",
    "from_key_padding_mask",
    "key_padding",
    "segment",
    "to_additive",
    "to_ignore_mask",
    "window",
]

logger = logging.getLogger(__name__)


def _positions(n: int, m: int, device: torch.device | str | None) -> tuple[Tensor, Tensor]:
    """Absolute query positions ``[N, 1]`` (aligned to the last N of M) and key positions ``[1, M]``."""
    for name, value in (("n", n), ("m", m)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"mask size {name} must be a non-negative int, got {value!r}")
    qpos = torch.arange(n, device=device).unsqueeze(1) + (m - n)  # [N, 1]
    kpos = torch.arange(m, device=device).unsqueeze(0)  # [1, M]
    return qpos, kpos


def causal(n: int, m: int | None = None, *, device: torch.device | str | None = None) -> Tensor:
    """``[N, M]`` bool: query ``i`` may attend key ``j`` iff ``j ≤ i + (M − N)``.

    ``m`` defaults to ``n`` (the usual lower-triangular mask). With ``M > N`` the queries are the last N
    positions (KV-cache decoding): the last query sees every key. With ``M < N`` the first ``N − M``
    queries see no key at all (attention returns zeros for them).
    """
    m = n if m is None else m
    qpos, kpos = _positions(n, m, device)
    return kpos <= qpos  # [N, M]


def window(
    n: int,
    m: int | None,
    w: int,
    *,
    causal: bool = False,  # False: |i' − j| ≤ w (both sides); True: 0 ≤ i' − j ≤ w (the past w keys and itself)
    device: torch.device | str | None = None,
) -> Tensor:
    """``[N, M]`` bool sliding window around each query's aligned position ``i' = i + (M − N)``."""
    if not isinstance(w, int) or isinstance(w, bool) or w < 0:
        raise ValueError(f"window size w must be a non-negative int, got {w!r}")
    m = n if m is None else m
    qpos, kpos = _positions(n, m, device)
    delta = qpos - kpos  # [N, M]
    if causal:
        return (delta >= 0) & (delta <= w)
    return delta.abs() <= w


def _as_int_tensor(values: Tensor | Sequence[int], name: str, device: torch.device | str | None) -> Tensor:
    tensor = values if isinstance(values, Tensor) else torch.as_tensor(list(values), device=device)
    if tensor.dtype == torch.bool or tensor.is_floating_point() or tensor.is_complex():
        raise TypeError(f"{name} must hold integers, got dtype {tensor.dtype}")
    return tensor if device is None else tensor.to(device)


def key_padding(
    lengths: Tensor | Sequence[int], m: int, *, device: torch.device | str | None = None
) -> Tensor:
    """``[B, 1, 1, M]`` bool: key ``j`` of sequence ``b`` may be attended iff ``j < lengths[b]``."""
    lengths = _as_int_tensor(lengths, "lengths", device)
    if lengths.dim() != 1:
        raise ValueError(f"lengths must be 1-D [B], got shape {tuple(lengths.shape)}")
    if not isinstance(m, int) or m < 0:
        raise ValueError(f"m must be a non-negative int, got {m!r}")
    if lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > m):
        raise ValueError(
            f"lengths must lie in [0, m={m}], got min {int(lengths.min())}, max {int(lengths.max())}; "
            "pass m = the padded sequence length"
        )
    keys = torch.arange(m, device=lengths.device)  # [M]
    return (keys.unsqueeze(0) < lengths.unsqueeze(1))[:, None, None, :]  # [B, M] -> [B, 1, 1, M]


def segment(
    q_ids: Tensor | Sequence[int],
    k_ids: Tensor | Sequence[int] | None = None,
    *,
    device: torch.device | str | None = None,
) -> Tensor:
    """``[B, 1, N, M]`` bool for packed sequences: attend only within the same segment id.

    ``q_ids`` is ``[B, N]`` or ``[N]``; ``k_ids`` (default: ``q_ids``) is ``[B, M]`` or ``[M]``.
    A **negative id marks padding**: a padding query attends nothing (its output is zeros) and a padding
    key is attended by nobody. Combine with ``causal`` for packed causal training.
    """
    q = _as_int_tensor(q_ids, "q_ids", device)
    k = q if k_ids is None else _as_int_tensor(k_ids, "k_ids", q.device)
    if q.dim() not in (1, 2) or k.dim() not in (1, 2):
        raise ValueError(
            f"segment ids must be [B, N] / [N], got q_ids {tuple(q.shape)} and k_ids {tuple(k.shape)}"
        )
    q2 = q if q.dim() == 2 else q.unsqueeze(0)  # [B|1, N]
    k2 = k if k.dim() == 2 else k.unsqueeze(0)  # [B|1, M]
    if q2.shape[0] != k2.shape[0] and 1 not in (q2.shape[0], k2.shape[0]):
        raise ValueError(f"q_ids batch {q2.shape[0]} and k_ids batch {k2.shape[0]} differ")
    same = q2.unsqueeze(2) == k2.unsqueeze(1)  # [B, N, M]
    valid = (q2.unsqueeze(2) >= 0) & (k2.unsqueeze(1) >= 0)  # [B, N, M]
    return (same & valid).unsqueeze(1)  # [B, 1, N, M]


def combine(*masks: Tensor | None) -> Tensor | None:
    """Logical AND of bool masks (broadcast); ``None`` entries mean "no restriction" and are skipped.

    Returns ``None`` when every argument is ``None``. Float (additive) masks are refused: convert them
    with ``from_additive`` first (adding biases and AND-ing permissions are different operations).
    """
    result: Tensor | None = None
    for index, mask in enumerate(masks):
        if mask is None:
            continue
        if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
            kind = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
            raise TypeError(
                f"combine() argument {index} must be a bool mask (True = may attend), got {kind}; "
                "convert additive masks with from_additive() and PyTorch ignore-masks with from_ignore_mask()"
            )
        result = mask if result is None else result & mask
    return result


def to_additive(mask: Tensor, *, dtype: torch.dtype = torch.float32) -> Tensor:
    """Bool mask (True = may attend) → float additive bias: 0.0 where True, −inf where False."""
    if mask.dtype != torch.bool:
        raise TypeError(f"to_additive expects a bool mask (True = may attend), got dtype {mask.dtype}")
    if not dtype.is_floating_point:
        raise TypeError(f"to_additive dtype must be a floating dtype, got {dtype}")
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(~mask, float("-inf"))


def from_additive(bias: Tensor, *, strict: bool = True) -> Tensor:
    """Float additive mask → bool: True where the bias is not −inf.

    A finite bias (even −1e9) is a soft penalty, not a mask: attention keeps such keys with tiny weight.
    With ``strict=True`` (default) a bias holding finite values other than 0 raises, since converting it
    to bool would silently drop those values; pass ``strict=False`` to accept that loss.
    """
    if not bias.is_floating_point():
        raise TypeError(f"from_additive expects a float additive mask, got dtype {bias.dtype}")
    if torch.isnan(bias).any() or torch.isposinf(bias).any():
        raise ValueError("additive mask holds NaN or +inf; only 0 (attend) and -inf (masked) are meaningful")
    allowed = ~torch.isneginf(bias)
    if strict and bool((bias[allowed] != 0).any()):
        raise ValueError(
            "additive mask holds finite non-zero biases that a bool mask cannot represent; "
            "pass strict=False to keep only the -inf pattern, or pass the float mask to attention() directly"
        )
    return allowed


def from_ignore_mask(ignore: Tensor) -> Tensor:
    """PyTorch polarity (True = ignore / masked out) → ours (True = may attend): logical NOT."""
    if ignore.dtype != torch.bool:
        raise TypeError(
            f"from_ignore_mask expects a bool mask with True = ignore, got dtype {ignore.dtype}; "
            "float masks are additive: use from_additive()"
        )
    return ~ignore


def to_ignore_mask(mask: Tensor) -> Tensor:
    """Ours (True = may attend) → PyTorch polarity (True = ignore), e.g. for ``nn.MultiheadAttention``."""
    if mask.dtype != torch.bool:
        raise TypeError(f"to_ignore_mask expects a bool mask (True = may attend), got dtype {mask.dtype}")
    return ~mask


def from_key_padding_mask(key_padding_mask: Tensor) -> Tensor:
    """PyTorch ``key_padding_mask`` ``[B, M]`` (True = padding, ignore) → ours ``[B, 1, 1, M]``."""
    if key_padding_mask.dim() != 2:
        raise ValueError(
            f"key_padding_mask must be [B, M] (PyTorch's convention), got shape {tuple(key_padding_mask.shape)}"
        )
    return from_ignore_mask(key_padding_mask)[:, None, None, :]  # [B, M] -> [B, 1, 1, M]
