"""``tokenloom costs``: the CLI prints tables per component, across N, per language."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from tokenloom import cli, costs
from tokenloom.costs import languages as cost_languages
from tokenloom.costs import tables as cost_tables
from tokenloom.encoder.config import EncoderConfig
from tokenloom.errors import ConfigError, CorpusError

KV_ARGS = [
    "costs",
    "kv",
    "--layers",
    "32",
    "--batch",
    "1",
    "--seq-len",
    "4096",
    "--kv-heads",
    "8",
    "--head-dim",
    "128",
]


def _out(capsys: pytest.CaptureFixture[str], argv: list[str], status: int = 0) -> str:
    assert cli.main(argv) == status
    captured = capsys.readouterr()
    return captured.out if status == 0 else captured.err


def test_kv_prints_the_issue_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert _out(capsys, [*KV_ARGS, "--dtype", "bf16"]) == "512.0 MiB\n"
    assert _out(capsys, [*KV_ARGS, "--dtype", "bf16", "--bytes"]) == f"{512 * 2**20}\n"
    assert _out(capsys, [*KV_ARGS[:-3], "32", "--head-dim", "128"]) == "2.0 GiB\n"  # default dtype bf16
    assert _out(capsys, [*KV_ARGS, "--dtype", "bf16", "--units", "decimal"]) == "536.9 MB\n"
    doubled = [
        "costs",
        "kv",
        "--layers",
        "32",
        "--batch",
        "2",
        "--seq-len",
        "8k",
        "--kv-heads",
        "8",
        "--head-dim",
        "128",
    ]
    assert _out(capsys, doubled) == "2.0 GiB\n"


def test_kv_bad_dtype_is_one_line_listing_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    err = _out(capsys, [*KV_ARGS, "--dtype", "bf17"], status=2)
    assert err.startswith("tokenloom: error: unknown dtype 'bf17'; choose one of fp64, fp32, bf16, fp16, fp8")
    assert err.count("\n") == 1


def test_bad_length_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["costs", "kv", "--layers", "1", "--seq-len", "4q", "--kv-heads", "1", "--head-dim", "1"])
    assert exc.value.code == 2
    assert "invalid length '4q'" in capsys.readouterr().err


def test_attention_prints_score_memory_and_flops(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(capsys, ["costs", "attention", "--heads", "32", "--seq-len", "4096", "--dtype", "bf16"])
    assert "score matrix S = QKᵀ: 1.0 GiB" in out
    flops = costs.format_count(costs.attention_flops(1, 32, 4096, 4096, 128))
    assert flops == "274.9 GFLOP" and f"attention FLOPs QKᵀ + PV: {flops}" in out
    one = _out(
        capsys, ["costs", "attention", "--heads", "1", "--seq-len", "4k", "--dtype", "fp16", "--bytes"]
    )
    assert f"score matrix S = QKᵀ: {32 * 2**20}  " in one
    causal = _out(capsys, ["costs", "attention", "--heads", "32", "--seq-len", "4096", "--causal"])
    assert "137.5 GFLOP" in causal  # 4·B·H·D·N(N+1)/2: half of 274.9 plus the diagonal
    assert "causal: 8,390,656 allowed (query, key) pairs of 16,777,216 = N(N+1)/2" in causal
    pattern = _out(
        capsys, ["costs", "attention", "--heads", "32", "--seq-len", "4096", "--pattern", "causal"]
    )
    assert "8,390,656 of 16,777,216" in pattern and "137.5 GFLOP" in pattern  # one definition
    ragged = _out(
        capsys, ["costs", "attention", "--heads", "1", "--seq-len", "8", "--kv-len", "4", "--causal"]
    )
    assert "causal: 10 allowed (query, key) pairs of 32 = M(M+1)/2" in ragged


def test_weights_prints_decimal_and_binary(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        _out(capsys, ["costs", "weights", "--params", "70e9", "--dtype", "bf16"]) == "140.0 GB (130.4 GiB)\n"
    )
    assert (
        _out(capsys, ["costs", "weights", "--params", "70e9", "--dtype", "int4", "--bytes"])
        == "35000000000\n"
    )


def test_encoder_vit_b16_table(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(capsys, ["costs", "encoder", "--preset", "vit-b16"])
    lines = out.splitlines()
    assert lines[0].startswith("vit-b16: d=768 L=12 H=12 Hkv=12 D=64 f=3072")
    assert "sequence N=197 (224×224 image, patch 16 + class token)" in lines[1]
    rows = {cells[0]: cells for cells in (re.split(r"\s{2,}", line.strip()) for line in lines)}
    assert rows["total"][1] == "85,056,000"
    # component, params, FLOPs, FLOPs ∝, memory/layer, memory ∝, tensor
    assert rows["scores S = QKᵀ"][3:] == ["N²", "1.8 MiB", "N²", "B·H·N·N"]
    assert rows["P V"][3:] == ["N²", "591.0 KiB", "N", "B·N·H·D"]  # N² work, N-sized output
    assert rows["MLP (gelu)"][3:] == ["N", "2.3 MiB", "N", "B·N·f"]
    assert rows["q, k, v projections"][1] == "21,261,312" and rows["MLP (gelu)"][1] == "56,669,184"
    fl = costs.encoder_flops(EncoderConfig(), 1, 197)
    assert f"training step ≈ 3× forward = {costs.format_count(3 * fl.total)}" in out
    assert "weights at fp32: 340.2 MB (324.5 MiB)" in out
    score = costs.format_bytes(costs.score_bytes(1, 12, 197, 197, "fp32"))
    assert score == rows["scores S = QKᵀ"][4]


def test_encoder_custom_shape_and_seq_len(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["costs", "encoder", "--width", "512", "--depth", "6", "--heads", "8", "--kv-heads", "2",
            "--mlp", "swiglu", "--norm", "rmsnorm", "--no-bias", "--seq-len", "1k"]  # fmt: skip
    out = _out(capsys, argv)
    cfg = EncoderConfig(width=512, depth=6, heads=8, kv_heads=2, mlp="swiglu", norm="rmsnorm",
                        qkv_bias=False, proj_bias=False)  # fmt: skip
    assert out.startswith("custom: d=512 L=6 H=8 Hkv=2 D=64 f=1408 mlp=swiglu norm=rmsnorm")
    assert f"{costs.encoder_params(cfg):,}" in out and "sequence N=1024," in out
    vit384 = _out(capsys, ["costs", "encoder", "--preset", "vit-b16", "--image-size", "384"])
    assert "sequence N=577 (384×384 image" in vit384


def test_encoder_incomplete_shape_names_missing_flags(capsys: pytest.CaptureFixture[str]) -> None:
    err = _out(capsys, ["costs", "encoder", "--width", "512"], status=2)
    assert (
        err.strip()
        == "tokenloom: error: give --depth, --heads too (or --preset NAME to start from a preset's shape)"
    )
    err = _out(capsys, ["costs", "encoder", "--preset", "vit-b16", "--heads", "7"], status=2)
    assert "not divisible by heads=7" in err


def test_sweep_table_and_chart(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    png = tmp_path / "sweep.png"
    out = _out(capsys, ["costs", "sweep", "--preset", "vit-b16", "--seq-len", "1k,2k,4k", "--png", str(png)])
    rows = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    assert [r[0] for r in rows] == ["1,024", "2,048", "4,096"]
    assert [" ".join(r[-4:-2]) for r in rows] == [
        "24.0 MiB",
        "96.0 MiB",
        "384.0 MiB",
    ]  # scores ×4 per doubling
    assert [" ".join(r[-2:]) for r in rows] == ["36.0 MiB", "72.0 MiB", "144.0 MiB"]  # KV ×2 per doubling
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.png"]  # atomic: no temp left


def test_sweep_over_image_and_patch_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(capsys, ["costs", "sweep", "--image-sizes", "224,448", "--patch-sizes", "16,8"])
    rows = {cells[0]: cells for cells in (re.split(r"\s{2,}", line.strip()) for line in out.splitlines())}
    assert "image/patch → N" in rows
    assert [k for k in rows if "px/" in k] == [
        "224px/16 → 197",
        "224px/8 → 785",
        "448px/16 → 785",
        "448px/8 → 3,137",
    ]
    assert rows["224px/8 → 785"][1:] == rows["448px/16 → 785"][1:]  # same N, same costs
    no_cls = _out(capsys, ["costs", "sweep", "--patch-sizes", "14", "--pad", "--no-class-token"])
    assert "224px/14 → 256" in no_cls  # 224/14 = 16 exactly; no class token
    err = _out(capsys, ["costs", "encoder", "--image-size", "230"], status=2)
    assert "230x230 is not a multiple of patch_size=16" in err and "--pad" in err
    padded = _out(capsys, ["costs", "encoder", "--image-size", "230", "--pad"])
    assert "sequence N=226 (230×230 image, patch 16 + class token)" in padded  # ceil(230/16)² + 1 = 15² + 1


def test_sweep_rows_attention_share_grows() -> None:
    rows = cost_tables.sweep_rows(EncoderConfig(), [256, 1024, 4096, 16384])
    shares = [r.attention_share for r in rows]
    assert shares == sorted(shares) and shares[0] < 0.1 < 0.5 < shares[-1]
    assert all(r.total_flops == r.linear_flops + r.attention_flops for r in rows)


# --------------------------------------------------------------------------- per language

REPORT_COLUMNS = [
    "tokenizer", "slice_kind", "slice", "lang", "script", "texts", "tokens", "words", "chars", "bytes", "fertility",
    "fertility_lo", "fertility_hi", "continued_words", "chars_per_token", "bytes_per_token", "byte_fallback_rate",
    "unk_rate", "roundtrip_exact_rate", "normalization_changed_rate", "premium_mean", "premium_median",
    "premium_lo", "premium_hi", "rel_kv_bytes", "rel_attention_work", "renyi_efficiency", "segmenter",
]  # fmt: skip


def _report(tmp_path: Path) -> Path:
    """A small report with the columns `tokenloom fertility` writes: two tokenizers, 'all' and 'script' rows."""
    rows = []
    table = {  # slice: (tokens, premium_mean, premium_lo, premium_hi)
        "eng_Latn": (1000, 1.0, 1.0, 1.0),
        "hin_Deva": (2000, 2.0, 1.8, 2.2),
        "zho_Hans": (1250, 1.25, 1.2, 1.3),
        "tha_Thai": (900, math.nan, math.nan, math.nan),  # no pivot-aligned text
    }
    for tok, scale in (("bpe-8k", 1.0), ("uni-8k", 1.5)):
        rows.append(
            {"tokenizer": tok, "slice_kind": "all", "slice": "all", "tokens": 5000, "premium_mean": math.nan}
        )
        rows.append(
            {"tokenizer": tok, "slice_kind": "script", "slice": "Deva", "tokens": 2000, "premium_mean": 9.0}
        )
        for name, (tokens, p, lo, hi) in table.items():
            p = p if name == "eng_Latn" else p * scale
            rows.append({"tokenizer": tok, "slice_kind": "language", "slice": name, "lang": name[:3],
                         "script": name[4:], "tokens": tokens, "premium_mean": p, "premium_median": p,
                         "premium_lo": lo, "premium_hi": hi})  # fmt: skip
    path = tmp_path / "report.csv"
    pd.DataFrame(rows).reindex(columns=REPORT_COLUMNS).to_csv(path, index=False)
    return path


def test_language_costs_scale_with_premium(tmp_path: Path) -> None:
    cfg = EncoderConfig.preset("vit-b16")
    report = cost_languages.load_fertility_report(_report(tmp_path))
    frame = cost_languages.language_costs(report, cfg, pivot="eng_Latn", context=1000, dtype="bf16")
    assert list(frame.columns) == list(cost_languages.LANGUAGE_COLUMNS)
    assert len(frame) == 8  # 4 languages x 2 tokenizers; 'all' and 'script' rows skipped
    bpe = frame[frame["tokenizer"] == "bpe-8k"].set_index("lang")
    assert list(bpe.index) == ["eng_Latn", "zho_Hans", "hin_Deva", "tha_Thai"]  # sorted by premium, NaN last
    hin = bpe.loc["hin_Deva"]
    assert hin["seq_len"] == 2000 and hin["content_in_context"] == 0.5
    assert hin["attention_flops_ratio"] == 4.0 and hin["kv_cache_ratio"] == 2.0
    assert hin["kv_cache_bytes"] == costs.encoder_kv_cache_bytes(cfg, 1, 2000, "bf16")
    assert hin["encoder_flops"] == costs.encoder_flops(cfg, 1, 2000).total
    ratio = costs.encoder_flops(cfg, 1, 2000).total / costs.encoder_flops(cfg, 1, 1000).total
    assert hin["encoder_flops_ratio"] == pytest.approx(ratio) and 2.0 < ratio < 4.0  # between ∝p and ∝p²
    assert (hin["premium_lo"], hin["premium_hi"]) == (1.8, 2.2)
    assert bpe.loc["eng_Latn", "encoder_flops_ratio"] == 1.0
    tha = bpe.loc["tha_Thai"]
    assert math.isnan(tha["premium"]) and pd.isna(tha["seq_len"]) and pd.isna(tha["encoder_flops"])
    uni = frame[frame["tokenizer"] == "uni-8k"].set_index("lang")
    assert uni.loc["hin_Deva", "seq_len"] == 3000 and uni.loc["hin_Deva", "attention_flops_ratio"] == 9.0


def test_language_costs_against_another_pivot(tmp_path: Path) -> None:
    report = cost_languages.load_fertility_report(_report(tmp_path))
    frame = cost_languages.language_costs(report, EncoderConfig(), pivot="hin_Deva", context=2000)
    bpe = frame[frame["tokenizer"] == "bpe-8k"].set_index("lang")
    assert bpe.loc["eng_Latn", "premium"] == 0.5 and bpe.loc["eng_Latn", "seq_len"] == 1000
    assert bpe.loc["hin_Deva", "premium"] == 1.0
    assert frame["premium_lo"].isna().all()  # intervals are not rescaled to another pivot
    with pytest.raises(ConfigError, match=r"pivot 'xxx_Latn' is not a language.*among \['eng_Latn'"):
        cost_languages.language_costs(report, EncoderConfig(), pivot="xxx_Latn")
    with pytest.raises(ConfigError, match="pivot 'tha_Thai' has no premium_mean"):
        cost_languages.language_costs(report, EncoderConfig(), pivot="tha_Thai")


def test_bad_reports_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("tokenizer,slice\nx,eng_Latn\n")
    with pytest.raises(CorpusError, match=r"bad.csv' lacks the columns \['slice_kind', 'tokens'"):
        cost_languages.load_fertility_report(bad)
    with pytest.raises(CorpusError, match=r"missing\.csv' does not exist"):
        cost_languages.load_fertility_report(tmp_path / "missing.csv")
    with pytest.raises(CorpusError, match="cannot read fertility report"):
        cost_languages.load_fertility_report(tmp_path)  # a folder
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(CorpusError, match=r"empty\.csv' is not a readable CSV"):
        cost_languages.load_fertility_report(tmp_path / "empty.csv")


def test_languages_cli_table_csv_and_chart(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report = _report(tmp_path)
    png, csv = tmp_path / "langs.png", tmp_path / "langs.csv"
    argv = ["costs", "languages", str(report), "--preset", "vit-b16", "--context", "1000",
            "--png", str(png), "--csv", str(csv)]  # fmt: skip
    out = _out(capsys, argv)
    assert "same content as 1,000 eng_Latn tokens" in out
    assert "tokenizer bpe-8k" in out and "tokenizer uni-8k" in out
    hin = next(line for line in out.splitlines() if line.startswith("hin_Deva"))
    cells = hin.split()
    assert cells[1:5] == ["2.00", "1.80–2.20", "2,000", "50%"] and cells[5] == "4.00"
    assert "\n2 languages without pivot-aligned text (no premium): tha_Thai, tha_Thai\n" in out
    assert png.read_bytes()[:4] == b"\x89PNG"
    written = pd.read_csv(csv)
    assert list(written.columns) == list(cost_languages.LANGUAGE_COLUMNS) and len(written) == 8
    only = _out(capsys, [*argv[:3], "--tokenizer", "uni-8k", "--pivot", "zho_Hans"])
    assert "tokenizer bpe-8k" not in only and "same content as 4,096 zho_Hans tokens" in only
    err = _out(capsys, [*argv[:3], "--tokenizer", "nope"], status=2)
    assert "tokenizer 'nope' is not in" in err and "['bpe-8k', 'uni-8k']" in err
    one = _out(capsys, [*argv[:3], "--tokenizer", "uni-8k"])
    assert "\n1 language without pivot-aligned text (no premium): tha_Thai\n" in one


def test_languages_old_model_preset_flag_still_works_and_warns(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["costs", "languages", str(_report(tmp_path)), "--context", "1000"]
    assert cli.main([*argv, "--preset", "vit-s16"]) == 0
    new = capsys.readouterr()
    assert cli.main([*argv, "--model-preset", "vit-s16"]) == 0
    old = capsys.readouterr()
    assert old.out == new.out and old.out.startswith("vit-s16: d=384")
    assert old.err == "tokenloom: warning: --model-preset is deprecated; use --preset\n" and new.err == ""
    with pytest.raises(SystemExit):
        cli.main(["costs", "languages", "--help"])
    assert "--model-preset" not in capsys.readouterr().out


def test_languages_from_a_real_fertility_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, default_corpus: Path
) -> None:
    """End to end: train a tokenizer, make a fertility report (contract 3), read it back through the CLI."""
    from tokenloom.fertility.report import fertility_report
    from tokenloom.text.train import train_tokenizer

    tok = train_tokenizer(default_corpus, vocab_size=1000, heldout=0.0)
    report = fertility_report({"tiny": tok}, default_corpus, pivot="eng_Latn", translit=False)
    path = tmp_path / "report.csv"
    report.to_csv(path, index=False)
    csv = tmp_path / "costs.csv"
    out = _out(
        capsys,
        ["costs", "languages", str(path), "--preset", "vit-s16", "--context", "2k", "--csv", str(csv)],
    )
    assert "tokenizer tiny" in out
    frame = pd.read_csv(csv).set_index("lang")
    theirs = report[report["slice_kind"] == "language"].set_index("slice")
    assert set(frame.index) == set(theirs.index) == {p.stem for p in default_corpus.glob("*.txt")}
    # the fertility side's relative costs agree with the cost model's: attention ≈ p², KV ∝ p
    joined = frame.join(theirs[["rel_attention_work", "rel_kv_bytes", "premium_mean"]])
    assert joined["premium"].to_numpy() == pytest.approx(joined["premium_mean"].to_numpy())
    assert joined["attention_flops_ratio"].to_numpy() == pytest.approx(
        joined["rel_attention_work"].to_numpy()
    )
    assert joined["kv_cache_ratio"].to_numpy() == pytest.approx(
        joined["rel_kv_bytes"].to_numpy(), abs=1 / 2048
    )
    assert (joined["seq_len"] == (joined["premium"] * 2048).round()).all()


def test_encoder_with_vocabulary(capsys: pytest.CaptureFixture[str]) -> None:
    cfg = EncoderConfig.preset("vit-b16")
    rows = cost_tables.vocab_cost_rows(cfg, batch=2, seq_len=197, vocab_size=32_000, tied=False, dtype="bf16")
    embedding, output = rows
    assert embedding.params == output.params == 32_000 * 768 and embedding.flops is None
    assert output.flops == 2 * 2 * 197 * 768 * 32_000  # one [B·N, d] @ [d, V] product
    assert output.memory == 2 * 2 * 197 * 32_000  # logits [B, N, V] at bf16
    assert cli.main(["costs", "encoder", "--preset", "vit-b16", "--vocab-size", "32000"]) == 0
    out = capsys.readouterr().out
    assert "109,632,000 parameters in all" in out  # 85,056,000 + 32,000 · 768, tied
    total = costs.encoder_flops(cfg, 1, 197).total + 2 * 197 * 768 * 32_000
    assert f"total                   109,632,000  {costs.format_count(total):>17}" in out
    assert cli.main(["costs", "encoder", "--preset", "vit-b16", "--vocab-size", "32000", "--untied"]) == 0
    assert "134,208,000 parameters in all" in capsys.readouterr().out
    assert cli.main(["costs", "encoder", "--untied"]) == 2
    assert "--untied describes the output layer" in capsys.readouterr().err
