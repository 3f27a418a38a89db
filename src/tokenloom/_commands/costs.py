"""``tokenloom costs``: FLOPs, attention-score memory, KV-cache bytes and weights, from the command line.

Sub-commands: ``kv``, ``attention``, ``weights``, ``encoder``, ``sweep``, ``languages``. Thin over
:mod:`tokenloom.costs` and :mod:`tokenloom.costs.tables`; pandas and matplotlib are imported only by the
sub-commands that need them. Lengths accept ``k``/``m`` suffixes (powers of 1024: ``4k`` = 4096).
Memory is printed in binary units (KiB, MiB, GiB) unless ``--units decimal``; ``--bytes`` prints exact bytes.
This module parses arguments and prints; the tables are built by :mod:`tokenloom.costs.tables`. Options
that a command would silently ignore in the given combination are errors.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from tokenloom._commands._args import DeprecatedAlias, parse_length, parse_lengths, refuse_ignored

# value parsers under the short names the option definitions below use
from tokenloom._commands._args import params as _params
from tokenloom._commands._args import positive as _positive
from tokenloom._commands._args import positives as _positives

if TYPE_CHECKING:
    from tokenloom.costs.tables import Units
    from tokenloom.encoder.config import EncoderConfig

NAME = "costs"
HELP = (
    "FLOPs, attention-score memory, KV-cache bytes and weights of an encoder, per component and per language"
)


def _add_vit(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-class-token", action="store_true", help="ViT tokens without the class token")
    p.add_argument("--pad", action="store_true", help="pad images up to a multiple of the patch size")


def _add_dtype(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument(
        "--dtype",
        default=default,
        help=f"fp32, bf16, fp16, fp8, int8, int4 or bytes per element as a number (default {default})",
    )


def _add_units(p: argparse.ArgumentParser, *, both: bool = False) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--bytes", action="store_true", help="print exact bytes instead of human units")
    if both:  # weights: decimal first (how model sizes are quoted), binary in parentheses
        g.add_argument(
            "--units",
            choices=("binary", "decimal", "both"),
            default="both",
            help="binary (GiB: powers of 1024), decimal (GB: powers of 1000) or both (default: both)",
        )
        return
    g.add_argument(
        "--units",
        choices=("binary", "decimal"),
        default="binary",
        help="binary (MiB, GiB: powers of 1024) or decimal (MB, GB: powers of 1000) (default: binary)",
    )


def _add_model(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model (a preset, optionally overridden, or --width --depth --heads)")
    g.add_argument("--preset", default=None, help="encoder preset, e.g. vit-b16 (default: vit-b16)")
    g.add_argument("--width", type=_positive, help="model width d")
    g.add_argument("--depth", type=_positive, help="number of blocks L")
    g.add_argument("--heads", type=_positive, help="query heads H")
    g.add_argument("--kv-heads", type=_positive, help="key/value heads Hkv (default H)")
    g.add_argument("--head-dim", type=_positive, help="head width D (default d / H)")
    g.add_argument("--mlp", choices=("gelu", "swiglu"), help="MLP kind (default gelu)")
    g.add_argument("--mlp-hidden", type=_positive, help="MLP hidden width f (default 4d; swiglu 8d/3)")
    g.add_argument("--norm", choices=("layernorm", "rmsnorm"), help="norm kind (default layernorm)")
    g.add_argument("--no-bias", action="store_true", help="no biases in projections and MLP")
    g.add_argument("--causal", action="store_true", help="causal self-attention (half the N² work)")
    p.add_argument("--batch", type=_positive, default=1, help="batch size B (default 1)")


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
    _add_dtype(p, "bf16")
    _add_units(p)

    p = add("attention", "score-matrix memory (B·H·N·M·s) and FLOPs (4·B·H·N·M·D)")
    p.add_argument("--heads", type=_positive, required=True, help="query heads H")
    p.add_argument("--seq-len", type=parse_length, required=True, help="queries N (4k = 4096)")
    p.add_argument("--kv-len", type=parse_length, help="keys M (default N)")
    p.add_argument("--head-dim", type=_positive, default=128, help="head width D, for FLOPs (default 128)")
    p.add_argument("--batch", type=_positive, default=1, help="batch B (default 1)")
    p.add_argument("--causal", action="store_true", help="causal: count only allowed pairs (half when N = M)")
    _add_pattern_option(p)
    _add_dtype(p, "bf16")
    _add_units(p)

    p = add("weights", "weight bytes: params·s (e.g. --params 70e9 --dtype bf16)")
    p.add_argument("--params", type=_params, required=True, help="parameter count, e.g. 70e9")
    _add_dtype(p, "bf16")
    _add_units(p, both=True)

    p = add("encoder", "per-component table: params, FLOPs, activation/score memory, N vs N²")
    _add_model(p)
    p.add_argument("--seq-len", type=parse_length, help="tokens N (default: the ViT tokens of --image-size)")
    p.add_argument("--image-size", type=_positive, help="image side for N (default 224; not with --seq-len)")
    p.add_argument("--patch-size", type=_positive, help="patch side for N (default 16; not with --seq-len)")
    _add_vit(p)
    _add_dtype(p, "fp32")
    _add_units(p)
    p.add_argument(
        "--vocab-size",
        type=_positive,
        help="add the token embedding and output layer of a V-token vocabulary",
    )
    p.add_argument(
        "--untied", action="store_true", help="with --vocab-size: the output layer has its own weights"
    )

    p = add("sweep", "totals across sequence lengths; optional PNG chart")
    _add_model(p)
    p.add_argument(
        "--seq-len", type=parse_lengths, help="comma-separated lengths (default 1k,2k,4k,8k,16k,32k)"
    )
    p.add_argument(
        "--image-sizes", type=_positives, help="sweep ViT image sides instead, e.g. 224,384,512 (default 224)"
    )
    p.add_argument(
        "--patch-sizes", type=_positives, help="sweep ViT patch sides instead, e.g. 32,16,14,8 (default 16)"
    )
    _add_vit(p)
    p.add_argument("--png", help="also write a chart of how each term grows to this PNG file")
    _add_patterns_option(p)
    _add_dtype(p, "bf16")
    _add_units(p)

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
    _add_model(p)
    p.add_argument(  # the old spelling of --preset here
        "--model-preset", dest="preset", action=DeprecatedAlias, metavar="--preset", help=argparse.SUPPRESS
    )
    _add_dtype(p, "bf16")
    _add_units(p)

    _add_train(add("train", _TRAIN_HELP))


def run(args: argparse.Namespace) -> int:
    return {
        "train": _run_train,
        "kv": _run_kv,
        "attention": _run_attention,
        "weights": _run_weights,
        "encoder": _run_encoder,
        "sweep": _run_sweep,
        "languages": _run_languages,
    }[args.costs_command](args)


# --------------------------------------------------------------------------- helpers


def _units(args: argparse.Namespace) -> Units:
    return "bytes" if args.bytes else args.units


def _config(args: argparse.Namespace) -> tuple[EncoderConfig, str]:
    """The EncoderConfig the model options describe, and a name for it."""
    from tokenloom.encoder.config import EncoderConfig
    from tokenloom.errors import ConfigError

    overrides: dict[str, Any] = {}
    for name in ("width", "depth", "heads", "kv_heads", "head_dim", "mlp", "mlp_hidden", "norm"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    if args.no_bias:
        overrides.update(qkv_bias=False, proj_bias=False)
    if args.causal:
        overrides["causal"] = True
    if args.preset is None and any(k in overrides for k in ("width", "depth", "heads")):
        shape = [k for k in ("width", "depth", "heads") if k not in overrides]
        if shape:
            flags = ", ".join("--" + k for k in shape)
            raise ConfigError(f"give {flags} too (or --preset NAME to start from a preset's shape)")
        return EncoderConfig(**overrides), "custom"
    name = args.preset or "vit-b16"
    return EncoderConfig.preset(name, **overrides), name + (" (modified)" if overrides else "")


# --------------------------------------------------------------------------- sub-commands


def _run_kv(args: argparse.Namespace) -> int:
    from tokenloom.costs import kv_cache_bytes
    from tokenloom.costs.tables import format_memory

    n = kv_cache_bytes(args.layers, args.batch, args.seq_len, args.kv_heads, args.head_dim, args.dtype)
    print(format_memory(n, _units(args)))
    return 0


def _run_attention(args: argparse.Namespace) -> int:
    from tokenloom.costs import attention_flops, bytes_per_element, format_count, score_bytes
    from tokenloom.costs.tables import format_memory

    if args.pattern is not None:
        return _run_attention_pattern(args)

    b, h, n, d = args.batch, args.heads, args.seq_len, args.head_dim
    m = args.kv_len or n
    s = bytes_per_element(args.dtype)
    mem = format_memory(score_bytes(b, h, n, m, s), _units(args))
    flops = attention_flops(b, h, n, m, d, causal=args.causal)
    grow = "N²" if m == n else "N·M"
    print(f"score matrix S = QKᵀ: {mem}  (B·H·N·M·s = {b}·{h}·{n}·{m}·{s:g} bytes, grows with {grow};")
    print("  P = softmax(S) is a second buffer of the same size; FlashAttention materializes neither)")
    print(
        f"attention FLOPs QKᵀ + PV: {format_count(flops)}  (4·B·H·N·M·D, D={d}, forward"
        + (", causal: only allowed pairs" if args.causal else "")
        + f", grows with {grow})"
    )
    return 0


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

    cfg, name = _config(args)
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
    b, units = args.batch, _units(args)
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
        return _run_sweep_patterns(args)
    cfg, name = _config(args)
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
    print(sweep_table(rows, labels, units=_units(args), label_header="image/patch → N" if vit else "N"))
    if args.png:
        from tokenloom.costs.plots import plot_sweep

        path = plot_sweep(rows, args.png, title=f"{name}, B={args.batch}, {args.dtype}")
        print(f"chart: {path}")
    return 0


def _run_languages(args: argparse.Namespace) -> int:
    from tokenloom._atomic import atomic_write
    from tokenloom.costs.tables import describe, language_costs, language_table, load_fertility_report
    from tokenloom.errors import ConfigError

    cfg, name = _config(args)
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
        print(language_table(group, units=_units(args)))
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


# --------------------------------------------------------------------------- training memory

_TRAIN_HELP = (
    "training-step memory: parameters, gradients, optimizer state, activations (scores only if materialized)"
)


def _add_train(p: argparse.ArgumentParser) -> None:
    _add_model(p)
    p.add_argument("--seq-len", type=parse_length, help="tokens N (default: the ViT tokens of --image-size)")
    p.add_argument("--image-size", type=_positive, help="image side for N (default 224; not with --seq-len)")
    p.add_argument("--patch-size", type=_positive, help="patch side for N (default 16; not with --seq-len)")
    _add_vit(p)
    p.add_argument("--optimizer", choices=("adamw", "adam", "momentum", "sgd"), default="adamw",
                   help="optimizer state: adamw/adam 2 moments, momentum 1, sgd none (default adamw)")  # fmt: skip
    p.add_argument("--attention", choices=("flash", "materialized"), default="flash",
                   help="flash: no N² buffers kept (tiled, SDPA, Triton); materialized: the reference path")  # fmt: skip
    p.add_argument(
        "--checkpointing", action="store_true", help="recompute each block's activations in backward"
    )
    _add_dtype(p, "fp32")
    _add_units(p)


def _run_train(args: argparse.Namespace) -> int:
    from tokenloom._tables import format_table
    from tokenloom.costs import training_memory, vit_tokens
    from tokenloom.costs.tables import describe, format_memory

    cfg, name = _config(args)
    if args.seq_len is not None:
        refuse_ignored(args, ["--image-size", "--patch-size", "--no-class-token", "--pad"], "with --seq-len")
        n, why = args.seq_len, ""
    else:
        size, patch = args.image_size or 224, args.patch_size or 16
        n = vit_tokens(size, patch, class_token=not args.no_class_token, pad=args.pad)
        why = f" ({size}×{size} image, patch {patch})"
    mem = training_memory(
        cfg, args.batch, n, args.dtype, optimizer=args.optimizer, attention=args.attention,
        checkpointing=args.checkpointing,
    )  # fmt: skip
    print(describe(cfg, name))
    print(
        f"one training step: batch B={args.batch}, tokens N={n}{why}, {args.dtype}, {args.optimizer}, "
        f"attention {args.attention}" + (", activation checkpointing" if args.checkpointing else "")
    )
    units = _units(args)
    rows = [
        [what, format_memory(n_bytes, units), f"{n_bytes / mem.total:.1%}"] for what, n_bytes in mem.rows()
    ]
    print(format_table(["what", "memory", "share"], rows, align="lrr"))
    return 0


# --------------------------------------------------------------------------- sparse attention patterns


def _pattern_spec(text: str) -> Any:
    from tokenloom.encoder.patterns import parse_pattern

    try:
        return parse_pattern(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _pattern_specs(text: str) -> list[Any]:
    from tokenloom.encoder.patterns import parse_patterns

    try:
        return parse_patterns(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


_PATTERN_HELP = "dense, causal, window:W, global:G+window:W, strided:S, bigbird:W,G,R (see docs/explain.md)"


def _add_pattern_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pattern", type=_pattern_spec, help=f"count only a sparse pattern's edges: {_PATTERN_HELP}"
    )


def _add_patterns_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--patterns", type=_pattern_specs,
        help="compare attention patterns across --seq-len instead (edges, FLOPs, ratio to dense), "
        "e.g. dense,window:512,bigbird:192,128,3",
    )  # fmt: skip


def _run_attention_pattern(args: argparse.Namespace) -> int:
    """``costs attention --pattern SPEC``: edges, FLOPs, score memory if materialized, ratio to dense."""
    from tokenloom.costs import attention_edges, bytes_per_element, format_count, score_bytes, tensor_bytes
    from tokenloom.costs.tables import format_memory
    from tokenloom.errors import ConfigError

    if args.causal:
        raise ConfigError("give causal as part of --pattern (e.g. --pattern causal), not with --causal")
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
        f"score memory if materialized: {format_memory(score_bytes(b, h, n, m, s), _units(args))} dense (B·H·N·M·s), "
        f"{format_memory(tensor_bytes(b * h * edges, s), _units(args))} for the allowed pairs only (B·H·edges·s)"
    )
    return 0


def _run_sweep_patterns(args: argparse.Namespace) -> int:
    """``costs sweep --patterns A,B,...``: how each pattern's edges and FLOPs grow with N (N² vs N·w)."""
    from tokenloom._tables import format_table
    from tokenloom.costs import attention_edges, format_count
    from tokenloom.costs.tables import describe

    cfg, name = _config(args)
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
