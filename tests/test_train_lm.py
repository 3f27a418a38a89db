"""``train_lm`` / ``tokenloom train-lm``: a language model trained on token shards, resumed exactly, on a budget.

Token shards are built at test time from FLORES devtest lines (three languages) with a small byte-level BPE
trained by the raw ``tokenizers`` engine. Oracles: the per-document byte sidecars and the dataset's own
epoch order (tokens read, steps of a budget), ``torch.equal`` against an uninterrupted run (resume),
the cost model (FLOPs in ``run.json``).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import math
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from tokenloom import TokenShardDataset, cli, tokenize_corpus
from tokenloom.costs.language_model import lm_flops
from tokenloom.encoder.config import EncoderConfig, LanguageModelConfig
from tokenloom.errors import ConfigError
from tokenloom.lm import LmTrainConfig, load_run, train_lm
from torchrun import ddp_env, torchrun  # this folder: torchrun on a free port

LANGS = ("eng_Latn", "fra_Latn", "rus_Cyrl")


def _tokenizer(texts: list[Path], path: Path, vocab: int) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    hf.train([str(p) for p in texts], trainer)
    hf.save(str(path))
    return path


@pytest.fixture(scope="module")
def corpus(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("corpus")
    flores = shared_dir / "corpora" / "flores200" / "devtest"
    for code in LANGS:
        lines = (flores / f"{code}.txt").read_text(encoding="utf-8").splitlines()[:40]
        (folder / f"{code}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _shards(corpus: Path, root: Path, vocab: int) -> Path:
    tok = _tokenizer(sorted(corpus.glob("*.txt")), root / f"bpe{vocab}.json", vocab)
    tokenize_corpus(corpus, tok, root / f"shards{vocab}")
    return root / f"shards{vocab}"


@pytest.fixture(scope="module")
def shards(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _shards(corpus, tmp_path_factory.mktemp("tok"), 400)


@pytest.fixture(scope="module")
def shards_big(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _shards(corpus, tmp_path_factory.mktemp("tok"), 800)


def _config(shards: Path, out: Path, **changes: object) -> LmTrainConfig:
    vocab = json.loads((shards / "manifest.json").read_text())["tokenizer"]["vocab_size"]
    blocks = EncoderConfig(width=32, depth=1, heads=2, causal=True)
    base = LmTrainConfig(
        shards=str(shards), out=str(out), model=LanguageModelConfig(vocab_size=vocab, encoder=blocks, context=32),
        seq_len=32, batch_size=4, budget=4000, lr=1e-2, warmup_steps=2, log_every=1,
    )  # fmt: skip
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return torch.load(run / "checkpoint.pt", map_location="cpu", weights_only=False)["model"]


def _train_rows(run: Path) -> list[dict[str, str]]:
    return [r for r in csv.DictReader((run / "train_log.csv").open()) if r["kind"] == "train"]


def _text_totals(shards: Path) -> tuple[int, int]:
    """(bytes, tokens) of the training documents, from the sidecars and the token files themselves."""
    manifest = json.loads((shards / "manifest.json").read_text())
    dtype = np.dtype(manifest["settings"]["dtype"])
    text = tokens = 0
    for shard in manifest["shards"]:
        if shard["split"] == "train":
            text += int(np.load(shards / f"{shard['name']}.ds.docs.npy")["bytes"].sum())
            tokens += len(np.fromfile(shards / f"{shard['name']}.ds", dtype=dtype))
    return text, tokens


def test_the_loss_decreases_and_held_out_bpb_beats_order0(
    shards: Path, shared_dir: Path, tmp_path: Path
) -> None:
    from tokenloom.lm.runs import evaluate_run

    config = _config(shards, tmp_path / "run", budget=16000, log_every=5)
    out = train_lm(config, quiet=True)
    rows = _train_rows(out)
    first, last = float(rows[0]["loss"]), float(rows[-1]["loss"])
    assert first > math.log(400) - 0.6  # about uniform over the vocabulary at the start
    assert last < first - 1.0
    assert (out / "train_log.png").stat().st_size > 0
    held = tmp_path / "held"  # devtest lines the model never saw (training took the first 40)
    held.mkdir()
    for code in LANGS:
        lines = (
            (shared_dir / "corpora/flores200/devtest" / f"{code}.txt")
            .read_text(encoding="utf-8")
            .splitlines()
        )
        (held / f"{code}.txt").write_text("\n".join(lines[100:130]) + "\n", encoding="utf-8")
    df = evaluate_run(out, held, tokenizer=shards.parent / "bpe400.json")
    langs = df[df["slice_kind"] == "language"].set_index("slice")
    assert sorted(langs.index) == sorted(LANGS)
    assert (langs["bpb"] < langs["order0"]).all(), langs[["bpb", "order0"]]  # below the order-0 baseline


def test_an_interrupted_run_resumes_to_bitwise_the_same_weights(shards: Path, tmp_path: Path) -> None:
    # a checkpoint (every 3 steps) between two log rows (every 2): the tokens read so far are in it
    full = train_lm(_config(shards, tmp_path / "full", checkpoint_every=3, log_every=2), quiet=True)

    def stop(step: int) -> None:
        if step == 5:  # after the checkpoint of step 3: steps 4 and 5 are lost
            raise KeyboardInterrupt

    part = _config(shards, tmp_path / "part", checkpoint_every=3, log_every=2)
    with pytest.raises(KeyboardInterrupt):
        train_lm(part, quiet=True, on_step=stop)
    assert torch.load(tmp_path / "part" / "checkpoint.pt", weights_only=False)["step"] == 3
    with pytest.raises(ConfigError, match="global batch of 4, this run has 2"):
        train_lm(dataclasses.replace(part, batch_size=2), quiet=True, resume=True)
    with pytest.raises(ConfigError, match="lr differ"):
        train_lm(dataclasses.replace(part, lr=1e-3), quiet=True, resume=True)
    train_lm(part, quiet=True, resume=True)
    a, b = _weights(full), _weights(tmp_path / "part")
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    keep = ("step", "tokens", "lr")
    assert [[r[k] for k in keep] for r in _train_rows(tmp_path / "part")] == [
        [r[k] for k in keep] for r in _train_rows(full)
    ]
    assert _train_rows(tmp_path / "part")[-1]["loss"] == _train_rows(full)[-1]["loss"]
    info_a = json.loads((full / "run.json").read_text())
    info_b = json.loads((tmp_path / "part" / "run.json").read_text())
    assert info_a["tokens_seen"] == info_b["tokens_seen"] and info_a["steps"] == info_b["steps"]


def test_a_resize_is_allowed_when_asked(shards: Path, tmp_path: Path) -> None:
    def stop(step: int) -> None:
        if step == 4:
            raise KeyboardInterrupt

    part = _config(shards, tmp_path / "run", checkpoint_every=4, budget=2000)
    with pytest.raises(KeyboardInterrupt):
        train_lm(part, quiet=True, on_step=stop)
    wider = dataclasses.replace(part, batch_size=8)
    info = json.loads((train_lm(wider, quiet=True, resume=True, allow_resize=True) / "run.json").read_text())
    rows = len(TokenShardDataset(shards, seq_len=32, packing="documents"))
    assert info["steps"] == math.ceil(2000 * rows / (_text_totals(shards)[1] * 8))  # the new plan's steps
    assert [int(r["step"]) for r in _train_rows(tmp_path / "run")][:5] == [
        1,
        2,
        3,
        4,
        3,
    ]  # 4 steps of 4 = 2 of 8


def test_windows_and_the_evaluation_hook(shards: Path, tmp_path: Path) -> None:
    seen: list[int] = []

    def evaluate(model: torch.nn.Module, step: int) -> dict[str, float]:
        seen.append(step)
        assert not model.training
        return {"loss": 1.5, "bpb": 2.5}

    config = _config(shards, tmp_path / "run", packed=False, budget=33 * 4 * 6, eval_every=4, log_every=3)
    out = train_lm(config, quiet=True, evaluate=evaluate)
    info = json.loads((out / "run.json").read_text())
    assert info["steps"] == 6 and info["tokens_seen"] == 6 * 4 * 33  # windows of seq_len + 1 tokens
    assert seen == [4, 6]
    evals = [r for r in csv.DictReader((out / "train_log.csv").open()) if r["kind"] == "eval"]
    assert [(r["step"], r["loss"], r["bpb"]) for r in evals] == [("4", "1.5", "2.5"), ("6", "1.5", "2.5")]


@pytest.mark.parametrize("share", [0.05, 0.12])
def test_a_byte_budget_reads_the_same_text_whatever_the_tokenizer(
    shards: Path, shards_big: Path, tmp_path: Path, share: float
) -> None:
    runs = {}
    for folder in (shards, shards_big):
        text, tokens = _text_totals(folder)
        budget = round(text * share)
        config = _config(folder, tmp_path / folder.name, budget=budget, budget_unit="bytes", lr=1e-3)
        info = json.loads((train_lm(config, quiet=True) / "run.json").read_text())
        # the budget's share of the text is that share of an epoch's rows
        rows = len(TokenShardDataset(folder, seq_len=32, packing="documents"))
        assert info["steps"] == math.ceil(rows * share / 4)
        assert info["bytes_per_token"] == text / tokens
        by_tokens = _config(folder, tmp_path / f"t{folder.name}", budget=round(tokens * share), lr=1e-3)
        assert (
            json.loads((train_lm(by_tokens, quiet=True) / "run.json").read_text())["steps"] == info["steps"]
        )
        runs[folder] = info
    small, big = runs[shards], runs[shards_big]
    assert big["tokens_seen"] < small["tokens_seen"]  # the larger vocabulary needs fewer tokens ...
    for info in (small, big):  # ... for about the same text: the budget, up to one batch of rows
        assert abs(info["bytes_seen"] - info["config"]["budget"]) < 4 * 32 * info["bytes_per_token"]


def test_run_json_and_load_run_give_back_the_model(shards: Path, tmp_path: Path) -> None:
    config = _config(shards, tmp_path / "run", budget=2000)
    out = train_lm(config, quiet=True)
    model, info = load_run(out)
    assert LmTrainConfig.from_dict(info["config"]) == config
    manifest = json.loads((shards / "manifest.json").read_text())
    assert info["tokenizer"] == manifest["tokenizer"] and Path(info["shards"]) == shards.resolve()
    assert info["training_flops"] == info["steps"] * 3 * lm_flops(config.model, 4, 32).total
    saved = _weights(out)
    for name, value in model.state_dict().items():
        assert torch.equal(value, saved[name]), name
    # the tokens seen: the real (non-padding) tokens of the rows of the steps taken, in epoch 0's order
    data = TokenShardDataset(shards, seq_len=32, packing="documents")
    order = data.order(0)[: info["steps"] * 4]
    assert info["tokens_seen"] == sum(int((data[int(i)]["segment_ids"] >= 0).sum()) for i in order)
    assert info["final_loss"] == pytest.approx(float(_train_rows(out)[-1]["loss"]), rel=1e-5)
    ids = torch.tensor([[1, 2, 3, 4]])
    assert model(ids).shape == (1, 4, config.model.vocab_size) and not model.training


def test_bad_settings_are_one_line_errors(shards: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="exceeds the model's context of 32"):
        _config(shards, tmp_path, seq_len=64)
    small = LanguageModelConfig(
        vocab_size=100, encoder=EncoderConfig(width=32, depth=1, heads=2, causal=True)
    )
    with pytest.raises(ConfigError, match="vocab_size >= 400"):
        train_lm(_config(shards, tmp_path, model=small), quiet=True)
    with pytest.raises(ConfigError, match="fewer than one batch"):
        train_lm(_config(shards, tmp_path, batch_size=10_000), quiet=True)
    with pytest.raises(ConfigError, match="no run record"):
        load_run(tmp_path / "nothing")


def test_the_command_trains_and_reports(
    shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cli"
    code = cli.main(["train-lm", str(shards), "--out", str(out), "--bytes", "3000", "--seq-len", "32",
                     "--batch-size", "4", "--width", "32", "--depth", "1", "--log-every", "2"])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "tokens/s" in printed and "done: " in printed
    _, info = load_run(out)
    assert info["config"]["budget_unit"] == "bytes" and info["config"]["model"]["vocab_size"] == 400


_HANGING_RUN = """
import argparse, os, sys, time
from pathlib import Path
from tokenloom._commands import train_lm as command
from tokenloom.lm.train import train_lm


