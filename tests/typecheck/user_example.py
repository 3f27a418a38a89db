"""A user's script that touches every name ``import tokenloom`` offers, with the types a user would write.

Checked twice: ``mypy`` type-checks it (``[tool.mypy] files`` lists this folder, so every annotation below
must agree with what the library declares), and ``tests/test_public_api.py`` runs it, so every name also
does what the annotation says. It builds its own tiny data in a temporary folder and runs in seconds.
"""

from __future__ import annotations

import io
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas
import torch
from PIL import Image

import tokenloom


def corpus(folder: Path) -> Path:
    """Three small parallel language files, ``<lang>_<Script>.txt``."""
    lines = {
        "eng_Latn": ["The weaver sat at the window.", "Threads cross to make cloth.", "Count the tokens."],
        "deu_Latn": ["Der Weber saß am Fenster.", "Fäden kreuzen sich zu Stoff.", "Zähle die Tokens."],
        "rus_Cyrl": ["Ткач сидел у окна.", "Нити пересекаются в ткань.", "Сосчитай токены."],
    }
    folder.mkdir()
    for name, texts in lines.items():
        (folder / f"{name}.txt").write_text("\n".join(texts * 20) + "\n", encoding="utf-8")
    return folder


def png_bytes(width: int, height: int, shade: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (shade, 255 - shade, 128)).save(out, format="PNG")
    return out.getvalue()


def text_side(work: Path) -> tokenloom.Tokenizer:
    errors: tuple[type[Exception], ...] = (
        tokenloom.ConfigError, tokenloom.CorpusError, tokenloom.TokenizerError, tokenloom.ImageDecodeError,
    )  # fmt: skip
    assert all(issubclass(e, tokenloom.TokenloomError) for e in errors)
    texts = corpus(work / "corpus")
    config = tokenloom.TrainerConfig(algorithm="bpe", vocab_size=400, heldout=0.0)
    tok: tokenloom.Tokenizer = tokenloom.train_tokenizer(texts, config=config, quiet=True)
    ids: list[int] = tok.encode("Der Weber saß am Fenster.")
    assert tok.decode(ids) == "Der Weber saß am Fenster."
    saved: Path = tok.save(work / "tok")
    again: tokenloom.Tokenizer = tokenloom.load_tokenizer(saved)
    assert again.encode("Ткач") == tok.encode("Ткач")
    utf8: tokenloom.Tokenizer = tokenloom.as_tokenizer(lambda t: list(t.encode()), name="utf8")  # text -> ids
    assert utf8.engine == "callable" and utf8.encode("Ткач") == list("Ткач".encode())

    parts: tokenloom.Corpus = tokenloom.load_corpus(texts)
    assert sorted(p.slice for p in parts) == ["deu_Latn", "eng_Latn", "rus_Cyrl"]
    report_config = tokenloom.ReportConfig(n_boot=50)
    df: pandas.DataFrame = tokenloom.fertility_report({"bpe": tok}, parts, config=report_config)
    eng = df[(df["slice_kind"] == "language") & (df["slice"] == "eng_Latn")]
    assert float(eng["premium_mean"].iloc[0]) == 1.0  # the pivot against itself
    written: dict[str, Path] = tokenloom.write_report(df, work / "report")
    assert written["csv"].exists()
    by_source: pandas.DataFrame = tokenloom.fertility_by_source(tok, [("eng_Latn.txt", "Count the tokens.")])
    assert set(by_source["slice_kind"]) >= {"all", "script"}
    return tok


def costs_side() -> None:
    vit = tokenloom.EncoderConfig.preset("vit-b16")
    flops: tokenloom.EncoderFlops = tokenloom.encoder_flops(vit, 1, 197)
    assert flops.total == flops.linear + flops.attention
    params: int = tokenloom.encoder_params(vit)
    assert params == sum(tokenloom.encoder_param_breakdown(vit).values()) == 85_056_000
    assert tokenloom.kv_cache_bytes(32, 1, 4096, 8, 128, "bf16") == 512 * 2**20  # the worked example
    assert tokenloom.encoder_kv_cache_bytes(vit, 1, 4096, "bf16") == tokenloom.kv_cache_bytes(
        12, 1, 4096, 12, 64, "bf16"
    )
    assert tokenloom.score_bytes(1, 1, 4096, 4096, 2) == 32 * 2**20
    assert tokenloom.weight_bytes(70e9, "bf16") == 140 * 10**9
    assert tokenloom.tensor_bytes(10, "fp32") == 40 and tokenloom.bytes_per_element("bf16") == 2
    assert tokenloom.vit_tokens(224, 16) == 197 and tokenloom.vit_patch_dim(16) == 768
    assert tokenloom.attention_flops(1, 1, 4, 4, 8) == 4 * 4 * 4 * 8
    assert tokenloom.linear_flops(4, 8, 16) == 2 * 4 * 8 * 16
    assert tokenloom.projection_flops(1, 4, 8, 2, 4) == tokenloom.linear_flops(
        4, 8, 4 * 2 * 4
    )  # q, k, v, out
    assert tokenloom.mlp_flops(1, 4, 8, 32) == 2 * tokenloom.linear_flops(4, 8, 32)
    size: str = tokenloom.format_bytes(2**29)
    count: str = tokenloom.format_count(274.9e9)
    assert (size, count) == ("512.0 MiB", "274.9 GFLOP")


