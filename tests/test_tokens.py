"""Token shards: ``tokenize_corpus`` / ``tokenloom tokenize`` and ``TokenShardDataset``.

A small mix is built at test time from FLORES (three languages, plain text files) plus a JSON Lines table
with a language column and a text file with broken lines (rejects); the tokenizer is a byte-level BPE
trained on it with the raw ``tokenizers`` engine. Oracles: the engine's own encode, datatrove's
``DocumentTokenizer`` and ``DatatroveFolderDataset``, the encoder run on each document alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tokenloom import TokenizeConfig, TokenShardDataset, load_tokenizer, tokenize_corpus
from tokenloom.errors import ConfigError
from tokenloom.tokens.documents import Documents, write_split
from tokenloom.tokens.encode import TaskTokens
from tokenloom.tokens.packing import pack_rows, row_arrays
from tokenloom.tokens.writer import token_dtype

ROOT = Path(__file__).resolve().parent.parent
LANGS = ("eng_Latn", "fra_Latn", "rus_Cyrl")


@pytest.fixture(scope="module")
def mix(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 FLORES lines in three languages, a JSON Lines table of two languages, a file with bad lines."""
    folder = tmp_path_factory.mktemp("mix")
    flores = shared_dir / "corpora" / "flores200" / "devtest"
    for code in LANGS:
        lines = (flores / f"{code}.txt").read_text(encoding="utf-8").splitlines()[:40]
        (folder / f"{code}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    de = (flores / "deu_Latn.txt").read_text(encoding="utf-8").splitlines()[40:60]
    rows = [{"text": t, "lang": "deu" if i % 2 else "spa"} for i, t in enumerate(de)]
    (folder / "table.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def bad_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Greek text file whose 2nd and 4th lines are not UTF-8."""
    path = tmp_path_factory.mktemp("bad") / "ell_Grek.txt"
    path.write_bytes(b"one line\n\xff\xfe broken\nthree\n\xc3 broken too\nfive\n")
    return path


@pytest.fixture(scope="module")
def tok_path(mix: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    hf.train([str(p) for p in sorted(mix.glob("*.txt"))], trainer)
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    hf.save(str(path))
    return path


def _docs(folder: Path, split: str = "train") -> list[list[int]]:
    """Every document of a shard folder, from the .ds / .ds.index files alone (datatrove's layout)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    dtype = np.dtype(manifest["settings"]["dtype"])
    out = []
    for shard in manifest["shards"]:
        if shard["split"] != split:
            continue
        tokens = np.fromfile(folder / f"{shard['name']}.ds", dtype=dtype)
        ends = np.fromfile(folder / f"{shard['name']}.ds.index", dtype="<u8")
        starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
        out += [tokens[a:b].tolist() for a, b in zip(starts, ends.astype(np.int64), strict=True)]
    return out


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _expected(folder: Path, tok_path: Path) -> list[list[int]]:
    """A plain encode of every input document, EOS appended: lines of the text files, rows of the table."""
    tok = load_tokenizer(tok_path)
    eos = tok.engine_handle().token_to_id("<|endoftext|>")
    texts = []
    for f in sorted(folder.glob("*.txt")):
        texts += [line for line in f.read_text(encoding="utf-8").splitlines() if line]
    texts += [json.loads(line)["text"] for line in (folder / "table.jsonl").read_text().splitlines()]
    return [[*tok.encode(t), eos] for t in texts]


@pytest.fixture(scope="module")
def plain(mix: Path, tok_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plain") / "shards"
    tokenize_corpus(mix, tok_path, out, config=TokenizeConfig(max_tokens_per_shard=2000))
    return out


def test_shards_hold_a_plain_encode_of_every_document(plain: Path, mix: Path, tok_path: Path) -> None:
    got = _docs(plain)
    assert sorted(map(tuple, got)) == sorted(map(tuple, _expected(mix, tok_path)))
    manifest = json.loads((plain / "manifest.json").read_text())
    assert manifest["settings"]["dtype"] == "<u2" and len(manifest["shards"]) > 1
    assert all(shard["tokens"] <= 2000 for shard in manifest["shards"])
    assert manifest["counts"]["input_documents"] == len(got) == 140
    langs = manifest["counts"]["languages"]
    assert langs["eng"]["train_documents"] == 40 and langs["deu"]["train_documents"] == 10
    side = np.concatenate([np.load(plain / f"{s['name']}.ds.docs.npy") for s in manifest["shards"]])
    assert side["tokens"].tolist() == [len(d) for d in got]
    assert set(side["lang"]) == {"eng", "fra", "rus", "deu", "spa"}


def test_shards_equal_datatrove_document_tokenizer(
    mix: Path, tok_path: Path, tmp_path: Path, plain: Path
) -> None:
    from datatrove.data import Document
    from datatrove.pipeline.tokens.tokenizer import DocumentTokenizer
    from datatrove.utils.dataset import DatatroveFolderDataset

    texts = []
    for f in sorted(mix.glob("*.txt")):
        texts += [line for line in f.read_text(encoding="utf-8").splitlines() if line]
    texts += [json.loads(line)["text"] for line in (mix / "table.jsonl").read_text().splitlines()]
    step = DocumentTokenizer(
        str(tmp_path / "dt"), tokenizer_name_or_path=str(tok_path), eos_token="<|endoftext|>",
        shuffle_documents=False, save_final_metadata=False,
    )  # fmt: skip
    step.run(iter(Document(text=t, id=str(i)) for i, t in enumerate(texts)), rank=0, world_size=1)
    (theirs,) = sorted((tmp_path / "dt").glob("*.ds"))
    tokens = np.fromfile(theirs, dtype="<u2")
    ends = np.fromfile(f"{theirs}.index", dtype="<u8").astype(np.int64)
    docs = [tokens[a:b].tolist() for a, b in zip(np.concatenate([[0], ends[:-1]]), ends, strict=True)]
    assert sorted(map(tuple, docs)) == sorted(map(tuple, _docs(plain)))
    # datatrove's own reader gets our tokens: windows of seq_len + 1 over each of our files
    ours = DatatroveFolderDataset(str(plain), seq_len=15, filename_pattern="*.ds", token_size=2)
    ds = TokenShardDataset(plain, seq_len=15, shuffle=False)
    assert len(ours) == len(ds) > 0
    for i in range(len(ds)):
        assert ours[i]["input_ids"].tolist() == ds[i]["input_ids"].tolist()


@pytest.mark.slow  # starts a local Ray cluster (about 10 s)
def test_workers_and_ray_write_identical_shards(
    mix: Path, tok_path: Path, plain: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    cfg = TokenizeConfig(max_tokens_per_shard=2000)
    tokenize_corpus(mix, tok_path, tmp_path / "two", config=cfg, workers=2)
    if "PYTHONPATH" not in os.environ:
        monkeypatch.setenv("PYTHONPATH", str(ROOT / "src"))  # Ray workers import this tokenloom
    started = not ray.is_initialized()
    try:
        tokenize_corpus(mix, tok_path, tmp_path / "ray", config=cfg, distributor="ray")
    finally:
        if started:  # the local cluster this run started: later tests start their own
            ray.shutdown()
    assert _files(tmp_path / "two") == _files(plain) == _files(tmp_path / "ray")


def test_kill_9_then_resume_writes_identical_shards(
    mix: Path, tok_path: Path, plain: Path, tmp_path: Path
) -> None:
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "tokenloom", "tokenize", str(mix), "--tokenizer", str(tok_path), "--out",
           str(out), "--max-tokens-per-shard", "2000", "--quiet"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TOKENLOOM_TEST_KILL_AFTER_TASKS": "2"}
    killed = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not (out / "manifest.json").exists() and len(list((out / ".state").glob("*.pkl"))) == 2
    env.pop("TOKENLOOM_TEST_KILL_AFTER_TASKS")
    done = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "2 of" in done.stdout and "tasks resumed" in done.stdout
    assert _files(out) == _files(plain)


def test_rejects_are_accounted(mix: Path, bad_file: Path, tok_path: Path, tmp_path: Path) -> None:
    summary = tokenize_corpus([mix, bad_file], tok_path, tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert summary.rejected == manifest["counts"]["rejected"] == 2
    assert summary.documents + summary.rejected == summary.input_documents == 140 + 5
    assert all("ell_Grek.txt" in line for line in manifest["rejects"])


def test_long_documents_split_or_dropped_sampling_and_validation(
    mix: Path, tok_path: Path, tmp_path: Path
) -> None:
    expected = _expected(mix, tok_path)
    tokenize_corpus(mix, tok_path, tmp_path / "split", config=TokenizeConfig(max_doc_tokens=30))
    pieces = sorted(map(tuple, _docs(tmp_path / "split")))
    want = sorted(tuple(d[i : i + 30]) for d in expected for i in range(0, len(d), 30))
    assert pieces == want
    manifest = json.loads((tmp_path / "split" / "manifest.json").read_text())
    assert manifest["counts"]["split_long"] == sum(len(d) > 30 for d in expected) > 0
    drop = tokenize_corpus(
        mix, tok_path, tmp_path / "drop", config=TokenizeConfig(max_doc_tokens=30, long_docs="drop")
    )
    assert drop.documents == sum(len(d) <= 30 for d in expected)
    cfg = TokenizeConfig(sample=(("eng", 0.5), ("fra", 2.0)), validation=0.25, seed=3)
    tokenize_corpus(mix, tok_path, tmp_path / "sampled", config=cfg)
    counts = json.loads((tmp_path / "sampled" / "manifest.json").read_text())["counts"]
    train, val = _docs(tmp_path / "sampled"), _docs(tmp_path / "sampled", "validation")
    assert counts["documents"] == {"train": len(train), "validation": len(val)}
    assert 0 < len(val) < 140 and not set(map(tuple, train)) & set(map(tuple, val))
    langs = counts["languages"]
    assert counts["sampled"]["fra"] == 2 * langs["fra"]["train_documents"] // 2  # every kept fra doc twice
    assert langs["fra"]["train_documents"] == 2 * (40 - langs["fra"]["validation_documents"])
    assert 0 < langs["eng"]["train_documents"] < 40 - langs["eng"]["validation_documents"]


def test_bad_input_is_one_line_naming_the_fix(mix: Path, tok_path: Path, plain: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"outside the vocabulary.*--eos"):
        tokenize_corpus(mix, tok_path, tmp_path / "a", config=TokenizeConfig(eos=600))
    with pytest.raises(ConfigError, match="does not fit uint32"):
        token_dtype(2**32 + 1)
    assert token_dtype(2**16) == np.dtype("<u2") and token_dtype(2**16 + 1) == np.dtype("<u4")
    copy = tmp_path / "copy"
    copy.mkdir()
    for name, data in _files(plain).items():
        (copy / name).write_bytes(data)
    with pytest.raises(ConfigError, match="another tokenizer or other settings"):
        tokenize_corpus(mix, tok_path, copy, config=TokenizeConfig(seed=9))
    victim = sorted(copy.glob("*.ds"))[0]
    victim.write_bytes(victim.read_bytes()[:-2])
    with pytest.raises(ConfigError, match=r"\.ds is .* bytes but the manifest says"):
        TokenShardDataset(copy, seq_len=8)
    with pytest.raises(ConfigError, match="written by tokenizer"):
        TokenShardDataset(plain, seq_len=8, tokenizer=_retrained(tmp_path))


def _retrained(tmp_path: Path):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel()
    hf.train_from_iterator(
        ["another corpus entirely"] * 3, trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"])
    )
    hf.save(str(tmp_path / "other.json"))
    return load_tokenizer(tmp_path / "other.json")


def test_packed_rows_hold_whole_documents_with_restarting_positions(plain: Path) -> None:
    ds = TokenShardDataset(plain, seq_len=64, packing="documents", shuffle=False)
    docs = _docs(plain)
    seen: list[list[int]] = []
    for i in range(len(ds)):
        row = ds[i]
        for seg in sorted(set(row["segment_ids"].tolist()) - {-1}):
            at = row["segment_ids"] == seg
            assert row["positions"][at].tolist() == list(range(int(at.sum())))
            seen.append(row["input_ids"][at].tolist())
    joined = [t for d in docs for t in d]
    assert [t for s in seen for t in s] == joined  # every token once, in order
    whole = Counter(tuple(d) for d in docs if len(d) <= 64)  # a document that fits a row is never cut
    assert whole <= Counter(map(tuple, seen))
    fra = TokenShardDataset(plain, seq_len=64, packing="documents", language="fra", shuffle=False)
    side = np.concatenate(
        [
            np.load(plain / f"{n}.ds.docs.npy")
            for n in sorted({p.name.split(".")[0] for p in plain.glob("*.ds")})
        ]
    )
    fra_docs = [d for d, lang in zip(docs, side["lang"], strict=True) if lang == "fra"]
    fra_tokens = [
        t for i in range(len(fra)) for t in fra[i]["input_ids"][fra[i]["segment_ids"] >= 0].tolist()
    ]
    assert fra_tokens == [t for d in fra_docs for t in d] and len(fra_docs) == 40
    rows = pack_rows([3, 70, 2], 64)
    assert rows == [[(0, 0, 3), (1, 0, 61)], [(1, 61, 70), (2, 0, 2)]]
    seg, pos = row_arrays(rows[1], 64)
    assert seg.tolist() == [0] * 9 + [1] * 2 + [-1] * 53
    assert pos.tolist() == list(range(9)) + [0, 1] + [0] * 53


def test_ddp_split_and_exact_mid_epoch_resume(plain: Path) -> None:
    for packing in ("windows", "documents"):
        full = TokenShardDataset(plain, seq_len=16, packing=packing, seed=5)  # type: ignore[arg-type]
        ranks = [
            TokenShardDataset(plain, seq_len=16, packing=packing, seed=5, rank=r, world_size=3)
            for r in range(3)
        ]  # type: ignore[arg-type]
        orders = [r.order(2) for r in ranks]
        flat = np.concatenate(orders)
        assert sorted(flat.tolist()) == list(range(len(full)))  # disjoint, every sample once
        assert not np.array_equal(full.order(1), full.order(2))
        run = TokenShardDataset(plain, seq_len=16, packing=packing, seed=5, rank=1, world_size=3)  # type: ignore[arg-type]
        run.set_epoch(2)
        it = iter(run)
        first = [next(it) for _ in range(4)]
        state = run.state_dict()
        rest = [s["input_ids"].tolist() for s in it]
        again = TokenShardDataset(plain, seq_len=16, packing=packing, seed=5, rank=1, world_size=3)  # type: ignore[arg-type]
        again.load_state_dict(state)
        assert [s["input_ids"].tolist() for s in again] == rest
        assert [s["input_ids"].tolist() for s in first] + rest == [
            ranks[1][int(i)]["input_ids"].tolist() for i in orders[1]
        ]
    with pytest.raises(ConfigError, match="world_size=3 but this dataset has 2"):
        TokenShardDataset(plain, seq_len=16, seed=5, rank=1, world_size=2).load_state_dict(state)


@pytest.mark.parametrize("position", ["learned", "sinusoidal", "rope"])
def test_a_packed_row_equals_each_document_run_alone(plain: Path, position: str) -> None:
    import torch

    from tokenloom import Encoder, EncoderConfig
    from tokenloom.encoder.positions import sinusoidal_1d

    torch.manual_seed(0)
    n, width = 256, 16
    ds = TokenShardDataset(plain, seq_len=n, packing="documents", shuffle=False)
    several = [i for i in range(len(ds)) if len(set(ds[i]["segment_ids"].tolist()) - {-1}) >= 3][:2]
    assert len(several) == 2  # rows of several documents (and pieces of long ones)
    batch = {k: torch.from_numpy(np.stack([ds[i][k] for i in several])) for k in ds[0]}  # [B, N] each
    cfg = EncoderConfig(width=width, depth=2, heads=2, position=position, attn_impl="reference")  # type: ignore[arg-type]
    enc = Encoder(cfg).double().eval()
    emb = torch.nn.Embedding(600, width).double()
    table = torch.randn(n, width, dtype=torch.float64)  # learned positions

    def embed(ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        x = emb(ids)  # [B, N, d]
        if position == "learned":
            x = x + table[positions]
        elif position == "sinusoidal":
            x = x + sinusoidal_1d(n, width).double()[positions]
        return x

    with torch.no_grad():
        packed = enc(
            embed(batch["input_ids"], batch["positions"]), segment_ids=batch["segment_ids"]
        )  # [B, N, d]
        worst = 0.0
        for b in range(2):
            for seg in sorted(set(batch["segment_ids"][b].tolist()) - {-1}):
                at = batch["segment_ids"][b] == seg
                ids = batch["input_ids"][b][at][None]  # [1, n_doc]
                alone = enc(embed(ids, torch.arange(ids.shape[1])[None]))
                worst = max(worst, (packed[b][at] - alone[0]).abs().max().item())
    print(f"max |packed - alone| = {worst:.2e}")
    assert worst < 1e-10


@pytest.mark.parametrize(("limit", "long_docs"), [(None, "split"), (25, "split"), (25, "drop")])
def test_tasks_encoded_as_flat_arrays_equal_each_document_encoded_alone(
    mix: Path,
    bad_file: Path,
    tok_path: Path,
    limit: int | None,
    long_docs: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every task's ids (the engine's flat arrays, BOS and EOS placed by array indexing, long documents split
    or dropped) and sidecar values equal each document encoded alone and framed one by one; a text the
    engine refuses is a reject naming its piece and position, the rest of its batch kept."""
    from tokenloom.corpus.columnar import read_corpus_task
    from tokenloom.corpus.plan import plan_corpus_tasks
    from tokenloom.corpus.records import SourceStats
    from tokenloom.tokens.encode import Framing, tokenize_task

    tok = load_tokenizer(tok_path)
    framing = Framing(bos=3, eos=tok.engine_handle().token_to_id("<|endoftext|>"), dtype="<u4")
    config = TokenizeConfig(max_doc_tokens=limit, long_docs=long_docs)  # type: ignore[arg-type]
    tasks = plan_corpus_tasks([mix, bad_file], errors="skip")
    refused = "Welt refuses"  # the engine raises on it: the batch, then one by one
    extra = mix.parent / "refused"
    extra.mkdir(exist_ok=True)
    (extra / "deu_Latn.txt").write_text(f"Hallo\n{refused}\nnoch eins\n", encoding="utf-8")
    rows = [{"text": t, "lang": lang} for t in ("Hallo", refused, "noch eins") for lang in ("deu", "nld")]
    (extra / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tasks += plan_corpus_tasks(extra, errors="skip")
    plain_encode = load_tokenizer(tok_path).with_engine("reference").encode  # the oracle: the plain engine

    def encode(text: str) -> list[int]:
        if text == refused:
            raise ValueError("refused")
        return plain_encode(text)

    def flat(texts: list[str], batch_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        if refused in texts:
            raise ValueError("refused")
        lists = [plain_encode(t) for t in texts]
        return np.asarray([len(x) for x in lists]), np.asarray([i for x in lists for i in x], np.int64)

    monkeypatch.setattr(tok, "encode", encode)
    monkeypatch.setattr(tok, "encode_batch", lambda texts: [encode(t) for t in texts])
    monkeypatch.setattr(tok, "encode_ids_flat", flat)
    for task in tasks:
        got = tokenize_task(task, tok, framing, config)
        want, reasons, digest = [], [], hashlib.sha256()  # the texts read, in reading order
        for piece in read_corpus_task(task, errors="skip", stats=SourceStats()):
            for i, text in enumerate(piece.texts):
                digest.update(text.encode("utf-8", "surrogatepass") + b"\n")
                if text == refused:
                    reasons.append(
                        f"{piece.part.source} document {i}: cannot be encoded (ValueError: refused)"
                    )
                    continue
                doc = [3, *plain_encode(text), framing.eos]
                if limit is not None and len(doc) > limit and long_docs == "drop":
                    continue
                step = limit if limit is not None else len(doc)
                for k in range(0, len(doc), step):
                    size = len(text.encode("utf-8")) if k == 0 else 0
                    want.append(
                        (doc[k : k + step], piece.part.lang, piece.part.script or "", piece.part.source, size)
                    )
        ends = np.cumsum(got.lengths).tolist()
        docs = [got.tokens[e - n : e].tolist() for e, n in zip(ends, got.lengths, strict=True)]
        assert list(zip(docs, got.langs, got.scripts, got.sources, got.nbytes, strict=True)) == want, task.id
        assert got.tokens.dtype == np.uint32 and got.reasons[: len(reasons)] == reasons
        assert got.digest == digest.hexdigest(), task.id
    refusals = [r for t in tasks for r in tokenize_task(t, tok, framing, config).reasons if "cannot be" in r]
    assert len(refusals) == 3 and all("document 1: cannot be encoded" in r for r in refusals)


@pytest.mark.parametrize(
    ("packing", "seq_len", "language"),
    [("windows", 7, None), ("windows", 64, None), ("documents", 5, None), ("documents", 64, None),
     ("documents", 16, "fra")],
)  # fmt: skip
def test_batches_gathered_at_once_equal_the_samples_one_by_one(
    plain: Path, packing: str, seq_len: int, language: str | None
) -> None:
    """The fast batch (one gather per shard, across the shards of the folder) equals stacking ``ds[i]``
    (the reference), for any indices; ``batches`` walks the epoch as ``iter`` does and resumes exactly."""
    kw: dict[str, Any] = {"seq_len": seq_len, "packing": packing, "language": language, "seed": 3}
    ds = TokenShardDataset(plain, **kw)
    assert len(ds.manifest["shards"]) > 1  # samples from several shards
    picks = np.random.default_rng(0).integers(-len(ds), len(ds), size=37)
    fast = ds.batch(picks)
    for key, value in fast.items():
        assert value.dtype == np.int64
        assert np.array_equal(value, np.stack([ds[int(i)][key] for i in picks])), key
    with pytest.raises(IndexError):
        ds.batch(np.array([len(ds)]))
    rank = TokenShardDataset(plain, **kw, rank=1, world_size=2)
    rank.set_epoch(1)
    samples = [s["input_ids"] for s in rank]
    rank.set_epoch(1)
    got = rank.batches(5)
    head = [next(got) for _ in range(2)]
    state = rank.state_dict()
    again = TokenShardDataset(plain, **kw, rank=1, world_size=2)
    again.load_state_dict(state)
    rows = [b["input_ids"] for b in head] + [b["input_ids"] for b in again.batches(5)]
    assert np.array_equal(np.concatenate(rows), np.stack(samples))
    assert state["position"] == 10 and again.state_dict()["epoch"] == 2


@pytest.mark.parametrize(("limit", "cuts"), [(7, [3, 7]), (10, [10]), (2**64, [10])])
def test_shards_are_cut_at_the_token_limit_a_document_whole(
    tmp_path: Path, limit: int, cuts: list[int]
) -> None:
    """Whole documents up to the limit per shard, a longer one alone; a limit past int64 is one shard."""
    task = TaskTokens(np.arange(10, dtype=np.uint16), lengths=[3, 7], langs=["eng", "fra"],
                      scripts=["Latn", "Latn"], sources=["a.txt", "a.txt"], nbytes=[3, 7])  # fmt: skip
    shards = write_split(tmp_path, "train", np.arange(2), Documents.of([task]), np.dtype("<u2"), limit)
    assert [s["tokens"] for s in shards] == cuts
    ids = np.concatenate([np.fromfile(tmp_path / f"{s['name']}.ds", dtype="<u2") for s in shards])
    assert ids.tolist() == list(range(10))
