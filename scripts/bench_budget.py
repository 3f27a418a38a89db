"""Peak memory and time of training within a byte budget (``max_bytes``) on a generated pretraining mix.

The mix: ``scripts/make_mix.py``'s ``write_mix`` — FLORES-200 devtest sentences of every language as JSON Lines
shards (``text``, ``language``, ``language_script``), documents of four sentences repeated to ``--size-gb``.
Each (engine, budget) trains in a fresh process (``--worker``), which reports its own peak RSS
(``getrusage(RUSAGE_SELF)``: the engines run in-process) and the training seconds. Budget ``all`` trains
without a budget on the whole mix: the comparison that shows memory following the budget, not the corpus.

    python scripts/bench_budget.py --mix /tmp/mix2g [--size-gb 2.2] [--budgets 0.25,0.5,1,all] [--engines ...]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CASES = {"hf bpe": {"engine": "hf", "algorithm": "bpe"}, "sentencepiece bpe": {"engine": "sentencepiece"}}
CASES["hf bytelevel-bpe"] = {"algorithm": "bytelevel-bpe"}


def worker(case: str, budget: int, mix: str) -> None:
    """One training in this process; ``budget`` 0: no budget, the whole mix."""
    sys.path.insert(0, str(REPO / "src"))
    from tokenloom.text.train import train_tokenizer

    start = time.perf_counter()
    tok = train_tokenizer(
        mix, vocab_size=8000, max_bytes=budget or None, heldout=0, quiet=True, threads=2, **CASES[case]
    )  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    corpus = tok.record["corpus"]
    print(
        json.dumps(
            {"seconds": seconds, "peak": peak, "train": corpus["train_bytes"], "read": corpus["bytes"]}
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mix", type=Path, required=True)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--size-gb", type=float, default=2.2)
    parser.add_argument(
        "--budgets", default="0.25,0.5,1,all", help="comma-separated, GB; 'all': no budget, the whole mix"
    )
    parser.add_argument("--engines", default=",".join(CASES), help=f"comma-separated from {', '.join(CASES)}")
    parser.add_argument("--worker", nargs=3, metavar=("CASE", "BUDGET", "MIX"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), args.worker[2])
        return
    if not args.mix.exists():
        sys.path.insert(0, str(REPO / "scripts"))
        from make_mix import write_mix

        names = sorted(p.stem for p in (args.shared / "corpora" / "flores200" / "devtest").glob("*.txt"))
        write_mix(
            args.mix, args.shared, size_bytes=int(args.size_gb * 1e9), formats=[("jsonl", "none")], langs=names,
            lines=1012, shards=8, sentences_per_doc=4,
        )  # fmt: skip
    size = sum(p.stat().st_size for p in args.mix.iterdir())
    print(f"mix: {size / 1e9:.2f} GB in {len(list(args.mix.iterdir()))} JSONL shards; vocab 8000")
    print("| engine | budget | trained on | peak RSS | seconds |\n|---|---|---|---|---|")
    for case in args.engines.split(","):
        for budget in args.budgets.split(","):
            gb = 0.0 if budget == "all" else float(budget)
            argv = [
                sys.executable,
                __file__,
                "--mix",
                str(args.mix),
                "--worker",
                case,
                str(int(gb * 1e9)),
                str(args.mix),
            ]
            out = json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
            shown = f"{gb:g} GB" if gb else "none"
            print(
                f"| {case} | {shown} | {out['train'] / 1e9:.3f} GB | {out['peak'] / 2**30:.2f} GiB "
                f"| {out['seconds']:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
