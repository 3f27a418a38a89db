"""The pitfalls lesson: three mistakes with masks, each shown on the lesson's tensors.

q = [1, 0]; keys [1, 0], [0, 1]; values [2, 0], [0, 4]; d = 2; the mask lets the query see key 0 only.

1. **Masking after softmax without renormalizing**: softmax first gives [0.6698, 0.3302]; zeroing key 1
   then leaves [0.6698, 0] (the row sums to 0.6698, output [1.3395, 0]) instead of the masked softmax
   [1, 0] (output [2, 0]). Mask the *scores* (−inf), then softmax.
2. **Mask polarity**: tokenloom's bool masks mean True = may attend (as in ``scaled_dot_product_attention``);
   ``torch.nn.MultiheadAttention``'s ``attn_mask`` means True = ignore. The same tensor ``[True, False]``
   gives output [2, 0] here and [0, 4] there; ``tokenloom.encoder.masks.to_ignore_mask`` converts.
3. **All-masked rows**: a naive softmax over a row of −inf is 0/0 = NaN; tokenloom returns zeros (and zero
   gradients) for a query that may see no key.

Every weight and output is computed by ``tokenloom.encoder.attention`` (reference path) or by torch.
"""

from __future__ import annotations

from typing import Any

from tokenloom.explain._format import jsonable, vec

__all__ = ["explain_pitfalls", "render_pitfalls"]


def _mha(q: Any, k: Any, v: Any, attn_mask: Any) -> tuple[Any, Any]:
    """``nn.MultiheadAttention`` with identity projections (so it computes plain attention of q, k, v)."""
    import torch
    from torch import nn

    d = q.shape[-1]
    mha = nn.MultiheadAttention(d, 1, bias=False, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(d, dtype=torch.float64).repeat(3, 1))  # q, k, v projections = I
        mha.out_proj.weight.copy_(torch.eye(d, dtype=torch.float64))
    out, weights = mha(q[None], k[None], v[None], attn_mask=attn_mask)
    return out[0].detach(), weights[0].detach()


def explain_pitfalls() -> dict[str, Any]:
    """The three pitfalls, as a JSON-ready dict of the tensors each one compares."""
    import torch

    from tokenloom.encoder.attention import attention, attention_weights
    from tokenloom.encoder.masks import to_ignore_mask

    q = torch.tensor([[1.0, 0.0]], dtype=torch.float64)  # [N=1, D]
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)  # [M=2, D]
    v = torch.tensor([[2.0, 0.0], [0.0, 4.0]], dtype=torch.float64)  # [M, Dv]
    q4, k4, v4 = q[None, None], k[None, None], v[None, None]  # [1, 1, N, D]
    mask = torch.tensor([[True, False]])  # [N, M]: may attend key 0 only (tokenloom polarity)

    soft = attention_weights(q4, k4)[0, 0]  # [N, M], no mask
    after = soft * mask  # masked after softmax, not renormalized
    right = attention_weights(q4, k4, mask)[0, 0]
    ours = attention(q4, k4, v4, mask, impl="reference")[0, 0]
    mha_same, mha_w_same = _mha(q, k, v, mask)  # the same tensor, read as True = ignore
    mha_conv, mha_w_conv = _mha(q, k, v, to_ignore_mask(mask))
    none = torch.zeros_like(mask)  # every key masked
    scores = (q @ k.T) / 2**0.5
    naive = torch.softmax(scores.masked_fill(~none, float("-inf")), dim=-1)  # [N, M] of NaN
    ours_dead = attention(q4, k4, v4, none, impl="reference")[0, 0]
    return jsonable(
        {
            "q": q, "k": k, "v": v, "mask": mask,
            "mask_after_softmax": {
                "softmax": soft[0], "masked_after": after[0], "row_sum": float(after.sum()),
                "output_wrong": (after @ v)[0], "masked_before": right[0], "output_right": ours[0],
            },
            "mask_polarity": {
                "tokenloom_weights": right[0], "tokenloom_output": ours[0],
                "mha_same_tensor_weights": mha_w_same[0], "mha_same_tensor_output": mha_same[0],
                "mha_converted_weights": mha_w_conv[0], "mha_converted_output": mha_conv[0],
            },
            "all_masked": {
                "naive_softmax": naive[0], "tokenloom_weights": attention_weights(q4, k4, none)[0, 0, 0],
                "tokenloom_output": ours_dead[0],
            },
        }
    )  # fmt: skip


def render_pitfalls(r: dict[str, Any]) -> str:
    """The three pitfalls as text."""
    a, p, z = r["mask_after_softmax"], r["mask_polarity"], r["all_masked"]
    return "\n".join(
        [
            "q = [1, 0]; keys [1, 0], [0, 1]; values [2, 0], [0, 4]; mask [True, False] (may attend key 0 only)",
            "",
            "1. masking after softmax without renormalizing",
            f"   softmax first:            {vec(a['softmax'])}",
            f"   then zero masked keys:    {vec(a['masked_after'])}   row sums to {a['row_sum']:.4f}, "
            f"output {vec(a['output_wrong'])}",
            f"   right: mask the scores:   {vec(a['masked_before'])}   output {vec(a['output_right'])}",
            "",
            "2. mask polarity: the same bool tensor [True, False]",
            f"   tokenloom (True = may attend):              weights {vec(p['tokenloom_weights'])}  "
            f"output {vec(p['tokenloom_output'])}",
            f"   nn.MultiheadAttention (True = ignore):      weights {vec(p['mha_same_tensor_weights'])}  "
            f"output {vec(p['mha_same_tensor_output'])}",
            f"   nn.MultiheadAttention(to_ignore_mask(m)):   weights {vec(p['mha_converted_weights'])}  "
            f"output {vec(p['mha_converted_output'])}",
            "",
            "3. a row with every key masked",
            f"   naive softmax of [-inf, -inf]: {vec(z['naive_softmax'])}",
            f"   tokenloom:                     weights {vec(z['tokenloom_weights'])}  output {vec(z['tokenloom_output'])}",
        ]
    )
