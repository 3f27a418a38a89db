"""``character_coverage`` on both engines: the piece composition of 8k BPE vocabularies trained on the 39
FLORES-200 dev files, and the English / Thai / Chinese token counts of each on devtest.

Rows: sentencepiece BPE (``character_coverage=0.9995``), the tokenizers engine with every character kept
(``character_coverage=1.0``: what the engine did before it honoured the setting) and the tokenizers engine
with ``0.9995``. Single characters are pieces of one character (byte pieces and special tokens aside).

    python scripts/coverage_table.py [--shared ../shared] [--vocab 8000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tokenloom.text.train import train_tokenizer

REPO = Path(__file__).resolve().parent.parent
LANGS = ("eng_Latn", "tha_Thai", "zho_Hans")
CASES = (("sentencepiece", 0.9995), ("hf", 1.0), ("hf", 0.9995))


def composition(tok: object) -> tuple[int, int, int]:
    """(single characters, byte pieces, longer pieces) of a tokenizer's vocabulary."""
    vocab = tok.hf_export().get_vocab()  # type: ignore[attr-defined]
    specials = {"<unk>", "<s>", "</s>", "<pad>"}
    byte = sum(1 for p in vocab if len(p) == 6 and p.startswith("<0x") and p.endswith(">"))
    single = sum(1 for p in vocab if len(p) == 1 and p not in specials)
    return single, byte, len(vocab) - single - byte - len(specials & set(vocab))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--vocab", type=int, default=8000)
    args = parser.parse_args()
    flores = args.shared / "corpora" / "flores200"
    test = {lang: (flores / "devtest" / f"{lang}.txt").read_text("utf-8").splitlines() for lang in LANGS}
    print(f"{args.vocab} BPE pieces trained on {len(list((flores / 'dev').glob('*.txt')))} FLORES dev files")
    head = "| engine | character_coverage | single chars | byte pieces | longer pieces | "
    print(head + " | ".join(f"{lang} tokens" for lang in LANGS) + " | train s |")
    print("|" + "---|" * (6 + len(LANGS)))
    for engine, coverage in CASES:
        start = time.perf_counter()
        tok = train_tokenizer(
            flores / "dev", engine=engine, vocab_size=args.vocab, character_coverage=coverage,
            heldout=0, quiet=True, threads=1,
        )  # fmt: skip
        seconds = time.perf_counter() - start
        counts = [sum(len(ids) for ids in tok.encode_batch(test[lang])) for lang in LANGS]
        single, byte, longer = composition(tok)
        cells = [
            engine,
            str(coverage),
            str(single),
            str(byte),
            str(longer),
            *map(str, counts),
            f"{seconds:.1f}",
        ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
