"""``tokenloom demo``: the main job on the embedded default corpus, start to finish, in seconds.

1. train a byte-fallback BPE tokenizer on the parallel corpus shipped in the package (``corpora/default``:
   the same sentences in 30+ languages and 15+ scripts);
2. measure fertility and the token premium of every language against English (report.csv/.md/.html), and
   the fertility of the code-mixed, romanized and source-code texts of ``corpora/slices``;
3. turn the premiums into costs for a ViT-B/16-sized encoder at a 4k context;
4. run one tokenized text batch and one image (made here, not downloaded) through the same small encoder.
Everything is written under ``--out`` (its ``tokenizer/`` and ``report/`` are replaced on each run, so the
Quickstart command can be repeated); nothing is downloaded.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from tokenloom._corpora import default_corpus, slices_corpus

NAME = "demo"
HELP = "run the main job on the embedded default corpus and say what it did"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("tokenloom-demo"),
        help="folder for the outputs; its tokenizer/ and report/ are replaced (default: tokenloom-demo)",
    )
    parser.add_argument(
        "--vocab-size",
        type=int,
        default=4000,
        help="tokenizer vocabulary; 18 scripts need a few thousand pieces (default: 4000)",
    )


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    tok = _train(args, out)
    report = _report(tok, out, quiet=args.quiet)
    _slices(tok, quiet=args.quiet)
    _costs(report)
    _encode(tok)
    print(
        f"\ndone: outputs in {out}/ (tokenizer/, report/). Next: `tokenloom train --help`, `tokenloom fertility --help`."
    )
    return 0


def _train(args: argparse.Namespace, out: Path):  # -> Tokenizer
    from tokenloom.text.train import train_tokenizer

    corpus = default_corpus()
    files = sorted(corpus.glob("*_*.txt"))
    langs = {p.stem.split("_")[0] for p in files}
    scripts = sorted({p.stem.split("_")[1] for p in files})
    sentences = len(files[0].read_text(encoding="utf-8").splitlines())
    print(f"1. corpus: {len(files)} parallel files in {corpus}")
    print(
        f"   {len(langs)} languages in {len(scripts)} scripts ({', '.join(scripts)}), "
        f"{sentences} parallel sentences each"
    )
    tok = train_tokenizer(corpus, algorithm="bpe", vocab_size=args.vocab_size, heldout=0, quiet=args.quiet)
    tok.save(out / "tokenizer", overwrite=True)
    trained_on = tok.record["corpus"]
    print(
        f"   trained BPE ({tok.engine}, vocab {tok.vocab_size}, byte fallback) on {trained_on['bytes']:,} bytes "
        f"in {tok.record['training']['seconds']:.2f} s -> {out / 'tokenizer'}"
    )
    sample = "Unseen: ⟨Ꭰ, 🧶⟩"
    assert tok.decode(tok.encode(sample)) == sample
    print(f"   {sample!r} -> {len(tok.encode(sample))} tokens -> decoded back exactly (byte fallback)")
    return tok


def _report(tok, out: Path, *, quiet: bool):  # -> pandas.DataFrame
    from tokenloom.fertility.report import fertility_report
    from tokenloom.fertility.writers import report_table, write_report

    df = fertility_report({"bpe": tok}, default_corpus(), pivot="eng_Latn", quiet=quiet)
    written = write_report(df, out / "report", title="tokenloom demo: fertility on the embedded corpus")
    print(
        f"\n2. fertility and premium against eng_Latn ({len(df)} rows -> {', '.join(p.name for p in written.values())})"
    )
    print(textwrap.indent(report_table(df, kinds=("language",)), "   "))
    return df


def _costs(report) -> None:
    from tokenloom._tables import format_table
    from tokenloom.costs.languages import language_costs
    from tokenloom.encoder.config import EncoderConfig

    table = language_costs(report, EncoderConfig.preset("vit-b16"), pivot="eng_Latn", context=4096)
    print("\n3. the same content at a 4k-token English context, ViT-B/16-sized encoder (bf16 KV cache):")
    header = ["language", "premium", "tokens", "attention ×", "KV cache ×", "encoder FLOPs ×"]
    rows = [
        [r.lang, f"{r.premium:.2f}", r.seq_len, f"{r.attention_flops_ratio:.2f}", f"{r.kv_cache_ratio:.2f}",
         f"{r.encoder_flops_ratio:.2f}"]
        for r in table.itertuples()
    ]  # fmt: skip
    print(textwrap.indent(format_table(header, rows), "   "))


def _encode(tok) -> None:
    import io

    import torch
    from PIL import Image

    from tokenloom.encoder.attention import last_impl
    from tokenloom.encoder.config import EncoderConfig
    from tokenloom.encoder.embed import ImageEmbed, TextEmbed
    from tokenloom.encoder.model import Encoder
    from tokenloom.vision.io import load_image
    from tokenloom.vision.transforms import eval_transform

    torch.manual_seed(0)
    config = EncoderConfig(width=96, depth=2, heads=4)
    encoder = Encoder(config).eval()
    texts = [
        line for line in (default_corpus() / "eng_Latn.txt").read_text(encoding="utf-8").splitlines()[:2]
    ]
    texts += [(default_corpus() / "tha_Thai.txt").read_text(encoding="utf-8").splitlines()[0]]
    ids = [tok.encode(t) for t in texts]
    n = max(map(len, ids))
    batch = torch.tensor([seq + [0] * (n - len(seq)) for seq in ids])  # [B, N], right-padded
    text_embed = TextEmbed(tok.vocab_size, config.width, max_len=n)
    ramp = torch.linspace(0, 255, 320).to(torch.uint8)
    pixels = torch.stack(
        [ramp.expand(240, 320), ramp.flip(0).expand(240, 320), ramp[:240, None].expand(240, 320)]
    )
    png = io.BytesIO()
    Image.fromarray(pixels.permute(1, 2, 0).numpy()).save(png, format="PNG")  # a 320×240 test card, in memory
    image = eval_transform()(load_image(png.getvalue()))[None]  # [1, 3, 224, 224]
    image_embed = ImageEmbed(image_size=224, patch_size=16, width=config.width)
    with torch.inference_mode():
        x, mask = text_embed(batch, lengths=[len(s) for s in ids])
        text_out = encoder(x, mask)
        text_impl = last_impl()
        image_out = encoder(image_embed(image))
    print(f"\n4. one Encoder (d={config.width}, L={config.depth}, H={config.heads}) for both modalities:")
    print(
        f"   text  {tuple(batch.shape)} ids ({', '.join(str(len(s)) for s in ids)} tokens) -> {tuple(text_out.shape)}"
        f"  attention: {text_impl}, padding masked"
    )
    print(
        f"   image 320×240 PNG -> 224×224 -> 196 patches of 768 values + class token -> {tuple(image_out.shape)}"
        f"  attention: {last_impl()}"
    )


def _slices(tok, *, quiet: bool) -> None:
    """Fertility of the labelled code-mixed, romanized and source-code texts (not parallel: no premium)."""
    from tokenloom.fertility.report import fertility_report

    df = fertility_report({"bpe": tok}, slices_corpus(), pivot=None, translit=False, quiet=quiet)
    rows = df[df["slice_kind"].isin(["code_mixed", "transliterated", "code"])]
    print(
        f"\n   code-mixed, romanized and source-code texts ({slices_corpus()}; not parallel, so no premium):"
    )
    columns = ("slice_kind", "slice", "texts", "fertility", "chars_per_token", "byte_fallback_rate")
    for kind, label, texts, fert, cpt, fallback in zip(*(rows[c].tolist() for c in columns), strict=True):
        print(
            f"   {kind:<14} {label:<18} {texts:>3} {'text ' if texts == 1 else 'texts'}  fertility {fert:5.2f}  "
            f"chars/token {cpt:4.2f}  byte fallback {100 * fallback:4.1f}%"
        )
