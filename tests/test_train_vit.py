"""ViT training from shards: loss falls, exact resume (one process and DDP), the DDP split, resize refusal,
optimizer groups, schedule, mixing, DDP equivalence."""

from __future__ import annotations

import contextlib
import csv
import itertools
import math
import os
import shutil
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from tokenloom import cli
from tokenloom.encoder.config import EncoderConfig
from tokenloom.errors import ConfigError
from tokenloom.vision.optim import (
    cosine_warmup,
    mix_batch,
    no_decay,
    param_groups,
    soft_cross_entropy,
    soft_targets,
)
from tokenloom.vision.shards import PreprocessConfig, preprocess_images
from tokenloom.vision.train import TrainConfig, build_classifier, train_vit
from tokenloom.vision.train_data import StepSampler, resized_step, split_indices
from torchrun import ddp_env, torchrun  # this folder: torchrun on a free port

TINY = EncoderConfig(width=32, depth=2, heads=2)


def _config(**overrides: object) -> TrainConfig:
    base: dict[str, object] = dict(
        encoder=TINY, image_size=32, patch_size=8, batch_size=8, epochs=3, lr=3e-3, warmup_steps=2,
        workers=0, log_every=1, val_fraction=0.2,
    )  # fmt: skip
    base.update(overrides)
    return TrainConfig(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 generated images of varied shapes in two classes (dark / light), as full-view shards."""
    root = tmp_path_factory.mktemp("train")
    rng = np.random.default_rng(0)
    for i in range(40):
        cls = ("dark", "light")[i % 2]
        (root / "src" / cls).mkdir(parents=True, exist_ok=True)
        h, w = int(rng.integers(30, 60)), int(rng.integers(30, 60))
        pixels = rng.normal(60 if cls == "dark" else 190, 30, (h, w, 3))
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(root / "src" / cls / f"{i:03d}.png")
    preprocess_images(root / "src", root / "shards", config=PreprocessConfig(max_side=40), quiet=True)
    return root / "shards"


def _weights(out: Path) -> dict[str, torch.Tensor]:
    return torch.load(out / "checkpoint.pt", map_location="cpu", weights_only=False)["model"]


@pytest.mark.slow
def test_loss_falls_and_an_interrupted_run_resumes_exactly(shards: Path, tmp_path: Path) -> None:
    config = _config(checkpoint_every=5)
    full = train_vit(shards, tmp_path / "full", config=config, quiet=True)
    assert full.steps == 12  # 32 training images / 8 per step = 4 steps per epoch, 3 epochs
    train_losses = [r["loss"] for r in full.log if r["kind"] == "train"]
    assert train_losses[0] == pytest.approx(math.log(2), abs=1e-6)  # zero-initialized head
    assert np.mean(train_losses[-4:]) < 0.75 * train_losses[0]
    evals = [r for r in full.log if r["kind"] == "eval"]
    assert [r["epoch"] for r in evals] == [0, 1, 2] and evals[-1]["loss"] < math.log(2)
    assert evals[-1]["top1"] >= 0.75  # dark vs light is easy; 8 held-out images

    class Interrupt(Exception):
        pass

    def stop(step: int) -> None:
        if step == 7:  # after the checkpoint at step 5, mid-epoch: steps 6 and 7 are lost
            raise Interrupt

    part = tmp_path / "part"
    with pytest.raises(Interrupt):
        train_vit(shards, part, config=config, quiet=True, on_step=stop)
    assert torch.load(part / "checkpoint.pt", weights_only=False)["step"] == 5
    resumed = train_vit(shards, part, config=config, resume=True, quiet=True)
    assert resumed.steps == 12
    a, b = _weights(tmp_path / "full"), _weights(part)
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name  # bitwise on CPU
    assert [r["loss"] for r in resumed.log] == [r["loss"] for r in full.log]
    rows = list(csv.DictReader((part / "train_log.csv").open()))
    assert len(rows) == len(full.log) and {"images_per_s", "data_wait", "lr"} <= rows[0].keys()
    assert (part / "train_log.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ConfigError, match="lr differ"):
        train_vit(shards, part, config=_config(checkpoint_every=5, lr=1e-3), resume=True, quiet=True)


def test_normalize_on_device_feeds_uint8_and_trains_to_bitwise_the_same_weights(
    shards: Path, tmp_path: Path
) -> None:
    from tokenloom.vision.train import _datasets

    on_device = _config(max_steps=3, normalize_on_device=True)
    train_set, eval_set, _ = _datasets(on_device, shards, None)
    assert train_set[(0, 1)][0].dtype == torch.uint8 and eval_set[(0, None)][0].dtype == torch.uint8
    in_loader = train_vit(shards, tmp_path / "loader", config=_config(max_steps=3), quiet=True)
    moved = train_vit(shards, tmp_path / "device", config=on_device, quiet=True)
    a, b = _weights(tmp_path / "loader"), _weights(tmp_path / "device")
    assert all(torch.equal(a[k], b[k]) for k in a)  # the same inputs bit for bit, so the same run
    assert [r["loss"] for r in moved.log] == [r["loss"] for r in in_loader.log]


def test_cli_train_vit_with_mixup_reports_progress(
    shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["train-vit", str(shards), "--out", str(tmp_path / "run"), "--width", "32", "--depth", "1",
            "--heads", "2", "--image-size", "32", "--patch-size", "8", "--batch-size", "8", "--max-steps", "3",
            "--log-every", "3", "--workers", "1", "--mixup", "0.2", "--cutmix", "1.0"]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "estimated memory per process" in out
    assert "images/s" in out and "data wait" in out and "lr " in out and "top-1" in out


def test_no_weight_decay_on_norms_biases_positions_and_class_token() -> None:
    model = build_classifier(_config(), num_classes=3)
    names = {name for name, p in model.named_parameters() if no_decay(name, p)}
    assert "embed.cls_token" in names and "embed.pos.weight" in names
    assert "encoder.blocks.0.norm1.weight" in names and "encoder.blocks.0.attn.qkv.bias" in names
    assert "head.bias" in names and "head.weight" not in names
    assert "encoder.blocks.0.attn.qkv.weight" not in names and "embed.patch_embed.proj.weight" not in names
    decay, keep = param_groups(model, 0.05)
    assert decay["weight_decay"] == 0.05 and keep["weight_decay"] == 0.0
    assert len(decay["params"]) + len(keep["params"]) == len(list(model.parameters()))
    assert all(p.ndim == 2 for p in decay["params"])


def test_cosine_schedule_with_warmup_matches_the_formula() -> None:
    lr = [cosine_warmup(t, warmup=4, total=14, min_ratio=0.1) for t in range(14)]
    assert lr[:4] == [0.25, 0.5, 0.75, 1.0]
    assert lr[4] == 1.0 and lr[9] == pytest.approx(0.1 + 0.9 * 0.5)  # half way down the cosine
    assert all(a >= b for a, b in itertools.pairwise(lr[4:]))
    # the same schedule as torch's LambdaLR drives it, step by step
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=2.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: cosine_warmup(s, warmup=4, total=14, min_ratio=0.1)
    )
    for t in range(14):
        assert opt.param_groups[0]["lr"] == pytest.approx(2.0 * lr[t])
        opt.step()
        sched.step()


def test_soft_targets_and_mixing() -> None:
    logits = torch.randn(6, 4)
    labels = torch.tensor([0, 1, 2, 3, 0, 1])
    expected = F.cross_entropy(logits, labels, label_smoothing=0.1)  # the torch oracle
    torch.testing.assert_close(soft_cross_entropy(logits, soft_targets(labels, 4, 0.1)), expected)
    images = torch.rand(6, 3, 16, 16)
    targets = soft_targets(labels, 4, 0.0)
    for mixup, cutmix in ((0.4, 0.0), (0.0, 1.0), (0.4, 1.0)):
        mixed, t = mix_batch(images, targets, mixup=mixup, cutmix=cutmix, seed=3)
        again, t2 = mix_batch(images, targets, mixup=mixup, cutmix=cutmix, seed=3)
        assert torch.equal(mixed, again) and torch.equal(t, t2)  # a function of the seed only
        torch.testing.assert_close(t.sum(-1), torch.ones(6))
        lam = float(t[0, 0])  # sample 0 (label 0) mixes with sample 5 (label 1)
        assert 0.0 <= lam <= 1.0 and float(t[0, 1]) == pytest.approx(1 - lam)
        if cutmix and not mixup:  # pixels come from one image or the other; the kept area is lam
            from_self = (mixed[0] == images[0]).all(0).float().mean()
            assert float(from_self) == pytest.approx(lam, abs=1e-6)
    assert mix_batch(images, targets, mixup=0, cutmix=0, seed=0)[0] is images


def test_sampler_shares_partition_each_global_batch() -> None:
    one = list(StepSampler(20, batch=8, rank=0, world=1, seed=5))
    shares = [list(StepSampler(20, batch=8, rank=r, world=2, seed=5)) for r in range(2)]
    assert len(one) == 16  # 2 full global batches, the tail of 4 dropped
    for b in range(2):
        assert one[b * 8 : b * 8 + 8] == shares[0][b * 4 : b * 4 + 4] + shares[1][b * 4 : b * 4 + 4]
    skipped = StepSampler(20, batch=8, rank=0, world=1, seed=5)
    skipped.set_epoch(0, start=1)
    assert list(skipped) == one[8:]
    train, held = split_indices(50, 0.2, seed=0)
    assert len(held) == 10 and sorted(train + held) == list(range(50))
    with pytest.raises(ConfigError, match="divisible"):
        StepSampler(20, batch=8, rank=0, world=3, seed=0)
    with pytest.raises(ConfigError, match="fewer than one global batch"):
        StepSampler(5, batch=8, rank=0, world=1, seed=0)


@pytest.mark.parametrize("n", [24, 23])  # 23: not a multiple of the global batch
def test_ranks_draw_each_kept_image_exactly_once_per_epoch(n: int) -> None:
    batch = 6
    kept = n // batch * batch  # the documented rule: the tail of n % batch places is dropped
    for epoch in range(3):
        drawn: dict[int, list[int]] = {}
        for world in (1, 2, 3):
            shares = []
            for rank in range(world):
                sampler = StepSampler(n, batch=batch, rank=rank, world=world, seed=11)
                sampler.set_epoch(epoch)
                shares.append([i for i, _ in sampler])
            assert all(len(s) == kept // world for s in shares)
            seen = [i for s in shares for i in s]
            assert len(set(seen)) == len(seen) == kept  # each image at most once, kept ones exactly once
            assert set(seen) <= set(range(n))
            # global batch b is rank 0's b-th share, then rank 1's, ...: the one-process order, split
            per = batch // world
            drawn[world] = [
                i for b in range(kept // batch) for s in shares for i in s[b * per : b * per + per]
            ]
        assert drawn[1] == drawn[2] == drawn[3]  # the order does not depend on the number of processes
        if n % batch:
            assert len(set(range(n)) - set(drawn[1])) == n % batch


def test_resized_step_keeps_the_epoch_and_the_place_in_it() -> None:
    assert resized_step(7, n=32, old=8, new=8) == 7
    assert resized_step(7, n=32, old=8, new=16) == 3  # epoch 1 (2 steps each), 24 of 32 images: 1 batch
    assert resized_step(3, n=32, old=16, new=8) == 6  # epoch 1, half of it
    assert resized_step(3, n=10, old=2, new=8) == 0  # 6 images in, less than a batch of 8: seen again
    assert resized_step(4, n=10, old=2, new=8) == 1  # 8 in: epoch 0 (one batch of 8) is done


def test_resume_with_another_batch_or_world_is_refused_unless_allowed(
    shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(max_steps=4, checkpoint_every=3, warmup_steps=1)
    out = tmp_path / "run"

    def stop(step: int) -> None:
        if step == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_vit(shards, out, config=config, quiet=True, on_step=stop)
    argv = ["train-vit", str(shards), "--out", str(out), "--resume", "--width", "32", "--depth", "2",
            "--heads", "2", "--image-size", "32", "--patch-size", "8", "--batch-size", "16", "--max-steps", "4",
            "--workers", "0", "--val-fraction", "0.2", "-q"]  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "global batch of 8, this run has 16" in err
    assert "data order and the optimizer steps would not match" in err and "--allow-resize" in err
    with pytest.raises(ConfigError, match="global batch of 8, this run has 16"):
        train_vit(shards, out, config=_config(max_steps=4, warmup_steps=1, batch_size=16), resume=True)
    state = torch.load(out / "checkpoint.pt", weights_only=False)
    assert state["world"] == 1 and state["step"] == 3
    state["world"] = 2  # as if written by two processes under torchrun
    torch.save(state, out / "checkpoint.pt")
    with pytest.raises(ConfigError, match=r"written by 2 process\(es\), this run has 1: .*--allow-resize"):
        train_vit(shards, out, config=config, resume=True, quiet=True)
    shutil.copytree(out, tmp_path / "copy")
    same_batch = train_vit(shards, out, config=config, resume=True, allow_resize=True, quiet=True)
    assert same_batch.steps == 4 and [r["step"] for r in same_batch.log if r["kind"] == "train"][-1] == 4
    bigger = _config(max_steps=4, checkpoint_every=3, warmup_steps=1, batch_size=16)
    resized = train_vit(shards, tmp_path / "copy", config=bigger, resume=True, allow_resize=True, quiet=True)
    new_rows = [r for r in resized.log[len(state["log"]) :] if r["kind"] == "train"]
    # step 3 of 4 per epoch at batch 8 is 24 images into epoch 0: step 1 at batch 16 (2 steps per epoch)
    assert [r["step"] for r in new_rows] == [2, 3, 4] and resized.steps == 4
    for r in new_rows:  # the schedule of the new run (total 4 steps), at the new steps
        assert r["lr"] == pytest.approx(
            config.lr * cosine_warmup(r["step"], warmup=1, total=4, min_ratio=0.01)
        )


_HANGING_RUN = """
import argparse, os, sys, time
from pathlib import Path
from tokenloom._commands import train_vit as command
from tokenloom.vision.train import train_vit


def hang(step):
    if step == {hang}:  # after the checkpoint of step {ckpt}: wait to be killed
        time.sleep(600)


if __name__ == "__main__":
    Path(__file__).with_name("rank" + os.environ["RANK"] + ".pid").write_text(str(os.getpid()))
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    args = parser.parse_args(sys.argv[1:])
    train_vit(args.data, args.out, config=command.config_from_args(args), quiet=True, on_step=hang)
"""


@pytest.mark.slow
def test_a_killed_two_process_run_resumes_to_bitwise_the_same_weights(shards: Path, tmp_path: Path) -> None:
    env = ddp_env()
    common = [str(shards), "--width", "32", "--depth", "2", "--heads", "2", "--image-size", "32",
              "--patch-size", "8", "--batch-size", "8", "--epochs", "3", "--log-every", "1", "--workers", "1",
              "--lr", "3e-3", "--warmup-steps", "2", "--val-fraction", "0.2", "--checkpoint-every", "5"]  # fmt: skip
    full, part = tmp_path / "full", tmp_path / "part"
    cmd = torchrun("-m", "tokenloom", "train-vit", *common, "--out", str(full), "-q")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]

    script = tmp_path / "hanging_run.py"
    script.write_text(textwrap.dedent(_HANGING_RUN.format(hang=7, ckpt=5)))
    cmd = torchrun(str(script), *common, "--out", str(part))
    log = (tmp_path / "killed.log").open("w")
    run = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not (part / "checkpoint.pt").exists():  # renamed into place whole (atomic)
            assert run.poll() is None, (tmp_path / "killed.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "no checkpoint within 240 s"
            time.sleep(0.05)
    finally:
        # torchrun starts each rank in a session of its own: SIGKILL the launcher's process group and
        # each rank's (the rank and its loader workers)
        ranks = [int(f.read_text()) for f in sorted(tmp_path.glob("rank*.pid"))]
        for group in (run.pid, *ranks):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        run.wait(timeout=60)
        log.close()
    assert len(ranks) == 2
    for pid in ranks:  # adopted and reaped once killed
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{pid}"), f"rank process {pid} survived SIGKILL"
    assert torch.load(part / "checkpoint.pt", weights_only=False)["step"] == 5  # steps 6 and 7 are lost
    with pytest.raises(ConfigError, match=r"written by 2 process\(es\), this run has 1"):
        train_vit(shards, part, config=_config(epochs=3, checkpoint_every=5, workers=1), resume=True)

    cmd = torchrun("-m", "tokenloom", "train-vit", *common, "--out", str(part), "--resume", "-q")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    a, b = _weights(full), _weights(part)
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name  # bitwise on CPU
    rows_full = list(csv.DictReader((full / "train_log.csv").open()))
    rows_part = list(csv.DictReader((part / "train_log.csv").open()))
    assert len(rows_full) == 15  # 12 steps, 3 evaluations
    assert [(r["step"], r["loss"]) for r in rows_part] == [(r["step"], r["loss"]) for r in rows_full]


@pytest.mark.slow
def test_two_processes_under_torchrun_follow_the_single_process_curve(shards: Path, tmp_path: Path) -> None:
    env = ddp_env()
    common = ["train-vit", str(shards), "--width", "32", "--depth", "2", "--heads", "2", "--image-size", "32",
              "--patch-size", "8", "--batch-size", "8", "--epochs", "2", "--log-every", "1", "--workers", "0",
              "--lr", "3e-3", "--val-fraction", "0.2", "-q"]  # fmt: skip
    runs = {}
    for k in (1, 2):
        out = tmp_path / f"k{k}"
        cmd = torchrun("-m", "tokenloom", *common, "--out", str(out), processes=k)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        runs[k] = list(csv.DictReader((out / "train_log.csv").open()))
    assert len(runs[1]) == len(runs[2]) == 10  # 8 steps, 2 evaluations
    for a, b in zip(runs[1], runs[2], strict=True):
        assert a["kind"] == b["kind"] and a["step"] == b["step"]
        assert float(a["loss"]) == pytest.approx(float(b["loss"]), rel=1e-4, abs=1e-5)
        if a["kind"] == "eval":
            assert a["top1"] == b["top1"]
    w1, w2 = _weights(tmp_path / "k1"), _weights(tmp_path / "k2")
    for name in w1:
        torch.testing.assert_close(w1[name], w2[name], rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
def test_cuda_bf16_autocast_training(shards: Path, tmp_path: Path) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    result = train_vit(shards, tmp_path / "gpu", config=_config(device="cuda"), quiet=True)
    losses = [r["loss"] for r in result.log if r["kind"] == "train"]
    assert all(math.isfinite(v) for v in losses) and np.mean(losses[-4:]) < losses[0]
    weights = _weights(tmp_path / "gpu")
    assert all(w.dtype == torch.float32 for w in weights.values())  # autocast keeps fp32 master weights