def model_side(tok: tokenloom.Tokenizer) -> None:
    torch.manual_seed(0)
    config = tokenloom.EncoderConfig(width=32, depth=1, heads=2)
    encoder = tokenloom.Encoder(config).eval()
    text = tokenloom.TextEmbed(tok.vocab_size, config.width, max_len=64)
    x, mask = text(torch.tensor([tok.encode("Count the tokens.")]))
    out: torch.Tensor = encoder(x, mask)
    assert out.shape == (1, x.shape[1], 32)
    q = k = v = torch.randn(1, 2, 5, 16)
    assert torch.allclose(tokenloom.attention(q, k, v, impl="reference"), tokenloom.attention(q, k, v))
    images = torch.randn(2, 3, 32, 32)
    patches: torch.Tensor = tokenloom.patchify(images, 16)  # [2, 4, 768]
    assert torch.equal(tokenloom.unpatchify(patches, 16, (32, 32)), images)
    embed = tokenloom.ImageEmbed(image_size=32, patch_size=16, width=32)
    assert encoder(embed(images)).shape == (2, 1 + 4, 32)
    proj = tokenloom.PatchEmbed(16, 3, 32)
    assert proj(images).shape == (2, 4, 32)

    import timm  # a dev extra

    vit = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=3, img_size=32).eval()
    ours = tokenloom.from_timm(vit).eval()
    with torch.no_grad():
        assert torch.allclose(ours(images), vit(images), atol=1e-4)


def language_model_side(tok: tokenloom.Tokenizer) -> None:
    torch.manual_seed(0)
    blocks = tokenloom.EncoderConfig(width=32, depth=1, heads=2, causal=True)
    config = tokenloom.LanguageModelConfig(vocab_size=tok.vocab_size, encoder=blocks, context=32)
    model = tokenloom.LanguageModel(config)
    assert sum(p.numel() for p in model.parameters()) == tokenloom.lm_params(config)
    flops: tokenloom.LanguageModelFlops = tokenloom.lm_flops(config, 1, 32)
    assert flops.training == 3 * flops.total
    prompt = torch.tensor(tok.encode("Count the tokens."))
    out: torch.Tensor = model.generate(prompt, 3, temperature=0)
    assert out.shape == (len(prompt) + 3,)
    texts = ["Count the tokens.", "Count them again."]
    score = tokenloom.ScoreConfig(context=32, bos_id=0)
    rows = tokenloom.evaluate_bpb(model, tok, texts, ["eng", "eng"], score, n_boot=20)
    assert rows[-1].bytes == sum(len(t.encode()) for t in texts) and rows[-1].bpb > 0
    baseline: float = tokenloom.byte_entropy(texts)
    assert 0 < baseline < 8


