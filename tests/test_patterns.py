"""Sparse attention patterns: masks, exact edge counts, tile layouts, and every attention path against the
dense-mask reference (outputs and gradients), with the tiled path's work following the edges."""

from __future__ import annotations

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from tokenloom.encoder import masks
from tokenloom.encoder import patterns as P
from tokenloom.encoder.attention import attention, last_impl, reference_attention
from tokenloom.encoder.attention.tiled import last_tile_flops, tiled_attention

LAYOUT = [[1, 0, 1, 0], [0, 1, 0, 0], [1, 1, 1, 1], [0, 0, 1, 1]]  # 16 x 16 in blocks of 4

# every kind of pattern, at sizes small enough for the dense reference
KINDS: dict[str, P.Pattern] = {
    "dense": P.dense(),
    "causal": P.causal(),
    "window": P.window(3, 1),
    "global": P.global_tokens(2),
    "strided": P.strided(3),
    "strided-both": P.strided(4, causal=False),
    "block_sparse": P.block_sparse(LAYOUT, 4),
    "random": P.RandomBlocks(2, 3, seed=7),
    "bigbird": P.bigbird(6, 2, 1, block=4, seed=1),
    "union": P.window(2) | P.global_tokens(1) | P.strided(5),
    "intersection": P.causal() & (P.window(4, 0) | P.global_tokens(2)),
    "intersection-mixed": P.strided(3, causal=False) & P.window(5, 2) & P.RandomBlocks(2, 4, seed=3),
}


def _brute_edges(pattern: P.Pattern, n: int, m: int) -> int:
    """Count by definition, one pair at a time (independent of the pattern's mask and formulas)."""
    count = 0
    for i in range(n):
        p = i + m - n
        for j in range(m):
            count += _brute_allowed(pattern, i, p, j, n, m)
    return count


