"""The loop behind :func:`tokenloom.lm.train.train_lm`: data plan, steps, log, checkpoints, the run record.

One :class:`LmLoop` per process. Process ``r`` of ``W`` reads rows ``r, r + W, ...`` of each epoch's
order (``TokenShardDataset``'s DDP split), ``batch_size / W`` per step, so a step's global batch is the
same set of rows whatever ``W`` is; the place in the data is a function of the step alone (epoch
``step // steps_per_epoch``), so a checkpoint needs no loader state. The global torch RNG is saved in the
checkpoint. Only rank 0 prints, writes the log, checkpoints and ``run.json``.

Shape legend: ``B`` per-process rows, ``N`` seq_len, ``V`` vocabulary.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from tokenloom._atomic import atomic_write
from tokenloom.costs.language_model import lm_flops, lm_params
from tokenloom.encoder.lm import LanguageModel
from tokenloom.errors import ConfigError
from tokenloom.lm.run_config import RUN_FILE, LmTrainConfig, steps_for_budget
from tokenloom.tokens.dataset import TokenShardDataset
from tokenloom.training import distribute
from tokenloom.training.checkpoint import CHECKPOINT_NAME, load_checkpoint, restore, save_checkpoint
from tokenloom.training.log import plot_curves, write_csv
from tokenloom.training.optim import build_optimizer, build_scheduler, optimizer_step, schedule_at
from tokenloom.training.throughput import mfu, peak_flops

__all__ = ["LOG_COLUMNS", "LmLoop", "format_row", "train_bytes_per_token"]

LOG_COLUMNS = ("kind", "step", "epoch", "tokens", "bytes", "loss", "lr", "tokens_per_s", "mfu")


def format_row(row: dict[str, Any], total_steps: int) -> str:
    """One human line for a log row."""
    if row["kind"] == "eval":
        more = "  ".join(
            f"{k} {v:.4f}" for k, v in row.items() if k not in ("kind", "step", "epoch", "tokens")
        )
        return f"eval  step {row['step']}/{total_steps}: {more}"
    util = "" if row.get("mfu") is None else f"  MFU {row['mfu']:.1%}"
    return (
        f"train step {row['step']}/{total_steps}: loss {row['loss']:.4f}  lr {row['lr']:.2e}  "
        f"{row['tokens']:,} tokens  {row['tokens_per_s']:,.0f} tokens/s{util}"
    )


def train_bytes_per_token(folder: Path, manifest: dict[str, Any]) -> tuple[int, int]:
    """(UTF-8 bytes, tokens) of the training documents, from the per-document sidecars."""
    total_bytes = total_tokens = 0
    for shard in manifest["shards"]:
        if shard["split"] != "train":
            continue
        docs = np.load(folder / f"{shard['name']}.ds.docs.npy", allow_pickle=False)
        total_bytes += int(docs["bytes"].sum())
        total_tokens += int(shard["tokens"])
    return total_bytes, total_tokens


class _Objective(nn.Module):
    """``LanguageModel.loss`` as a module's forward, so DistributedDataParallel sees the call."""

    def __init__(self, lm: LanguageModel) -> None:
        super().__init__()
        self.lm = lm

    def forward(
        self, ids: torch.Tensor, targets: Tensor | None, segment_ids: Tensor | None, positions: Tensor | None
    ) -> torch.Tensor:
        return self.lm.loss(ids, targets, segment_ids=segment_ids, positions=positions)


