"""``tokenloom costs``: FLOPs, attention-score memory, KV-cache bytes and weights, from the command line.

Sub-commands: ``kv``, ``attention``, ``weights``, ``encoder``, ``sweep``, ``languages``, ``train``. Thin over
:mod:`tokenloom.costs`, :mod:`tokenloom.costs.tables` and :mod:`tokenloom.costs.languages`; pandas and matplotlib are imported only by the
sub-commands that need them. Lengths accept ``k``/``m`` suffixes (powers of 1024: ``4k`` = 4096).
Memory is printed in binary units (KiB, MiB, GiB) unless ``--units decimal``; ``--bytes`` prints exact bytes.
This module parses arguments and prints; the tables are built by the library. Options
that a command would silently ignore in the given combination are errors. The shared options live in
``_costs_args``, the sparse-pattern reports in ``_costs_patterns`` and ``train`` in ``_costs_train``.
"""

from __future__ import annotations

import argparse

from tokenloom._commands._args import DeprecatedAlias, parse_length, parse_lengths, refuse_ignored

# value parsers under the short names the option definitions below use
from tokenloom._commands._args import params as _params
from tokenloom._commands._args import positive as _positive
from tokenloom._commands._args import positives as _positives
from tokenloom._commands._costs_args import (
    add_dtype,
    add_model,
    add_units,
    add_vit,
    memory_units,
    model_config,
)
from tokenloom._commands._costs_patterns import (
    add_pattern_option,
    add_patterns_option,
    run_attention_pattern,
    run_sweep_patterns,
)
from tokenloom._commands._costs_train import TRAIN_HELP, add_train, run_train

