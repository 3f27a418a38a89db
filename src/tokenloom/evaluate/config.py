"""The one configuration of a classifier evaluation: intervals, support, calibration bins, decisions.

:class:`EvalConfig` is shared by every step of :mod:`tokenloom.evaluate` (metrics by slice, paired
comparisons, cascades, selection-bias estimates, transform checks), so a report states its resamples,
seed and level once. What it does not do: read data or compute anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from tokenloom.errors import ConfigError, ConfigTypeError

__all__ = ["LOWER_IS_BETTER", "METRICS", "EvalConfig", "Metric"]

Metric = Literal["precision", "recall", "f1", "fpr", "fnr", "accuracy", "auroc", "auprc", "ece"]
METRICS: tuple[Metric, ...] = get_args(Metric)
LOWER_IS_BETTER = frozenset({"fpr", "fnr", "ece"})  # error rates: a smaller value is the better one


@dataclass(frozen=True)
class EvalConfig:
    """How metrics, intervals and slices of an evaluation are computed."""

    n_boot: int = 1000  # bootstrap resamples of every interval (0: point estimates only)
    seed: int = 0  # seed of the bootstrap draws (numpy default_rng([seed, n]))
    level: float = 0.95  # coverage of every interval (percentile bootstrap, or Wald for IPW)
    min_support: int = 30  # slices with fewer items are flagged and left out of rankings
    ece_bins: int = 10  # equal-width bins of [0, 1] for the expected calibration error
    threshold: float = 0.5  # a model given scores but no predictions predicts positive when score >= this
    rank_by: Metric = "f1"  # the metric whose gap to the "all" slice ranks (and sorts) the slices
    compare: tuple[Metric, ...] = ("precision", "recall", "f1", "fpr", "fnr", "auroc")  # paired metrics
    mixed_min_share: float = 0.1  # a script counts toward code-mixing when it holds >= this share of letters

    def __post_init__(self) -> None:
        for name in ("n_boot", "seed", "min_support", "ece_bins"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigTypeError(f"EvalConfig.{name} must be an int, got {value!r}")
        if self.n_boot < 0 or self.min_support < 0 or self.seed < 0:
            raise ConfigError(
                f"EvalConfig: n_boot, seed and min_support must be >= 0, got "
                f"{self.n_boot}, {self.seed}, {self.min_support}"
            )
        if self.ece_bins < 1:
            raise ConfigError(f"EvalConfig.ece_bins must be >= 1, got {self.ece_bins}")
        if not 0.0 < self.level < 1.0:
            raise ConfigError(f"EvalConfig.level must be in (0, 1), e.g. 0.95, got {self.level!r}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"EvalConfig.threshold must be in [0, 1], got {self.threshold!r}")
        for metric in (self.rank_by, *self.compare):
            if metric not in METRICS:
                raise ConfigError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
        if not 0.0 <= self.mixed_min_share <= 0.5:
            raise ConfigError(
                f"EvalConfig.mixed_min_share must be in [0, 0.5] (a share of letters), got {self.mixed_min_share!r}"
            )