def hang(step):
    if step == {hang}:  # after the checkpoint of step {ckpt}: wait to be killed
        time.sleep(600)


if __name__ == "__main__":
    Path(__file__).with_name("rank" + os.environ["RANK"] + ".pid").write_text(str(os.getpid()))
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    train_lm(command.config_from_args(parser.parse_args(sys.argv[1:])), quiet=True, on_step=hang)
"""


@pytest.mark.slow
def test_a_killed_two_process_run_resumes_to_bitwise_the_same_weights(shards: Path, tmp_path: Path) -> None:
    env = ddp_env()
    common = [str(shards), "--tokens", "3000", "--seq-len", "32", "--batch-size", "4", "--width", "32",
              "--depth", "1", "--log-every", "1", "--lr", "1e-2", "--warmup-steps", "2",
              "--checkpoint-every", "5"]  # fmt: skip
    full, part = tmp_path / "full", tmp_path / "part"
    done = subprocess.run(torchrun("-m", "tokenloom", "train-lm", *common, "--out", str(full), "-q"),
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((full / "run.json").read_text())["processes"] == 2

    script = tmp_path / "hanging_run.py"
    script.write_text(textwrap.dedent(_HANGING_RUN.format(hang=7, ckpt=5)))
    log = (tmp_path / "killed.log").open("w")
    cmd = torchrun(str(script), *common, "--out", str(part))
    run = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not (part / "checkpoint.pt").exists():  # renamed into place whole (atomic)
            assert run.poll() is None, (tmp_path / "killed.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "no checkpoint within 240 s"
            time.sleep(0.05)
    finally:  # each rank runs in a session of its own: SIGKILL the launcher's group and each rank's
        ranks = [int(f.read_text()) for f in sorted(tmp_path.glob("rank*.pid"))]
        for group in (run.pid, *ranks):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        run.wait(timeout=60)
        log.close()
    assert len(ranks) == 2
    for pid in ranks:
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{pid}"), f"rank process {pid} survived SIGKILL"
    assert torch.load(part / "checkpoint.pt", weights_only=False)["step"] == 5  # steps 6 and 7 are lost
    one = _config(shards, part, budget=3000, checkpoint_every=5)
    with pytest.raises(ConfigError, match=r"written by 2 process\(es\), this run has 1"):
        train_lm(one, quiet=True, resume=True)

    cmd = torchrun("-m", "tokenloom", "train-lm", *common, "--out", str(part), "--resume", "-q")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    a, b = _weights(full), _weights(part)
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name  # bitwise on CPU
    keep = ("step", "tokens", "loss")
    assert [[r[k] for k in keep] for r in _train_rows(part)] == [
        [r[k] for k in keep] for r in _train_rows(full)
    ]


def test_model_flop_utilisation_needs_a_known_peak() -> None:
    from tokenloom.training.throughput import mfu, peak_flops

    assert mfu(3e12, 2.0, 3e12) == 0.5
    assert mfu(3e12, 2.0, 0.0) is None
    assert peak_flops(torch.device("cpu")) == 0.0