NAME = "costs"
HELP = (
    "FLOPs, attention-score memory, KV-cache bytes and weights of an encoder, per component and per language"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # --quiet / --verbose also after the sub-command; SUPPRESS keeps `tokenloom costs -q kv ...` working too
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress bars"
    )
    common.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="tokenloom's debug logging on stderr",
    )
    sub = parser.add_subparsers(dest="costs_command", metavar="WHAT", required=True)

    def add(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help, parents=[common])

    p = add("kv", "KV-cache bytes: 2·L·B·N·Hkv·D·s")
    p.add_argument("--layers", type=_positive, required=True, help="layers L")
    p.add_argument("--batch", type=_positive, default=1, help="batch B (default 1)")
    p.add_argument("--seq-len", type=parse_length, required=True, help="cached positions N (4k = 4096)")
    p.add_argument("--kv-heads", type=_positive, required=True, help="key/value heads Hkv")
    p.add_argument("--head-dim", type=_positive, required=True, help="head width D")
    add_dtype(p, "bf16")
    add_units(p)

    p = add("attention", "score-matrix memory (B·H·N·M·s) and FLOPs (4·B·H·N·M·D)")
    p.add_argument("--heads", type=_positive, required=True, help="query heads H")
    p.add_argument("--seq-len", type=parse_length, required=True, help="queries N (4k = 4096)")
    p.add_argument("--kv-len", type=parse_length, help="keys M (default N)")
    p.add_argument("--head-dim", type=_positive, default=128, help="head width D, for FLOPs (default 128)")
    p.add_argument("--batch", type=_positive, default=1, help="batch B (default 1)")
    p.add_argument(
        "--causal",
        action="store_true",
        help="count only the allowed (query, key) pairs of causal attention, N(N+1)/2 when N = M "
        "(the same count as --pattern causal)",
    )
    add_pattern_option(p)
    add_dtype(p, "bf16")
    add_units(p)

    p = add("weights", "weight bytes: params·s (e.g. --params 70e9 --dtype bf16)")
    p.add_argument("--params", type=_params, required=True, help="parameter count, e.g. 70e9")
    add_dtype(p, "bf16")
    add_units(p, both=True)

    p = add("encoder", "per-component table: params, FLOPs, activation/score memory, N vs N²")
    add_model(p)
    p.add_argument("--seq-len", type=parse_length, help="tokens N (default: the ViT tokens of --image-size)")
    p.add_argument("--image-size", type=_positive, help="image side for N (default 224; not with --seq-len)")
    p.add_argument("--patch-size", type=_positive, help="patch side for N (default 16; not with --seq-len)")
    add_vit(p)
    add_dtype(p, "fp32")
    add_units(p)
    p.add_argument(
        "--vocab-size",
        type=_positive,
        help="add the token embedding and output layer of a V-token vocabulary",
    )
    p.add_argument(
        "--untied", action="store_true", help="with --vocab-size: the output layer has its own weights"
    )

    p = add("sweep", "totals across sequence lengths; optional PNG chart")
    add_model(p)
    p.add_argument(
        "--seq-len", type=parse_lengths, help="comma-separated lengths (default 1k,2k,4k,8k,16k,32k)"
    )
    p.add_argument(
        "--image-sizes", type=_positives, help="sweep ViT image sides instead, e.g. 224,384,512 (default 224)"
    )
    p.add_argument(
        "--patch-sizes", type=_positives, help="sweep ViT patch sides instead, e.g. 32,16,14,8 (default 16)"
    )
    add_vit(p)
    p.add_argument("--png", help="also write a chart of how each term grows to this PNG file")
    add_patterns_option(p)
    add_dtype(p, "bf16")
    add_units(p)

    p = add("languages", "per-language sequence length, attention FLOPs, KV cache from a fertility report")
    p.add_argument("report", help="fertility report CSV (tokenloom fertility)")
    p.add_argument("--pivot", default="eng_Latn", help="pivot language slice (default eng_Latn)")
    p.add_argument(
        "--context", type=parse_length, default=4096, help="pivot tokens of the content (default 4096)"
    )
    p.add_argument(
        "--statistic", choices=("mean", "median"), default="mean", help="premium statistic (default: mean)"
    )
    p.add_argument("--tokenizer", help="only this tokenizer of the report")
    p.add_argument("--png", help="also write a bar chart to this PNG file")
    p.add_argument("--csv", help="also write the table to this CSV file")
    add_model(p)
    p.add_argument(  # the old spelling of --preset here
        "--model-preset", dest="preset", action=DeprecatedAlias, metavar="--preset", help=argparse.SUPPRESS
    )
    add_dtype(p, "bf16")
    add_units(p)

    add_train(add("train", TRAIN_HELP))


def run(args: argparse.Namespace) -> int:
    return {
        "train": run_train,
        "kv": _run_kv,
        "attention": _run_attention,
        "weights": _run_weights,
        "encoder": _run_encoder,
        "sweep": _run_sweep,
        "languages": _run_languages,
    }[args.costs_command](args)


# --------------------------------------------------------------------------- sub-commands


def _run_kv(args: argparse.Namespace) -> int:
    from tokenloom.costs import kv_cache_bytes
    from tokenloom.costs.tables import format_memory

    n = kv_cache_bytes(args.layers, args.batch, args.seq_len, args.kv_heads, args.head_dim, args.dtype)
    print(format_memory(n, memory_units(args)))
    return 0