def image_side(work: Path) -> None:
    src = work / "images"
    for label, shade in (("cats", 10), ("dogs", 200)):
        (src / label).mkdir(parents=True)
        for i in range(2):
            (src / label / f"{i}.png").write_bytes(png_bytes(40 + i, 36, shade))
    pixels: torch.Tensor = tokenloom.load_image(src / "cats" / "0.png", config=tokenloom.DecodeConfig())
    assert pixels.shape == (3, 36, 40) and pixels.dtype == torch.uint8
    tconf = tokenloom.TransformConfig(size=32)
    assert tokenloom.eval_transform(tconf)(pixels).shape == (3, 32, 32)
    assert tokenloom.train_transform(tconf)(pixels).shape == (3, 32, 32)
    dataset = tokenloom.ImageDataset.from_folder(src, transform=tokenloom.eval_transform(tconf))
    assert len(dataset) == 4
    loader = tokenloom.build_loader(dataset, batch_size=2)
    batches: Iterator[tuple[torch.Tensor, torch.Tensor]] = iter(loader)
    first_images, first_labels = next(batches)
    assert first_images.shape == (2, 3, 32, 32) and first_labels.shape == (2,)
    summary = tokenloom.preprocess_images(
        src, work / "shards", config=tokenloom.PreprocessConfig(size=32, store="eval"), quiet=True
    )
    assert (summary.ok, summary.rejected) == (4, 0)
    shards = tokenloom.ShardDataset(work / "shards")
    assert len(shards) == 4
    tars: list[Path] = tokenloom.export_webdataset(work / "shards", work / "wds")
    assert len(tars) == 1
    small = tokenloom.EncoderConfig(width=32, depth=1, heads=2)
    memory: tokenloom.TrainingMemory = tokenloom.training_memory(small, 2, 5, "fp32")
    assert memory.total > 0
    run = tokenloom.TrainConfig(
        encoder=small, image_size=32, patch_size=16, max_steps=1, batch_size=2, workers=0
    )
    result = tokenloom.train_vit(work / "shards", work / "run", config=run, quiet=True)
    assert result.steps == 1


def evaluate_side(work: Path) -> None:
    data = pandas.DataFrame({
        "text": ["I will kill you", "nice day", "मैं तुम्हें मार दूँगा", "main tumhe maar dunga"] * 10,
        "lang": ["eng", "eng", "hin", "hin_Latn"] * 10,
        "y": [1, 0, 1, 1] * 10,
        "a": [1, 0, 1, 0] * 10,
        "b": [1, 1, 1, 1] * 10,
        "s": [0.9, 0.2, 0.8, 0.4] * 10,
        "reviewed": [True, False, True, True] * 10,
        "pi": [0.9, 0.3, 0.9, 0.9] * 10,
    })  # fmt: skip
    config = tokenloom.EvalConfig(n_boot=20, min_support=5)
    ev: tokenloom.Evaluation = tokenloom.evaluate_slices(
        data, text="text", label="y", predictions={"a": "a", "b": "b"}, scores={"a": "s"}, lang="lang",
        config=config,
    )  # fmt: skip
    frame: pandas.DataFrame = ev.metrics
    assert {"f1", "f1_lo", "flag"} <= set(frame.columns) and len(ev.paired) > 0
    stage: tokenloom.ScoreStage | tokenloom.KeywordStage = tokenloom.ScoreStage("s", low=0.3, high=0.7)
    costs = (tokenloom.StageCost(cost=0.1), tokenloom.StageCost(cost=1.0))
    cascade = tokenloom.evaluate_cascade(data, label="y", first=stage, second="b", costs=costs, config=config)
    keywords = tokenloom.KeywordStage(("kill", "मार"))
    assert (
        tokenloom.evaluate_cascade(data, label="y", first=keywords, second="b", text="text").keywords
        is not None
    )
    review = tokenloom.selection_estimates(
        data.assign(y=data["y"].where(data["reviewed"])), label="y", prediction="a", reviewed="reviewed",
        propensity="pi",
    )  # fmt: skip
    flips = tokenloom.flip_rates(
        data, lambda texts: [int("kill" in t) for t in texts], text="text", config=config
    )
    paths: dict[str, Path] = tokenloom.write_evaluation(
        ev, work / "evaluation", cascade=cascade, selection=review, flips=flips
    )
    assert paths["html"].is_file()


def token_side(work: Path, tok: tokenloom.Tokenizer) -> None:
    config = tokenloom.TokenizeConfig(eos=None, max_tokens_per_shard=500, validation=0.1)
    written: tokenloom.TokenizeSummary = tokenloom.tokenize_corpus(
        work / "corpus", tok, work / "tokens", config=config
    )
    assert written.documents + written.rejected == written.input_documents == 180
    data = tokenloom.TokenShardDataset(work / "tokens", seq_len=16, packing="documents", seed=1)
    batch = next(data.batches(4))
    assert batch["input_ids"].shape == batch["segment_ids"].shape == batch["positions"].shape == (4, 16)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tok = text_side(work)
        token_side(work, tok)
        costs_side()
        model_side(tok)
        language_model_side(tok)
        image_side(work)
        evaluate_side(work)
    print("every public name used")
    return 0


if __name__ == "__main__":
    sys.exit(main())