class LmLoop:
    """Model, optimizer, schedule and data of one process; :meth:`run` trains to the last step."""

    def __init__(self, config: LmTrainConfig, *, rank: int, world: int, device: torch.device) -> None:
        if config.batch_size % world:
            raise ConfigError(
                f"--batch-size {config.batch_size} does not split evenly over {world} processes; "
                f"use a multiple of {world}"
            )
        self.config, self.out = config, Path(config.out)
        self.rank, self.world, self.device = rank, world, device
        self.printing = False
        self.progress: Callable[[dict[str, Any]], None] | None = None
        self.evaluate: Callable[[LanguageModel, int], dict[str, float]] | None = None
        self.data = TokenShardDataset(
            config.shards, seq_len=config.seq_len, packing="documents" if config.packed else "windows",
            seed=config.seed, rank=rank, world_size=world,
        )  # fmt: skip
        self._plan()
        torch.manual_seed(config.seed)  # the same initial weights in every process
        self.module = LanguageModel(config.model).to(device)
        objective = distribute.wrap(_Objective(self.module), world, device)
        self.objective = torch.compile(objective) if config.compile else objective
        self.optimizer = build_optimizer(self.module, lr=config.lr, weight_decay=config.weight_decay)
        self.scheduler = build_scheduler(
            self.optimizer, warmup=config.warmup_steps, total=self.total, min_ratio=config.min_lr_ratio
        )
        self.amp = config.autocast and device.type == "cuda"
        self.step, self.tokens, self.seconds = 0, 0, 0.0
        self.log: list[dict[str, Any]] = []
        self.step_flops = 3 * lm_flops(config.model, config.batch_size, config.seq_len).total
        self.peak = peak_flops(device)

    def _plan(self) -> None:
        """Steps per epoch and the run's steps from the budget (see ``tokenloom.lm.train``)."""
        c, manifest = self.config, self.data.manifest
        vocab = int(manifest["tokenizer"]["vocab_size"])
        if c.model.vocab_size < vocab:
            raise ConfigError(
                f"{c.shards} was written by a tokenizer of {vocab} ids but the model has vocab_size="
                f"{c.model.vocab_size}; build the model with vocab_size >= {vocab}"
            )
        rows = len(self.data)
        if rows < c.batch_size:
            raise ConfigError(
                f"{c.shards} holds {rows} training rows of {c.seq_len} tokens, fewer than one batch of "
                f"{c.batch_size}; lower --batch-size or --seq-len, or tokenize more text"
            )
        self.steps_per_epoch = rows // c.batch_size
        text_bytes, text_tokens = train_bytes_per_token(Path(c.shards), manifest)
        self.bytes_per_token = text_bytes / text_tokens
        per_row = text_tokens / rows if c.packed else c.seq_len + 1
        budget = c.budget if c.budget_unit == "tokens" else c.budget / self.bytes_per_token
        self.total = steps_for_budget(budget, c.batch_size, per_row)

    # ----------------------------------------------------------------------------------------- state

    def resume(self, *, allow_resize: bool = False) -> None:
        """Continue from the checkpoint (another global batch or process count only with ``allow_resize``:
        the run goes on from about the same place in the data, not exactly)."""
        path = self.out / CHECKPOINT_NAME
        state = load_checkpoint(path, self.config.settings(), world=self.world, allow_resize=allow_resize)
        restore(state, model=self.module, optimizer=self.optimizer, scheduler=self.scheduler)
        self.step, self.log = int(state["step"]), list(state["log"])
        self.tokens, self.seconds = int(state["extra"]["tokens"]), float(state["extra"]["seconds"])
        old_batch = int(state["settings"]["batch_size"])
        if old_batch != self.config.batch_size:
            self.step = self.step * old_batch // self.config.batch_size
            schedule_at(self.optimizer, self.scheduler, self.step)  # the new schedule, at the new step

    def _save(self) -> None:
        if self.rank == 0:
            save_checkpoint(
                self.out / CHECKPOINT_NAME, model=self.module, optimizer=self.optimizer,
                scheduler=self.scheduler, step=self.step, log_rows=self.log, settings=self.config.settings(),
                world=self.world, extra={"tokens": self.tokens, "seconds": self.seconds},
            )  # fmt: skip

    def _emit(self, row: dict[str, Any]) -> None:
        self.log.append(row)
        if self.rank != 0:
            return
        extra = sorted({k for r in self.log for k in r} - set(LOG_COLUMNS))  # the evaluation hook's
        write_csv(self.out / "train_log.csv", self.log, (*LOG_COLUMNS, *extra))
        if self.progress is not None:
            self.progress(row)
        elif self.printing:
            print(format_row(row, self.total), flush=True)

    # ----------------------------------------------------------------------------------------- steps

    def _batches(self, epoch: int, first: int) -> Any:
        """This process's batches of ``epoch`` from its ``first`` step on."""
        b = self.config.batch_size // self.world
        d = self.data
        d.load_state_dict({
            "epoch": epoch, "position": first * b, "seed": d.seed, "rank": d.rank,
            "world_size": d.world_size, "samples": len(d),
        })  # fmt: skip
        return d.batches(b)

    def _train_step(self, batch: dict[str, np.ndarray]) -> tuple[float, int]:
        """One optimizer step; (this process's mean loss, its real tokens)."""
        ids = torch.from_numpy(batch["input_ids"]).to(self.device)  # [B, N] or [B, N + 1]
        if self.config.packed:
            seg = torch.from_numpy(batch["segment_ids"]).to(self.device)  # [B, N]
            pos = torch.from_numpy(batch["positions"]).to(self.device)  # [B, N]
            args: tuple[Tensor, Tensor | None, Tensor | None, Tensor | None] = (ids, None, seg, pos)
            real = int((seg >= 0).sum())
        else:
            args = (ids[:, :-1], ids[:, 1:], None, None)  # inputs [B, N], targets [B, N]
            real = ids.numel()
        self.module.train()
        with distribute.autocast(self.device, self.amp):
            loss = self.objective(*args)
        optimizer_step(loss, self.module, self.optimizer, self.scheduler, clip_grad=self.config.clip_grad)
        return float(loss.detach()), real

    def _log_train(self, epoch: int, losses: list[float], tokens: int, elapsed: float) -> None:
        """A train row for the interval of ``losses`` (this process's) and ``tokens`` (all processes')."""
        (loss_sum,) = distribute.sum_over([sum(losses)], self.world, self.device)
        self._emit({
            "kind": "train", "step": self.step, "epoch": epoch, "tokens": self.tokens,
            "bytes": round(self.tokens * self.bytes_per_token), "loss": loss_sum / (len(losses) * self.world),
            "lr": self.optimizer.param_groups[0]["lr"], "tokens_per_s": tokens / elapsed,
            "mfu": mfu(self.step_flops * len(losses), elapsed, self.peak),
        })  # fmt: skip

    def _eval(self, epoch: int) -> None:
        if self.evaluate is None:
            return
        self.module.eval()
        result = dict(self.evaluate(self.module, self.step))
        result.setdefault("loss", math.nan)
        self._emit({"kind": "eval", "step": self.step, "epoch": epoch, "tokens": self.tokens, **result})

    def _train_epoch(self, epoch: int, on_step: Any) -> None:
        c = self.config
        batches = self._batches(epoch, self.step % self.steps_per_epoch)
        losses: list[float] = []
        tokens, tick = 0, time.perf_counter()
        end = min(self.total, (epoch + 1) * self.steps_per_epoch)
        while self.step < end:
            loss, real = self._train_step(next(batches))
            (real_all,) = distribute.sum_over([float(real)], self.world, self.device)  # every process's rows
            losses.append(loss)
            tokens += int(real_all)
            self.tokens += int(real_all)  # per step, so a checkpoint between log rows holds the exact count
            self.step += 1
            if self.step % c.log_every == 0 or self.step == end:
                elapsed = time.perf_counter() - tick
                self.seconds += elapsed
                self._log_train(epoch, losses, tokens, elapsed)
                losses, tokens = [], 0
            if c.eval_every and self.step % c.eval_every == 0 and self.step < self.total:
                self._eval(epoch)
            if c.checkpoint_every and self.step % c.checkpoint_every == 0:
                self._save()
            if on_step is not None:
                on_step(self.step)
            if not losses:
                tick = time.perf_counter()  # logging, evaluation and checkpoints are not training time

    # ------------------------------------------------------------------------------------------ run

    def run(self, on_step: Any = None) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        if self.printing:
            print(self._estimate(), flush=True)
        while self.step < self.total:
            self._train_epoch(self.step // self.steps_per_epoch, on_step)
        self._eval((self.step - 1) // self.steps_per_epoch)
        self._save()
        if self.rank == 0:
            plot_curves(
                self.out / "train_log.png", self.log, x="tokens",
                title=f"{self.config.model.encoder.depth}×{self.config.model.encoder.width}, {self.total} steps",
            )  # fmt: skip
            atomic_write(self.out / RUN_FILE, json.dumps(self.record(), indent=2) + "\n")

    def record(self) -> dict[str, Any]:
        """What ``run.json`` holds."""
        c = self.config
        train = [r for r in self.log if r["kind"] == "train"]
        return {
            "config": c.to_dict(),
            "shards": str(Path(c.shards).resolve()),
            "tokenizer": self.data.manifest["tokenizer"],
            "steps": self.step,
            "tokens_seen": self.tokens,
            "bytes_seen": round(self.tokens * self.bytes_per_token),
            "bytes_per_token": self.bytes_per_token,
            "wall_seconds": self.seconds,
            "training_flops": self.step_flops * self.step,
            "final_loss": train[-1]["loss"] if train else math.nan,
            "parameters": lm_params(c.model),
            "non_embedding_parameters": lm_params(c.model, embedding=False),
            "processes": self.world,
            "device": str(self.device),
        }

    def _estimate(self) -> str:
        c = self.config
        return (
            f"training {self.total} steps of {c.batch_size} rows × {c.seq_len} tokens ({self.world} "
            f"process(es), {self.steps_per_epoch} steps/epoch) on {self.device}; "
            f"{self.step_flops / 1e9:,.2f} GFLOP per step (cost model: 3 × forward)"
        )