def _run_attention(args: argparse.Namespace) -> int:
    from tokenloom.costs import attention_edges, attention_flops, bytes_per_element, format_count, score_bytes
    from tokenloom.costs.tables import format_memory

    if args.pattern is not None:
        return run_attention_pattern(args)

    b, h, n, d = args.batch, args.heads, args.seq_len, args.head_dim
    m = args.kv_len or n
    s = bytes_per_element(args.dtype)
    mem = format_memory(score_bytes(b, h, n, m, s), memory_units(args))
    flops = attention_flops(b, h, n, m, d, causal=args.causal)
    grow = "N²" if m == n else "N·M"
    print(f"score matrix S = QKᵀ: {mem}  (B·H·N·M·s = {b}·{h}·{n}·{m}·{s:g} bytes, grows with {grow};")
    print("  P = softmax(S) is a second buffer of the same size; FlashAttention materializes neither)")
    if not args.causal:
        print(
            f"attention FLOPs QKᵀ + PV: {format_count(flops)}  (4·B·H·N·M·D, D={d}, forward, grows with {grow})"
        )
        return 0
    pairs = attention_edges("causal", n, m)
    print(
        f"attention FLOPs QKᵀ + PV: {format_count(flops)}  (4·B·H·D·pairs, D={d}, forward, grows with {grow})"
    )
    formula, alignment = _causal_rule(n, m)
    print(
        f"  causal: {pairs:,} allowed (query, key) pairs of {n * m:,} = {formula} ({alignment}query i sees "
        "keys j ≤ i + M − N; the count --pattern causal gives)"
    )
    return 0


def _causal_rule(n: int, m: int) -> tuple[str, str]:
    """The closed form of the exact causal pair count for N queries aligned to the last N of M keys, and
    what the alignment means for these N and M."""
    if n == m:
        return "N(N+1)/2", ""
    if n < m:
        return "N·M − N(N−1)/2", "queries are the last N of the M keys: "
    return "M(M+1)/2", "the first N − M queries see no key: "


def _run_weights(args: argparse.Namespace) -> int:
    from tokenloom.costs import weight_bytes
    from tokenloom.costs.tables import format_memory

    print(format_memory(weight_bytes(args.params, args.dtype), "bytes" if args.bytes else args.units))
    return 0


def _run_encoder(args: argparse.Namespace) -> int:
    from tokenloom.costs import (
        embedding_params,
        encoder_flops,
        encoder_kv_cache_bytes,
        encoder_params,
        format_count,
        vit_tokens,
        weight_bytes,
    )
    from tokenloom.costs.tables import describe, encoder_table, format_memory
    from tokenloom.errors import ConfigError

    cfg, name = model_config(args)
    if args.untied and args.vocab_size is None:
        raise ConfigError("--untied describes the output layer of --vocab-size; pass --vocab-size too")
    if args.seq_len is not None:
        refuse_ignored(args, ["--image-size", "--patch-size", "--no-class-token", "--pad"], "with --seq-len")
        n, why = args.seq_len, ""
    else:
        size, patch = args.image_size or 224, args.patch_size or 16
        n = vit_tokens(size, patch, class_token=not args.no_class_token, pad=args.pad)
        cls = "" if args.no_class_token else " + class token"
        why = f" ({size}×{size} image, patch {patch}{cls})"
    b, units = args.batch, memory_units(args)
    print(describe(cfg, name))
    print(f"batch B={b}, sequence N={n}{why}, memory at {args.dtype}; FLOPs forward, all {cfg.depth} layers")
    vocab = {"vocab_size": args.vocab_size, "tied": not args.untied}
    print(encoder_table(cfg, batch=b, seq_len=n, dtype=args.dtype, units=units, **vocab))
    fl, stack = encoder_flops(cfg, b, n), encoder_params(cfg)
    params = stack  # the block stack, plus the vocabulary's matrices when given
    if args.vocab_size is not None:
        params += embedding_params(args.vocab_size, cfg.width, tied=not args.untied)
        tying = "a tied output layer" if not args.untied else "an untied output layer of the same size"
        print(
            f"vocabulary: {args.vocab_size:,} × {cfg.width} embedding and {tying}; {params:,} parameters in all"
        )
    print(
        f"forward {format_count(fl.total)}: ∝N {format_count(fl.linear)} (≈ 2·params·tokens = "
        f"{format_count(2 * stack * b * n)}), ∝N² {format_count(fl.attention)} ({fl.attention / fl.total:.1%}); "
        f"training step ≈ 3× forward = {format_count(fl.training)}"
    )
    w = format_memory(weight_bytes(params, args.dtype), units if units == "bytes" else "both")
    print(f"weights at {args.dtype}: {w}" + (" bytes" if units == "bytes" else ""))
    kv = format_memory(encoder_kv_cache_bytes(cfg, b, n, args.dtype), units)
    print(f"KV cache for N={n} (causal decode, all layers, 2·L·B·N·Hkv·D·s): {kv}")
    return 0


