"""Parity on FLORES-200: byte-level BPE, byte-level BPE with language sampling, and parity-aware BPE in its
variants, trained on the first 697 lines of each of the 39 dev files (parallel dev set for parity-bpe: their
last 300 lines) and evaluated on devtest — the same 39 languages and all 99.

For every tokenizer it prints the median and worst premium (against English: the mean over sentences of
tokens / English tokens, ``fertility.metrics.premium_stats``, as ``fertility_report``'s ``premium_mean``), the Gini coefficient of the premiums, English fertility (tokens per word), the total
tokens over the 39 (and 99) languages with its change against plain byte-level BPE of the same size (the cost
of parity), and the training seconds; then writes a chart of Gini against total tokens (the frontier).

    python scripts/bench_parity.py [--sizes 16000] [--global-merges 2000,4000,8000] [--chart docs/parity.png]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from tokenloom.fertility.metrics import premium_stats
from tokenloom.fertility.report import ReportConfig, fertility_report
from tokenloom.fertility.summary import gini
from tokenloom.text.tokenizer import Tokenizer
from tokenloom.text.train import train_tokenizer

REPO = Path(__file__).resolve().parent.parent
TRAIN_LINES, DEV_LINES = 697, 300


def split_dev(flores: Path, out: Path) -> tuple[Path, Path]:
    """The training folder (first 697 lines of each dev file) and the parallel dev set (last 300)."""
    train, dev = out / "train", out / "dev"
    train.mkdir()
    dev.mkdir()
    for path in sorted((flores / "dev").glob("*.txt")):
        lines = path.read_text("utf-8").splitlines()
        (train / path.name).write_text("\n".join(lines[:TRAIN_LINES]) + "\n", "utf-8")
        (dev / path.name).write_text("\n".join(lines[-DEV_LINES:]) + "\n", "utf-8")
    return train, dev


def cases(size: int, dev: Path, global_merges: list[int]) -> list[tuple[str, dict[str, Any]]]:
    """(label, training settings) of every tokenizer of one size."""
    parity: dict[str, Any] = {"algorithm": "parity-bpe", "dev": str(dev)}
    out: list[tuple[str, dict[str, Any]]] = [
        ("bytelevel-bpe", {"algorithm": "bytelevel-bpe"}),
        ("bytelevel-bpe a=0.3", {"algorithm": "bytelevel-bpe", "language_sampling": 0.3}),
        ("parity base", parity),
        ("parity window", {**parity, "variant": "window"}),
    ]
    out += [(f"parity base gm={g}", {**parity, "global_merges": g}) for g in global_merges if g < size]
    out += [
        (f"parity window gm={g}", {**parity, "variant": "window", "global_merges": g})
        for g in global_merges[:1]
    ]
    return [(f"{label} {size // 1000}k", {**s, "vocab_size": size}) for label, s in out]


def summary(premiums: dict[str, float], tokens: dict[str, int], langs: set[str]) -> dict[str, float]:
    """Median / worst premium, Gini and total tokens over ``langs`` (English aside for the premiums)."""
    values = [p for lang, p in premiums.items() if lang in langs and lang != "eng_Latn"]
    return {
        "median": statistics.median(values),
        "worst": max(values),
        "gini": gini(values),
        "tokens": sum(n for lang, n in tokens.items() if lang in langs),
    }


def evaluate(tok: Tokenizer, devtest: Path, dev_langs: set[str]) -> tuple[dict[str, float], dict[str, float]]:
    """The summaries over the 39 dev languages and all of devtest; English fertility (ICU words) beside."""
    texts = {p.stem: p.read_text("utf-8").splitlines() for p in sorted(devtest.glob("*.txt"))}
    counts = {lang: np.array([len(ids) for ids in tok.encode_batch(lines)]) for lang, lines in texts.items()}
    premiums = {lang: premium_stats(c, counts["eng_Latn"], n_boot=0)[0] for lang, c in counts.items()}
    tokens = {lang: int(c.sum()) for lang, c in counts.items()}
    config = ReportConfig(n_boot=0, roundtrip=False)
    eng = fertility_report({"t": tok}, devtest / "eng_Latn.txt", pivot=None, translit=False, config=config)
    fertility = float(eng[eng["slice_kind"] == "language"]["fertility"].iloc[0])
    s39, s99 = summary(premiums, tokens, dev_langs), summary(premiums, tokens, set(texts))
    return {**s39, "eng_fertility": fertility}, s99


def raw_seconds(train: Path, dev: Path, size: int) -> float:
    """The engine's ParityBpeTrainer called directly with the same pre-tokenizer and dev set."""
    from tokenizers import Regex, decoders, models, pre_tokenizers, trainers
    from tokenizers import Tokenizer as HFTokenizer

    from tokenloom.text.bytelevel import PATTERNS

    start = time.perf_counter()
    langs = sorted(p.stem for p in train.glob("*.txt"))
    lines = {
        lang: [ln for ln in (train / f"{lang}.txt").read_text("utf-8").split("\n") if ln] for lang in langs
    }
    held = {lang: (dev / f"{lang}.txt").read_text("utf-8").splitlines() for lang in langs}
    raw = HFTokenizer(models.BPE(ignore_merges=True))
    split = pre_tokenizers.Split(Regex(PATTERNS["o200k"]), behavior="isolated")
    raw.pre_tokenizer = pre_tokenizers.Sequence(
        [split, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.ParityBpeTrainer(
        num_merges=size - 4 - 256, special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )  # fmt: skip
    trainer.train_from_iterator(
        raw, train_iterators=[iter(lines[g]) for g in langs], dev_iterators=[iter(held[g]) for g in langs]
    )
    return time.perf_counter() - start


def chart(points: list[tuple[str, float, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k, (label, tokens, g) in enumerate(sorted(points, key=lambda p: p[1]), start=1):
        color = "tab:red" if "parity" in label else "tab:blue"
        ax.scatter(tokens / 1e6, g, color=color, label=f"{k}  {label}")  # numbered: labels never collide
        ax.annotate(str(k), (tokens / 1e6, g), fontsize=8, xytext=(4, 4), textcoords="offset points")
    ax.legend(fontsize=7, loc="upper right", handletextpad=0.3)
    ax.set_xlabel("total tokens on FLORES devtest, 39 languages (millions)")
    ax.set_ylabel("Gini of premiums vs English")
    ax.set_title("Parity frontier: lower-left is better")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--sizes", default="16000", help="comma-separated vocabulary sizes")
    parser.add_argument(
        "--global-merges", default="2000,4000,8000", help="comma-separated global_merges values"
    )
    parser.add_argument("--only", default="", help="run only the cases whose label contains this text")
    parser.add_argument("--chart", type=Path, default=None, help="write the Gini / total tokens chart here")
    parser.add_argument(
        "--vs-raw", type=int, default=0, help="only time ours against the raw engine at this size"
    )
    parser.add_argument("--rounds", type=int, default=3, help="with --vs-raw: alternating rounds")
    args = parser.parse_args()
    flores = args.shared / "corpora" / "flores200"
    dev_langs = {p.stem for p in (flores / "dev").glob("*.txt")}
    header = (
        "| tokenizer | median prem. (39) | worst (39) | Gini (39) | Gini (99) | worst (99) | eng fertility | "
        "tokens (39) | vs bytelevel | train s |"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    points: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        train, dev = split_dev(flores, Path(tmp))
        if args.vs_raw:
            times: list[tuple[float, float]] = []
            for _ in range(args.rounds):  # alternate, so both see the same machine load
                start = time.perf_counter()
                train_tokenizer(
                    train, algorithm="parity-bpe", dev=str(dev), vocab_size=args.vs_raw, heldout=0
                )
                ours = time.perf_counter() - start
                raw = raw_seconds(train, dev, args.vs_raw)
                times.append((ours, raw))
                print(
                    f"parity base {args.vs_raw}: ours {ours:.1f} s, raw engine {raw:.1f} s, ratio {ours / raw:.2f}"
                )
            ours_all, raw_all = zip(*times, strict=True)
            print(
                f"{args.rounds} rounds: best {min(ours_all) / min(raw_all):.2f}x, "
                f"mean {statistics.mean(ours_all) / statistics.mean(raw_all):.2f}x"
            )
            return
        for size in (int(s) for s in args.sizes.split(",")):
            base_tokens = None
            for label, settings in cases(size, dev, [int(g) for g in args.global_merges.split(",") if g]):
                if args.only not in label and not label.startswith("bytelevel-bpe "):
                    continue
                start = time.perf_counter()
                tok = train_tokenizer(train, heldout=0, quiet=True, **settings)
                seconds = time.perf_counter() - start
                s39, s99 = evaluate(tok, flores / "devtest", dev_langs)
                base_tokens = base_tokens or s39["tokens"]
                change = s39["tokens"] / base_tokens - 1
                points.append((label, s39["tokens"], s39["gini"]))
                print(
                    f"| {label} | {s39['median']:.2f} | {s39['worst']:.2f} | {s39['gini']:.3f} | {s99['gini']:.3f} "
                    f"| {s99['worst']:.2f} | {s39['eng_fertility']:.2f} | {s39['tokens']:,} | {change:+.1%} "
                    f"| {seconds:.0f} |",
                    flush=True,
                )
    if args.chart is not None:
        chart(points, args.chart)
        print(f"chart: {args.chart}")


if __name__ == "__main__":
    main()
