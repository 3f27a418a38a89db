"""``tokenloom costs attention --pattern`` and ``costs sweep --patterns``: the cost of sparse attention.

Options that read a pattern spelling (``window:512``, ``bigbird:192,128,3``; see
:func:`tokenloom.encoder.patterns.parse_pattern`) and the two reports: one pattern's edges, FLOPs and
score memory against dense attention, and how several patterns' edges grow across sequence lengths.
"""

from __future__ import annotations

import argparse
from typing import Any

from tokenloom._commands._args import argument_value
from tokenloom._commands._costs_args import memory_units, model_config

__all__ = ["add_pattern_option", "add_patterns_option", "run_attention_pattern", "run_sweep_patterns"]


def _pattern_spec(text: str) -> Any:
    from tokenloom.encoder.patterns import parse_pattern

    return argument_value(parse_pattern, text)


def _pattern_specs(text: str) -> list[Any]:
    from tokenloom.encoder.patterns import parse_patterns

    return argument_value(parse_patterns, text)


_PATTERN_HELP = (
    "dense, causal, window:W, strided:S, bigbird:W,G,R, ...; + is a union, & an intersection "
    "(e.g. causal&(global:2+window:512); see docs/explain.md)"
)


def add_pattern_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pattern", type=_pattern_spec, help=f"count only a sparse pattern's edges: {_PATTERN_HELP}"
    )


def add_patterns_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--patterns", type=_pattern_specs,
        help="compare attention patterns across --seq-len instead (edges, FLOPs, ratio to dense), "
        "e.g. dense,window:512,bigbird:192,128,3",
    )  # fmt: skip


def run_attention_pattern(args: argparse.Namespace) -> int:
    """``costs attention --pattern SPEC``: edges, FLOPs, score memory if materialized, ratio to dense."""
    from tokenloom.costs import attention_edges, bytes_per_element, format_count, score_bytes, tensor_bytes
    from tokenloom.costs.tables import format_memory
    from tokenloom.errors import ConfigError

    if args.causal:
        raise ConfigError(
            "give causal as part of --pattern (e.g. --pattern causal or --pattern 'causal&window:512'), "
            "not with --causal"
        )
    b, h, n, d, pattern = args.batch, args.heads, args.seq_len, args.head_dim, args.pattern
    m = args.kv_len or n
    s = bytes_per_element(args.dtype)
    edges, dense = attention_edges(pattern, n, m), n * m
    ratio = edges / dense
    print(f"pattern {pattern.spec()}: N={n} queries, M={m} keys")
    print(
        f"edges (allowed query-key pairs): {edges:,} of {dense:,} dense ({ratio:.2%}; {edges / n:,.1f} per query)"
    )
    print(
        f"attention FLOPs QKᵀ + PV: {format_count(4 * b * h * d * edges)}  (4·B·H·D·edges, D={d}, forward; "
        f"dense {format_count(4 * b * h * d * dense)}, ratio {ratio:.4f})"
    )
    print(
        f"score memory if materialized: {format_memory(score_bytes(b, h, n, m, s), memory_units(args))} dense (B·H·N·M·s), "
        f"{format_memory(tensor_bytes(b * h * edges, s), memory_units(args))} for the allowed pairs only (B·H·edges·s)"
    )
    return 0


def run_sweep_patterns(args: argparse.Namespace) -> int:
    """``costs sweep --patterns A,B,...``: how each pattern's edges and FLOPs grow with N (N² vs N·w)."""
    from tokenloom._tables import format_table
    from tokenloom.costs import attention_edges, format_count
    from tokenloom.costs.tables import describe

    cfg, name = model_config(args)
    if args.image_sizes or args.patch_sizes:
        from tokenloom.errors import ConfigError

        raise ConfigError("--patterns sweeps --seq-len; drop --image-sizes/--patch-sizes")
    h, d, L, b = cfg.heads, cfg.resolved_head_dim, cfg.depth, args.batch
    print(describe(cfg, name))
    print(f"batch B={b}; attention FLOPs QKᵀ + PV of all {L} layers, forward (4·L·B·H·D·edges)")
    header = ["N", "pattern", "edges", "edges/N", "attention FLOPs", "ratio to dense"]
    table, series = [], {}
    for pattern in args.patterns:
        series[pattern.spec()] = [attention_edges(pattern, n) for n in args.seq_len]
    for i, n in enumerate(args.seq_len):
        for spec, edges in series.items():
            e = edges[i]
            table.append([f"{n:,}", spec, f"{e:,}", f"{e / n:,.1f}", format_count(4 * L * b * h * d * e),
                          f"{e / (n * n):.4f}"])  # fmt: skip
    print(format_table(header, table, align="llrrrr"))
    if args.png:
        from tokenloom.costs.plots import plot_pattern_sweep

        path = plot_pattern_sweep(
            args.seq_len, series, args.png, title=f"attention edges per pattern ({name})"
        )
        print(f"chart: {path}")
    return 0