def _brute_allowed(pattern: P.Pattern, i: int, p: int, j: int, n: int, m: int) -> bool:
    if isinstance(pattern, P.Dense):
        return True
    if isinstance(pattern, P.Causal):
        return j <= p
    if isinstance(pattern, P.Window):
        return p - pattern.left <= j <= p + pattern.right
    if isinstance(pattern, P.GlobalTokens):
        return j < pattern.g or p < pattern.g
    if isinstance(pattern, P.Strided):
        delta, s = p - j, pattern.stride
        ok = abs(delta) < s or delta % s == 0
        return ok and (delta >= 0 or not pattern.causal)
    if isinstance(pattern, P.BlockSparse):
        return bool(pattern.layout[i // pattern.block_size][j // pattern.block_size])
    if isinstance(pattern, P.RandomBlocks):
        return _brute_allowed(pattern.layout(n, m), i, p, j, n, m)
    if isinstance(pattern, P.Intersection):
        return all(_brute_allowed(part, i, p, j, n, m) for part in pattern.parts)
    assert isinstance(pattern, P.Union)
    return any(_brute_allowed(part, i, p, j, n, m) for part in pattern.parts)


SIZES = [(1, 1), (7, 7), (13, 13), (5, 11), (11, 5), (16, 16), (0, 4), (4, 0)]


@pytest.mark.parametrize("kind", list(KINDS))
def test_edges_and_mask_agree_with_the_definition(kind: str) -> None:
    pattern = KINDS[kind]
    for n, m in SIZES:
        brute = _brute_edges(pattern, n, m)
        assert pattern.edges(n, m) == brute, (n, m)
        assert int(pattern.mask(n, m).sum()) == brute, (n, m)
        assert P.Pattern.edges(pattern, n, m) == brute  # the row-interval count agrees with closed forms


def test_known_edge_counts() -> None:
    n = 4096
    assert P.dense().edges(n) == n * n
    assert P.causal().edges(n) == n * (n + 1) // 2  # the diagonal included
    w = P.parse_pattern("window:512")  # 512 keys per row, the query included (256 before, 255 after)
    assert (w.left, w.right) == (256, 255)
    assert w.edges(n) == n * 512 - (256 * 257 // 2) - (255 * 256 // 2)  # minus the cut-off corners
    assert P.global_tokens(2).edges(n) == 2 * n + (n - 2) * 2
    # local runs of 4 (less 3+2+1 at the start) + one key 4 back for each of the rows 4..7
    assert P.strided(4).edges(8) == (8 * 4 - 6) + 4


def test_causal_pattern_equals_the_causal_mask_and_window_the_window_mask() -> None:
    for n, m in [(6, 6), (3, 8), (8, 3)]:
        assert torch.equal(P.causal().mask(n, m), masks.causal(n, m))
        assert torch.equal(P.window(2).mask(n, m), masks.window(n, m, 2))


def test_parse_patterns_and_specs() -> None:
    bigbird = P.parse_pattern("bigbird:192,128,3")
    assert bigbird.spec() == "bigbird:192,128,3"
    assert P.parse_pattern("bigbird") == bigbird
    union = P.parse_pattern("global:2+window:64")
    assert isinstance(union, P.Union)
    assert union.edges(100) == (P.global_tokens(2) | P.window(32, 31)).edges(100)
    specs = [p.spec() for p in P.parse_patterns("dense,window:512,bigbird:192,128,3,strided:128")]
    assert specs == ["dense", "window:512", "bigbird:192,128,3", "strided:128"]
    with pytest.raises(ValueError, match="window:W"):
        P.parse_pattern("windw:3")
    with pytest.raises(ValueError, match="covers"):
        P.block_sparse(LAYOUT, 4).edges(17)


def test_intersections_parse_with_and_binding_tighter_than_plus() -> None:
    causal_window = P.parse_pattern("causal&window:3,3")
    assert causal_window == P.Intersection((P.causal(), P.window(3, 3))) == P.causal() & P.window(3)
    assert P.parse_pattern("global:2+causal&window:4") == P.global_tokens(2) | (P.causal() & P.window(2, 1))
    grouped = P.parse_pattern("causal & (global:2 + window:8,0)")
    assert grouped == P.causal() & (P.global_tokens(2) | P.window(8, 0))
    assert P.parse_pattern("(causal)") == P.causal()
    # independent oracles: the mask builders of tokenloom.encoder.masks
    for n, m in [(9, 9), (4, 11), (11, 4), (1, 7)]:
        dense = causal_window.mask(n, m)
        assert torch.equal(dense, masks.window(n, m, 3, causal=True))
        assert causal_window.edges(n, m) == int(dense.sum())
        expected = masks.causal(n, m) & (masks.window(n, m, 8, causal=True) | P.global_tokens(2).mask(n, m))
        assert torch.equal(grouped.mask(n, m), expected)
        assert grouped.edges(n, m) == int(expected.sum())
    # & with dense is the other part; & of disjoint parts is empty
    assert (P.dense() & P.window(2)).edges(50, 40) == P.window(2).edges(50, 40)
    assert P.parse_pattern("window:0,0&global:3").edges(10) == 3


@pytest.mark.parametrize("impl", ["reference", "sdpa", "tiled", "auto"])
def test_attention_with_an_intersection_equals_the_reference_with_its_dense_mask(impl: str) -> None:
    n, m, g = 21, 26, 4
    i = torch.arange(n)[:, None] + (m - n)  # [N, 1] query positions, the last N of M
    j = torch.arange(m)[None, :]  # [1, M]
    dense = (j <= i) & ((j < g) | (i < g))  # causal AND global:4, written out
    pattern = P.parse_pattern("causal&global:4")
    assert pattern.edges(n, m) == int(dense.sum())
    q, k, v = _qkv(2, 4, 2, n, m, 8, seed=9)
    out = attention(q, k, v, pattern=pattern, impl=impl)  # type: ignore[arg-type]
    _compare(out, reference_attention(q, k, v, dense), [q, k, v], f"causal&global:4/{impl}")


@pytest.mark.parametrize(
    "spec",
    ["dense", "causal", "window:512", "window:3,0", "global:2+window:64", "strided:4", "strided:4,both",
     "bigbird:192,128,3", "bigbird:48,16,2,16", "random:2,16,5", "causal&window:64", "causal&global:4",
     "global:2+causal&window:4", "causal&(global:2+window:128,0)", "(global:1+window:3)&(causal+strided:2)"],
)  # fmt: skip
def test_specs_round_trip(spec: str) -> None:
    pattern = P.parse_pattern(spec)
    assert pattern.spec() == spec
    assert P.parse_pattern(pattern.spec()) == pattern


def test_parse_patterns_lists_keep_arguments_and_groups_together() -> None:
    got = P.parse_patterns("dense,causal&(global:2+bigbird:192,128,3),strided:4,both,window:4,0")
    assert [p.spec() for p in got] == [
        "dense", "causal&(global:2+bigbird:192,128,3)", "strided:4,both", "window:4,0",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "term", "reason"),
    [
        ("window:0", "window:0", "window W .* must be at least 1, got 0"),
        ("window:-1", "window:-1", "non-negative integers, got '-1'"),
        ("window:1.5", "window:1.5", "non-negative integers, got '1.5'"),
        ("window:4,2,1", "window:4,2,1", "window takes 1 or 2 numbers, got 3"),
        ("strided:0", "strided:0", "strided S must be at least 1, got 0"),
        ("strided:4,sideways", "strided:4,sideways", "non-negative integers"),
        ("bigbird:0,16,2", "bigbird:0,16,2", "bigbird W must be at least 1"),
        ("bigbird:64,16,2,0", "bigbird:64,16,2,0", "bigbird BLOCK must be at least 1"),
        ("random:2,0", "random:2,0", "random BLOCK must be at least 1"),
        ("causal&window:0", "window:0", "must be at least 1"),
        ("global:2+windw:3", "windw:3", "unknown pattern kind 'windw'"),
        ("causal&", "causal&", "a term is missing after '&'"),
        ("(causal+window:3", "(causal+window:3", r"a '\(' is never closed"),
        ("causal)", "causal)", r"unexpected '\)' at character 7"),
    ],
)
def test_bad_specs_name_the_value_as_written_and_the_forms(spec: str, term: str, reason: str) -> None:
    with pytest.raises(ValueError) as error:
        P.parse_pattern(spec)
    message = str(error.value)
    print(message)
    assert message.startswith(f"invalid attention pattern {term!r}")
    assert (f" in {spec!r}" in message) is (term != spec)
    assert re.search(reason, message), message
    for form in ("window:W (W >= 1)", "window:L,R", "strided:S[,both]", "bigbird[:W,G,R[,BLOCK]]", "&", "+"):
        assert form in message
    assert "\n" not in message and "got -1" not in message  # no internal value (window:0 was "right -1")


@pytest.mark.parametrize("kind", list(KINDS))
def test_tile_layout_lists_exactly_the_tiles_with_edges(kind: str) -> None:
    pattern = KINDS[kind]
    for n, m in [(13, 13), (16, 12), (5, 11), (11, 5)]:
        dense = pattern.mask(n, m)
        for bq, bk in [(1, 1), (2, 3), (4, 4), (5, 7), (16, 16)]:
            layout = P.tile_layout(pattern, n, m, bq, bk)
            assert len(layout) == -(-n // bq)
            for t, i0 in enumerate(range(0, n, bq)):
                listed = dict(layout[t])
                for j0 in range(0, m, bk):
                    tile = dense[i0 : i0 + bq, j0 : j0 + bk]
                    if tile.any():
                        assert listed[j0] is (not bool(tile.all())), (n, m, bq, bk, i0, j0)
                    else:
                        assert j0 not in listed


def _qkv(b: int, h: int, hkv: int, n: int, m: int, d: int, seed: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    shapes = [(b, h, n, d), (b, hkv, m, d), (b, hkv, m, d)]
    return [torch.randn(s, generator=gen, dtype=torch.float32).requires_grad_() for s in shapes]


def _compare(out: torch.Tensor, ref: torch.Tensor, inputs: list[torch.Tensor], label: str) -> None:
    grad = torch.randn_like(ref)
    got = torch.autograd.grad(out, inputs, grad)
    want = torch.autograd.grad(ref, inputs, grad, retain_graph=True)
    diff = max(float((a - b).abs().max()) for a, b in zip(got, want, strict=True))
    print(f"{label}: max |Δout| {float((out - ref).detach().abs().max()):.2e}, max |Δgrad| {diff:.2e}")
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("impl", ["reference", "sdpa", "tiled", "triton", "auto"])
def test_every_impl_equals_the_dense_mask_reference(kind: str, impl: str) -> None:
    pattern = KINDS[kind]
    n, m = (16, 12) if kind == "block_sparse" else (19, 23)
    q, k, v = _qkv(2, 4, 2, n, m, 8, seed=3)
    ref = reference_attention(q, k, v, pattern.mask(n, m))
    out = attention(q, k, v, pattern=pattern, impl=impl)  # type: ignore[arg-type]
    assert last_impl() == ("tiled" if impl in ("tiled", "triton", "auto") else impl)
    _compare(out, ref, [q, k, v], f"{kind}/{impl}")


def test_pattern_combines_with_mask_and_causal() -> None:
    q, k, v = _qkv(2, 2, 2, 10, 10, 4, seed=4)
    padding = masks.key_padding([10, 6], 10)  # [B, 1, 1, M]
    pattern = P.global_tokens(1) | P.window(2)
    ref = reference_attention(q, k, v, padding & pattern.mask(10), causal=True)
    for impl in ("reference", "sdpa", "tiled"):
        out = attention(q, k, v, padding, causal=True, pattern=pattern, impl=impl)  # type: ignore[arg-type]
        _compare(out, ref, [q, k, v], f"mask+causal/{impl}")
    additive = masks.to_additive(padding)
    out = attention(q, k, v, additive, pattern=pattern, impl="tiled")
    _compare(out, reference_attention(q, k, v, padding & pattern.mask(10)), [q, k, v], "additive/tiled")


def test_rows_without_keys_return_zeros() -> None:
    q, k, v = _qkv(1, 1, 1, 6, 6, 4, seed=5)
    layout = [[1, 0, 0], [0, 0, 0], [0, 0, 1]]  # query block 1 sees nothing
    out = attention(q, k, v, pattern=P.block_sparse(layout, 2), impl="tiled")
    assert torch.equal(out[..., 2:4, :], torch.zeros_like(out[..., 2:4, :]))
    _compare(out, reference_attention(q, k, v, P.block_sparse(layout, 2).mask(6)), [q, k, v], "dead rows")


def test_pattern_must_be_a_pattern() -> None:
    q, k, v = _qkv(1, 1, 1, 4, 4, 4, seed=0)
    with pytest.raises(TypeError, match="parse_pattern"):
        attention(q, k, v, pattern="window:3")  # type: ignore[arg-type]


@settings(max_examples=25, deadline=None)
@given(
    kind=st.sampled_from([k for k in KINDS if k != "block_sparse"]),
    n=st.integers(1, 40),
    m=st.integers(1, 40),
    block_q=st.integers(1, 16),
    block_k=st.integers(1, 16),
    groups=st.sampled_from([1, 2]),
)
def test_tiled_with_any_tiles_equals_reference(
    kind: str, n: int, m: int, block_q: int, block_k: int, groups: int
) -> None:
    pattern = KINDS[kind]
    q, k, v = _qkv(1, 2, 2 // groups, n, m, 4, seed=n * 41 + m)
    ref = reference_attention(q, k, v, pattern.mask(n, m))
    out = tiled_attention(q, k, v, pattern=pattern, block_q=block_q, block_k=block_k)
    _compare(out, ref, [q, k, v], f"{kind} N={n} M={m} tiles {block_q}x{block_k}")


def _tile_work(pattern: P.Pattern, n: int, m: int, bq: int, bk: int) -> int:
    """Pairs in the tiles the layout lists (what the tiled path multiplies)."""
    total = 0
    for t, row in enumerate(P.tile_layout(pattern, n, m, bq, bk)):
        rows = min(bq, n - t * bq)
        total += sum(rows * min(bk, m - j0) for j0, _ in row)
    return total


@pytest.mark.parametrize(
    "spec", ["dense", "causal", "window:64", "global:8+window:32", "bigbird:48,16,2,16", "causal&window:64,0"]
)
def test_tiled_work_follows_the_edges(spec: str) -> None:
    """Counted tile products = 4·D per computed pair, and the computed pairs are the pattern's edges up
    to one tile row/column around each allowed run (BigBird's window and global tokens are two runs)."""
    pattern = P.parse_pattern(spec)
    n, d, h, b = 512, 16, 2, 16
    q, k, v = (x.detach() for x in _qkv(1, h, h, n, n, d, seed=6))
    with FlopCounterMode(display=False) as counter:
        tiled_attention(q, k, v, pattern=pattern, block_q=b, block_k=b)
    counted = last_tile_flops()
    assert counted is not None
    computed = _tile_work(pattern, n, n, b, b)
    assert counted == 4 * d * h * computed
    # the QKᵀ products (torch.bmm) as FlopCounterMode sees them: half of the tile products when Dv = D
    bmm = sum(
        v
        for op, v in counter.get_flop_counts()["Global"].items()
        if "bmm" in str(op) and "baddbmm" not in str(op)
    )
    assert bmm == counted // 2
    edges = pattern.edges(n)
    runs = 2 if spec.startswith(("global", "bigbird")) else 1
    extra = 4 * d * h * (n * 2 * b * runs + n * b)  # one tile column each side of each run + one tile row
    print(f"{spec}: edges·4·D·H {4 * d * h * edges:,}, counted {counted:,}, dense {4 * d * h * n * n:,}")
    assert 4 * d * h * edges <= counted <= 4 * d * h * edges + extra
    if spec.startswith("window"):
        assert counted < 4 * d * h * n * n / 4  # the window skips most of the N² work


def test_triton_request_with_a_pattern_reports_tiled() -> None:
    q, k, v = (x.detach() for x in _qkv(1, 1, 1, 8, 8, 4, seed=8))
    attention(q, k, v, pattern=P.window(1), impl="triton")
    assert last_impl() == "tiled"
