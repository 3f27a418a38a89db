"""Benchmark: the fertility report over tokenizers of every kind against each engine's own batch encoding.

Run alone (ratios only mean something when nothing else runs)::

    python scripts/bench_foreign.py --languages 20 --markdown

It first trains (not timed), on the FLORES-200 ``dev`` split of the chosen languages: tokenloom's byte-level BPE
(``tokenizers`` engine, cl100k pattern, 8k) saved with its tiktoken ranks file, and a sentencepiece unigram
(8k); the transformers tokenizers wrap them (fast: the ``tokenizers`` pipeline; slow:
``BertGenerationTokenizer`` over the sentencepiece model). Then, per kind, in this process: the engine's own
batch encoding of every ``devtest`` text (one call per language file: ``encode_ordinary_batch``,
``encode_batch_fast``, ``SentencePieceProcessor.encode(list)``, ``tok(list)``, a loop for a function) and
``fertility_report`` with that tokenizer alone (no transliterated slices, default bootstrap), best of
``--repeat``. The report's token total is checked against the engine's before any time is printed.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "flores200"


def _languages(flores: Path, count: int) -> list[str]:
    names = sorted(p.stem for p in (flores / "devtest").glob("*.txt") if (flores / "dev" / p.name).is_file())
    step = max(1, len(names) // count)
    picked = names[::step][:count]
    return picked if "eng_Latn" in picked else ["eng_Latn", *picked[: count - 1]]


def _build(flores: Path, langs: list[str], tmp: Path) -> dict[str, tuple[Any, Callable[[list[str]], int]]]:
    """Kind -> (what the report is given, the engine's own batch encoding: texts -> token total)."""
    import sentencepiece as spm
    import tiktoken
    from transformers import AutoTokenizer, BertGenerationTokenizer, PreTrainedTokenizerFast

    from tokenloom import train_tokenizer
    from tokenloom.text import tiktoken_encoding_kwargs
    from tokenloom.text.adapt import load_tokenizer_spec

    train = [t for lang in langs for t in (flores / "dev" / f"{lang}.txt").read_text("utf-8").splitlines()]
    trained = train_tokenizer(
        iter(train), algorithm="bytelevel-bpe", pretokenizer="cl100k", vocab_size=8000, special_tokens=(),
        heldout=0, quiet=True,
    )  # fmt: skip
    trained.save(tmp / "bl", formats=("tokenizer.json", "tiktoken"))
    hf = trained.hf_export()
    enc = tiktoken.Encoding(**tiktoken_encoding_kwargs(tmp / "bl"))
    ranks = tmp / "bl" / "tokenizer.tiktoken"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(train), model_prefix=str(tmp / "sp"), vocab_size=8000, model_type="unigram",
        byte_fallback=True, character_coverage=0.995, minloglevel=2,
    )  # fmt: skip
    sp = spm.SentencePieceProcessor(model_file=str(tmp / "sp.model"))
    PreTrainedTokenizerFast(tokenizer_object=hf).save_pretrained(tmp / "fast")
    BertGenerationTokenizer(vocab_file=str(tmp / "sp.model")).save_pretrained(tmp / "slow")
    fast = AutoTokenizer.from_pretrained(tmp / "fast", local_files_only=True)
    slow = AutoTokenizer.from_pretrained(tmp / "slow", local_files_only=True)

    def total(lists: Any) -> int:
        return sum(map(len, lists))

    from_file = load_tokenizer_spec(f"tiktoken:{ranks}", pattern="cl100k")
    return {
        "tiktoken Encoding": (enc, lambda ts: total(enc.encode_ordinary_batch(ts))),
        "tiktoken:FILE": (from_file, lambda ts: total(enc.encode_ordinary_batch(ts))),
        "tokenizers.Tokenizer": (hf, lambda ts: total(e.ids for e in hf.encode_batch_fast(ts, add_special_tokens=False))),
        "SentencePieceProcessor": (sp, lambda ts: total(sp.encode(ts))),
        "transformers (fast)": (fast, lambda ts: total(fast(ts, add_special_tokens=False)["input_ids"])),
        "transformers (slow)": (slow, lambda ts: total(slow(ts, add_special_tokens=False)["input_ids"])),
        "function": (enc.encode_ordinary, lambda ts: total(map(enc.encode_ordinary, ts))),
    }  # fmt: skip


def _best(func: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = func()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flores", type=Path, default=DEFAULT)
    parser.add_argument("--languages", type=int, default=20, help="FLORES languages (eng_Latn always in)")
    parser.add_argument("--repeat", type=int, default=2, help="best of this many runs")
    parser.add_argument("--skip-slow", action="store_true", help="leave out the slow transformers tokenizer")
    parser.add_argument(
        "--markdown", action="store_true", help="a Markdown table under a machine + date line"
    )
    args = parser.parse_args()

    from tokenloom import fertility_report

    langs = _languages(args.flores, args.languages)
    files = {
        lang: (args.flores / "devtest" / f"{lang}.txt").read_text("utf-8").splitlines() for lang in langs
    }
    rows = []
    with tempfile.TemporaryDirectory(prefix="tokenloom-bench-foreign-") as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for lang, texts in files.items():
            (corpus / f"{lang}.txt").write_text("\n".join(texts) + "\n", "utf-8")
        kinds = _build(args.flores, langs, Path(tmp))
        for kind, (tok, raw) in kinds.items():
            if args.skip_slow and "slow" in kind:
                continue
            raw_s, raw_total = _best(lambda raw=raw: sum(raw(ts) for ts in files.values()), args.repeat)
            rep_s, df = _best(lambda tok=tok: fertility_report([tok], corpus, translit=False), args.repeat)
            tokens = int(df[df["slice_kind"] == "all"]["tokens"].iloc[0])
            assert tokens == raw_total, (kind, tokens, raw_total)  # the oracle, before any time is shown
            rows.append((kind, raw_total, raw_s, rep_s, rep_s / raw_s))
    texts = sum(map(len, files.values()))
    header = ("kind", "tokens", "engine batch s", "report s", "report / engine")
    lines = [f"{k} | {t:,} | {a:.2f} | {b:.2f} | {r:.1f}×" for k, t, a, b, r in rows]
    if args.markdown:
        print(f"{platform.node()} ({platform.machine()}, {platform.python_version()}), {datetime.date.today()}: "
              f"{len(langs)} FLORES devtest languages, {texts:,} texts, best of {args.repeat}\n")  # fmt: skip
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        print("\n".join(f"| {line} |" for line in lines))
    else:
        print(" | ".join(header))
        print("\n".join(lines))


if __name__ == "__main__":
    main()