def _run_sweep(args: argparse.Namespace) -> int:
    from tokenloom.costs.tables import describe, sweep_rows, sweep_table

    if args.patterns is not None:
        return run_sweep_patterns(args)
    cfg, name = model_config(args)
    vit = bool(args.image_sizes or args.patch_sizes)
    if vit:  # N = ViT tokens of each image side × patch side
        from tokenloom.costs import vit_tokens

        refuse_ignored(args, ["--seq-len"], "with --image-sizes / --patch-sizes (they set N)")
        combos = [(s, p) for s in args.image_sizes or [224] for p in args.patch_sizes or [16]]
        cls = not args.no_class_token
        lengths = [vit_tokens(s, p, class_token=cls, pad=args.pad) for s, p in combos]
        labels = [f"{s}px/{p} → {n:,}" for (s, p), n in zip(combos, lengths, strict=True)]
    else:
        refuse_ignored(args, ["--no-class-token", "--pad"], "without --image-sizes or --patch-sizes")
        lengths = args.seq_len or parse_lengths("1k,2k,4k,8k,16k,32k")
        labels = [f"{n:,}" for n in lengths]
    rows = sweep_rows(cfg, lengths, batch=args.batch, dtype=args.dtype)
    print(describe(cfg, name))
    print(f"batch B={args.batch}, memory at {args.dtype}; FLOPs forward, all {cfg.depth} layers")
    print(sweep_table(rows, labels, units=memory_units(args), label_header="image/patch → N" if vit else "N"))
    if args.png:
        from tokenloom.costs.plots import plot_sweep

        path = plot_sweep(rows, args.png, title=f"{name}, B={args.batch}, {args.dtype}")
        print(f"chart: {path}")
    return 0


def _run_languages(args: argparse.Namespace) -> int:
    from tokenloom._atomic import atomic_write
    from tokenloom.costs.languages import language_costs, language_table, load_fertility_report
    from tokenloom.costs.tables import describe
    from tokenloom.errors import ConfigError

    cfg, name = model_config(args)
    report = load_fertility_report(args.report)
    if args.tokenizer is not None:
        if args.tokenizer not in set(report["tokenizer"]):
            raise ConfigError(
                f"tokenizer {args.tokenizer!r} is not in {args.report}; choose among {sorted(set(report['tokenizer']))}"
            )
        report = report[report["tokenizer"] == args.tokenizer]
    frame = language_costs(
        report, cfg, pivot=args.pivot, context=args.context, batch=args.batch, dtype=args.dtype,
        statistic=args.statistic,
    )  # fmt: skip
    print(describe(cfg, name))
    print(
        f"same content as {args.context:,} {args.pivot} tokens; batch B={args.batch}, KV cache at {args.dtype}; "
        f"ratios against {args.pivot}: attention FLOPs ≈ premium², KV cache ∝ premium"
    )
    for tokenizer, group in frame.groupby("tokenizer", sort=True):
        print(f"\ntokenizer {tokenizer}")
        print(language_table(group, units=memory_units(args)))
    missing = frame[frame["premium"].isna()]
    if len(missing):
        what = "language" if len(missing) == 1 else "languages"
        print(
            f"\n{len(missing)} {what} without pivot-aligned text (no premium): {', '.join(missing['lang'])}"
        )
    if args.csv:
        atomic_write(args.csv, frame.to_csv(index=False))
        print(f"table: {args.csv}")
    if args.png:
        from tokenloom.costs.plots import plot_languages

        title = f"{name}, same content as {args.context} {args.pivot} tokens"
        print(f"chart: {plot_languages(frame, args.png, title=title)}")
    return 0
