"""Token shards: a corpus tokenized once into datatrove's layout, and a dataset that reads them.

- ``job``: :func:`tokenize_corpus` (the corpus plan on the executor; order, sampling, validation split);
- ``encode``: one task's documents to token ids; ``writer``: one shard's files; ``manifest``: the folder's
  record and its checks;
- ``dataset``: :class:`TokenShardDataset` (windows or packed rows); ``packing``: how rows are filled;
  ``gather``: whole batches read from the memory maps; ``reference``: the plain per-sample reading.
"""

from __future__ import annotations

from tokenloom.tokens.config import TokenizeConfig
from tokenloom.tokens.dataset import TokenShardDataset
from tokenloom.tokens.job import TokenizeSummary, tokenize_corpus

__all__ = ["TokenShardDataset", "TokenizeConfig", "TokenizeSummary", "tokenize_corpus"]
