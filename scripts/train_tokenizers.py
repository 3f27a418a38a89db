"""Train all four tokenizers (bpe/unigram × hf/sentencepiece) on one corpus and save them side by side.

    python scripts/train_tokenizers.py ../shared/corpora/flores200/devtest --vocab-size 8000 \\
        --max-bytes 5000000 --out /tmp/tokenizers

writes ``OUT/bpe-hf``, ``OUT/unigram-hf``, ``OUT/bpe-sentencepiece``, ``OUT/unigram-sentencepiece`` (each a
folder ``load_tokenizer`` reads, with ``fertility.csv`` of the held-out lines as ``tokenloom train`` writes it) and prints one row per tokenizer: training time, MB/s, tokens and
characters per token on a held-out-free sample of the corpus, and whether the sample round-trips exactly.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tokenloom import TrainerConfig
from tokenloom.corpus.sources import iter_lines, resolve_inputs
from tokenloom.fertility.heldout import save_with_fertility
from tokenloom.text.train import train_with_heldout
from tokenloom.text.train_config import choices

COMBOS = [("bpe", "hf"), ("unigram", "hf"), ("bpe", "sentencepiece"), ("unigram", "sentencepiece")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="text files, folders or globs")
    parser.add_argument("--out", type=Path, required=True, help="folder that receives the four tokenizers")
    # the settings this script varies, with TrainerConfig's defaults
    parser.add_argument("--vocab-size", type=int, default=TrainerConfig.vocab_size)
    parser.add_argument(
        "--normalization", choices=choices()["normalization"], default=TrainerConfig.normalization
    )
    parser.add_argument("--max-bytes", type=int, default=TrainerConfig.max_bytes)
    parser.add_argument("--heldout", type=float, default=TrainerConfig.heldout)
    parser.add_argument("--seed", type=int, default=TrainerConfig.seed)
    parser.add_argument("--errors", choices=choices()["errors"], default=TrainerConfig.errors)
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()

    sample = [
        line
        for path in resolve_inputs(args.inputs)[:50]
        for line in list(iter_lines(path, errors="replace"))[:20]
    ]
    chars = sum(len(s) for s in sample)
    print("| tokenizer | vocab | seconds | MB/s | sample tokens | chars/token | round trip |")
    print("|---|---|---|---|---|---|---|")
    for algorithm, engine in COMBOS:
        config = TrainerConfig(
            algorithm=algorithm,  # type: ignore[arg-type]
            engine=engine,  # type: ignore[arg-type]
            vocab_size=args.vocab_size,
            normalization=args.normalization,
            max_bytes=args.max_bytes,
            heldout=args.heldout,
            seed=args.seed,
            errors=args.errors,
        )
        result = train_with_heldout(args.inputs, config, quiet=args.quiet)
        save_with_fertility(result, args.out / f"{algorithm}-{engine}", overwrite=args.overwrite)
        tok = result.tokenizer
        tokens = sum(len(ids) for ids in tok.encode_batch(sample))
        exact = sum(tok.is_lossless(s) for s in sample)
        training = tok.record["training"]
        print(
            f"| {algorithm}-{engine} | {tok.vocab_size} | {training['seconds']:.2f} | {training['mb_per_s']:.2f} "
            f"| {tokens} | {chars / max(tokens, 1):.2f} | {exact}/{len(sample)} |"
        )


if __name__ == "__main__":
    main()
