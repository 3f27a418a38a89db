"""The training loop behind :func:`tokenloom.vision.train.train_vit`: steps, evaluation, logging, checkpoints.

One :class:`Loop` per process. Randomness that a resumed run must repeat is either a function of
(seed, epoch, index) / (seed, step) — sample augmentations, batch mixing — or saved in the checkpoint
(the global torch RNG, e.g. for dropout); the loaders draw their worker seeds from their own generators,
never from the global RNG. This module builds no datasets and parses no options.

Shape legend: ``B`` per-process batch, ``K`` classes, ``C, S`` image channels and side.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tokenloom.costs import format_bytes, training_memory, vit_tokens
from tokenloom.training import distribute
from tokenloom.training.checkpoint import CHECKPOINT_NAME, load_checkpoint, restore, save_checkpoint
from tokenloom.training.optim import build_optimizer, build_scheduler, optimizer_step, schedule_at
from tokenloom.vision._trainlog import format_row, plot_log, write_log
from tokenloom.vision.optim import mix_batch, soft_cross_entropy, soft_targets
from tokenloom.vision.train_data import build_loaders, resized_step, to_device

if TYPE_CHECKING:
    import torch
    from torch import nn

    from tokenloom.vision.train import TrainConfig

__all__ = ["Loop", "TrainResult"]


@dataclass
class TrainResult:
    """What a run did: steps, the log rows, the final held-out metrics and where files went."""

    steps: int
    log: list[dict[str, Any]]
    eval_loss: float
    eval_top1: float
    images_per_s: float  # over all training steps of this process's run (global images)
    data_wait: float  # fraction of training time spent waiting for the loader
    out: str


class Loop:
    """Model, optimizer, schedule and loaders of one process; :meth:`run` trains to the last step.

    ``module`` is the freshly initialized classifier (every process builds it from the same seed); the loop
    wraps it in DistributedDataParallel when ``world > 1``.
    """

    def __init__(
        self,
        config: TrainConfig,
        out: Path,
        module: nn.Module,
        train_set: Any,
        eval_set: Any,
        classes: int,
        *,
        rank: int,
        world: int,
        device: torch.device,
    ) -> None:
        self.config, self.out, self.classes = config, out, classes
        self.rank, self.world, self.device = rank, world, device
        self.quiet = False
        self.module = module.to(device)
        self.model: Any = distribute.wrap(self.module, world, device)
        self.optimizer = build_optimizer(self.module, lr=config.lr, weight_decay=config.weight_decay)
        self.train_loader, self.sampler, self.eval_loader = build_loaders(
            train_set, eval_set, batch=config.batch_size, rank=rank, world=world, seed=config.seed,
            workers=config.workers,
        )  # fmt: skip
        self.steps_per_epoch = self.sampler.steps_per_epoch
        full = config.epochs * self.steps_per_epoch
        self.total = full if config.max_steps is None else min(full, config.max_steps)
        self.scheduler = build_scheduler(
            self.optimizer, warmup=config.warmup_steps, total=self.total, min_ratio=config.min_lr_ratio
        )
        self.step = 0
        self.log: list[dict[str, Any]] = []
        self.train_time = self.wait_time = 0.0
        self.steps_run = 0  # optimizer steps taken by this process (since a resume)
        self.amp = config.amp and device.type == "cuda"

    # ----------------------------------------------------------------------------------------- state

    def resume(self, *, allow_resize: bool = False) -> None:
        """Continue from the checkpoint; with ``allow_resize``, also one written with another global batch
        or number of processes (the run goes on from the same epoch and position, not exactly)."""
        path = self.out / CHECKPOINT_NAME
        state = load_checkpoint(path, self.config.settings(), world=self.world, allow_resize=allow_resize)
        restore(state, model=self.module, optimizer=self.optimizer, scheduler=self.scheduler)
        self.step, self.log = int(state["step"]), list(state["log"])
        old_batch = int(state["settings"]["batch_size"])
        if old_batch != self.config.batch_size:
            self.step = resized_step(self.step, n=self.sampler.n, old=old_batch, new=self.config.batch_size)
            schedule_at(self.optimizer, self.scheduler, self.step)  # the new schedule, at the new step

    def _save(self) -> None:
        if self.rank != 0:
            return
        save_checkpoint(
            self.out / CHECKPOINT_NAME, model=self.module, optimizer=self.optimizer,
            scheduler=self.scheduler, step=self.step, log_rows=self.log, settings=self.config.settings(),
            world=self.world,
        )  # fmt: skip

    def _emit(self, row: dict[str, Any]) -> None:
        self.log.append(row)
        if self.rank == 0:
            write_log(self.out / "train_log.csv", self.log)
            if not self.quiet:
                print(format_row(row, self.total), flush=True)

    # ----------------------------------------------------------------------------------------- steps

    def _autocast(self) -> Any:
        return distribute.autocast(self.device, self.amp)

    def _train_step(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        c = self.config
        targets = soft_targets(labels, self.classes, c.label_smoothing)  # [B, K]
        mix_seed = (c.seed * 1_000_003 + self.step) * 64 + self.rank
        images, targets = mix_batch(images, targets, mixup=c.mixup, cutmix=c.cutmix, seed=mix_seed)
        self.model.train()
        with self._autocast():
            logits = self.model(images)  # [B, K]
        loss = soft_cross_entropy(logits, targets)
        optimizer_step(loss, self.module, self.optimizer, self.scheduler, clip_grad=c.clip_grad)
        return loss.detach()

    def _mean(self, values: list[float]) -> list[float]:
        """Sum ``values`` over processes (the identity in one process)."""
        return distribute.sum_over(values, self.world, self.device)

    def _to_device(self, batch: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return to_device(batch, self.device, normalize_on_device=self.config.normalize_on_device)

    def _train_epoch(self, epoch: int, on_step: Any) -> None:
        it = iter(self.train_loader)
        losses: list[float] = []
        tick = time.perf_counter()
        wait = 0.0
        while self.step < self.total:
            t0 = time.perf_counter()
            batch = next(it, None)
            if batch is None:
                break
            wait += time.perf_counter() - t0
            images, labels = self._to_device(batch)
            losses.append(float(self._train_step(images, labels)))
            self.step += 1
            self.steps_run += 1
            if self.step % self.config.log_every == 0 or self.step == self.total:
                now = time.perf_counter()
                (loss_sum,) = self._mean([sum(losses)])
                elapsed = now - tick
                self.train_time += elapsed
                self.wait_time += wait
                self._emit({
                    "kind": "train", "step": self.step, "epoch": epoch,
                    "loss": loss_sum / (len(losses) * self.world),
                    "lr": self.optimizer.param_groups[0]["lr"],
                    "images_per_s": len(losses) * self.config.batch_size / elapsed,
                    "data_wait": wait / elapsed,
                })  # fmt: skip
                losses, wait, tick = [], 0.0, time.perf_counter()
            if self.config.checkpoint_every and self.step % self.config.checkpoint_every == 0:
                self._save()
            if on_step is not None:
                on_step(self.step)
            if losses == [] and self.step % self.config.log_every == 0:
                tick = time.perf_counter()  # checkpoint time is not training time

    def evaluate(self) -> tuple[float, float]:
        """``(mean loss, top-1)`` on the held-out split (all processes' shares)."""
        import torch
        import torch.nn.functional as F

        self.model.eval()
        total_loss = correct = count = 0.0
        with torch.no_grad(), self._autocast():
            for batch in self.eval_loader:
                images, labels = self._to_device(batch)
                logits = self.module(images).float()  # [B, K]
                total_loss += float(F.cross_entropy(logits, labels, reduction="sum"))
                correct += float((logits.argmax(-1) == labels).sum())
                count += len(labels)
        total_loss, correct, count = self._mean([total_loss, correct, count])
        if count == 0:
            return math.nan, math.nan
        return total_loss / count, correct / count

    def _eval_row(self, epoch: int) -> None:
        loss, top1 = self.evaluate()
        self._emit({"kind": "eval", "step": self.step, "epoch": epoch, "loss": loss, "top1": top1})

    # ------------------------------------------------------------------------------------------ run

    def run(self, on_step: Any = None) -> TrainResult:
        self.out.mkdir(parents=True, exist_ok=True)
        if not self.quiet:
            print(self._estimate(), flush=True)
        spe = self.steps_per_epoch
        if (
            self.step
            and self.step % spe == 0
            and not any(r["kind"] == "eval" and r["epoch"] == self.step // spe - 1 for r in self.log)
        ):
            self._eval_row(self.step // spe - 1)  # the checkpoint came just before an epoch's evaluation
        while self.step < self.total:
            epoch = self.step // spe
            self.sampler.set_epoch(epoch, self.step % spe)
            self._train_epoch(epoch, on_step)
            self._eval_row(epoch)
        self._save()
        if self.rank == 0:
            plot_log(
                self.out / "train_log.png", self.log, title=f"{self.classes} classes, {self.total} steps"
            )
        evals = [r for r in self.log if r["kind"] == "eval"]
        last = evals[-1] if evals else {"loss": math.nan, "top1": math.nan}
        images = self.steps_run * self.config.batch_size
        return TrainResult(
            steps=self.step,
            log=self.log,
            eval_loss=last["loss"],
            eval_top1=last["top1"],
            images_per_s=images / self.train_time if self.train_time else 0.0,
            data_wait=self.wait_time / self.train_time if self.train_time else 0.0,
            out=str(self.out),
        )

    def _estimate(self) -> str:
        c = self.config
        tokens = vit_tokens(c.image_size, c.patch_size, class_token=c.pool == "token")
        path: Literal["flash", "materialized"] = (
            "materialized" if c.encoder.attn_impl == "reference" else "flash"
        )
        mem = training_memory(
            c.encoder, c.batch_size // self.world, tokens, "fp32", optimizer="adamw", attention=path
        )
        return (
            f"training {self.total} steps of {c.batch_size} images ({self.world} process(es), "
            f"{self.steps_per_epoch} steps/epoch) on {self.device}; estimated memory per process "
            f"(encoder, fp32): {format_bytes(mem.total)} = parameters {format_bytes(mem.parameters)} + "
            f"gradients {format_bytes(mem.gradients)} + optimizer {format_bytes(mem.optimizer)} + "
            f"activations {format_bytes(mem.activations)}"
        )
