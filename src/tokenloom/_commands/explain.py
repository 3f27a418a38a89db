"""``tokenloom explain``: the attention lessons, computed by the library, as text, JSON or a picture.

Sub-commands: ``attention``, ``rope``, ``complexity``, ``scaling``, ``pitfalls`` (see ``tokenloom.explain``).
Every one takes ``--json`` (machine-readable output instead of the walk-through) and, except ``pitfalls``,
``--png FILE`` (a picture, written atomically). Torch is imported only when a lesson runs.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tokenloom._commands._args import argument_value, parse_lengths

NAME = "explain"
HELP = "attention lessons you can run: one query step by step, RoPE, pattern complexity, 1/√d, mask pitfalls"


def _signed_ints(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid list {text!r}: give integers like 0,4,100") from None


def _rows(text: str) -> list[list[float]]:
    from tokenloom.explain.attention import parse_rows

    return argument_value(parse_rows, text)


def _words(text: str) -> list[str]:
    from tokenloom.encoder.patterns import parse_patterns

    return [p.spec() for p in argument_value(parse_patterns, text)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print the numbers as JSON")
    for flag in ("-q", "--quiet", "-v", "--verbose"):  # accepted after the lesson name too
        common.add_argument(flag, action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="lesson", metavar="LESSON", required=True)

    def add(name: str, help: str, png: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help, parents=[common])
        if png:
            p.add_argument("--png", metavar="FILE", help="also draw a picture into this PNG file")
        return p

    p = add("attention", "one query's attention step by step (default: the two-token example)")
    p.add_argument("--query", type=int, default=0, help="which query row to walk through (default 0)")
    p.add_argument("--no-scale", action="store_true", help="skip the 1/√d scaling")
    p.add_argument("--causal", action="store_true", help="apply the causal mask")
    p.add_argument("--q", type=_rows, metavar="ROWS", help="queries, e.g. '1,0;0,1' (default the lesson's)")
    p.add_argument("--k", type=_rows, metavar="ROWS", help="keys (default: the queries)")
    p.add_argument("--v", type=_rows, metavar="ROWS", help="values, e.g. '2,0;0,4'")
    p.add_argument("--n", type=int, help="random tokens instead: N of them ...")
    p.add_argument("--d", type=int, help="... of width d")
    p.add_argument("--seed", type=int, default=0, help="seed of the random tokens (default 0)")

    p = add("rope", "rotary positions: the score depends only on the gap")
    p.add_argument("--positions", type=_signed_ints, default=[1, 2], help="query and key position m,n (1,2)")
    p.add_argument("--shifts", type=_signed_ints, default=[0, 4, 100], help="common shifts (0,4,100)")
    p.add_argument("--gaps", type=_signed_ints, default=[1, 2, 4], help="gaps n - m (1,2,4)")

    p = add("complexity", "edges, FLOPs and score memory of attention patterns as N grows")
    p.add_argument(
        "--n", type=parse_lengths, default=[1024, 4096, 16384], help="sequence lengths (1k,4k,16k)"
    )
    p.add_argument(
        "--patterns", type=_words, default=["dense", "causal", "window:256", "bigbird:192,128,3"],
        help="patterns (dense,causal,window:256,bigbird); see tokenloom costs attention --help",
    )  # fmt: skip
    p.add_argument("--heads", type=int, default=1, help="heads H (default 1)")
    p.add_argument("--head-dim", type=int, default=64, help="head width D (default 64)")
    p.add_argument("--dtype", default="bf16", help="score dtype for memory (default bf16)")

    p = add("scaling", "why scores are divided by √d: measured variance of q·k for d = 4 … 1024")
    p.add_argument(
        "--dims", type=parse_lengths, default=[4, 8, 16, 32, 64, 128, 256, 512, 1024], help="head widths d"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")

    add("pitfalls", "masking after softmax, mask polarity, all-masked rows", png=False)


def run(args: argparse.Namespace) -> int:
    from tokenloom.errors import ConfigError

    try:
        result, text, plot = _LESSONS[args.lesson](args)
    except ValueError as error:  # a bad value given on the command line
        raise ConfigError(str(error)) from None
    print(json.dumps(result, indent=2) if args.json else text)
    if getattr(args, "png", None):
        path = plot(result, args.png)
        if not args.json:
            print(f"picture: {path}")
    return 0


def _attention(args: argparse.Namespace) -> tuple[Any, str, Any]:
    from tokenloom.explain.attention import explain_attention, plot_attention, render_attention

    r = explain_attention(
        args.q, args.k, args.v, query=args.query, scale=not args.no_scale, causal=args.causal,
        n=args.n, d=args.d, seed=args.seed,
    )  # fmt: skip
    return r, render_attention(r), plot_attention


def _rope(args: argparse.Namespace) -> tuple[Any, str, Any]:
    from tokenloom.explain.rope import explain_rope, plot_rope, render_rope

    if len(args.positions) != 2:
        raise ValueError(f"--positions takes two numbers m,n, got {args.positions}")
    r = explain_rope(positions=(args.positions[0], args.positions[1]), shifts=args.shifts, gaps=args.gaps)
    return r, render_rope(r), plot_rope


def _complexity(args: argparse.Namespace) -> tuple[Any, str, Any]:
    from tokenloom.explain.complexity import explain_complexity, plot_complexity, render_complexity

    r = explain_complexity(args.n, args.patterns, heads=args.heads, head_dim=args.head_dim, dtype=args.dtype)
    return r, render_complexity(r), plot_complexity


def _scaling(args: argparse.Namespace) -> tuple[Any, str, Any]:
    from tokenloom.explain.scaling import explain_scaling, plot_scaling, render_scaling

    r = explain_scaling(args.dims, seed=args.seed)
    return r, render_scaling(r), plot_scaling


def _pitfalls(args: argparse.Namespace) -> tuple[Any, str, Any]:
    from tokenloom.explain.pitfalls import explain_pitfalls, render_pitfalls

    r = explain_pitfalls()
    return r, render_pitfalls(r), None


_LESSONS = {
    "attention": _attention,
    "rope": _rope,
    "complexity": _complexity,
    "scaling": _scaling,
    "pitfalls": _pitfalls,
}
