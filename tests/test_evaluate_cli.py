"""``tokenloom evaluate FILE``: tables in every format, the summary, cascade and review lines, the files
written, and one-line errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tokenloom import cli


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    rows = []
    for lang, text in (
        ("eng", "I will kill you"),
        ("hin", "मैं तुम्हें मार दूँगा"),
        ("hin_Latn", "main tumhe maar dunga"),
    ):
        for _ in range(40):
            y = int(rng.random() < 0.5)
            s = float(np.round(np.clip(0.6 * y + 0.4 * rng.random(), 0, 1), 3))
            rows.append(dict(text=text, lang=lang, y=y, a=int(s >= 0.5), b=y ^ int(rng.random() < 0.2), s=s,
                             reviewed=bool(rng.random() < 0.6), pi=0.6))  # fmt: skip
    return pd.DataFrame(rows)


def _write(frame: pd.DataFrame, path: Path) -> Path:
    if path.name.endswith(".csv"):
        frame.to_csv(path, index=False)
    elif path.name.endswith(".jsonl.gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in frame.to_dict("records"))
    else:
        frame.to_parquet(path)
    return path


@pytest.mark.parametrize("name", ["t.csv", "t.jsonl.gz", "t.parquet"])
def test_every_table_format_gives_the_same_summary(
    frame: pd.DataFrame, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(frame, tmp_path / name)
    argv = [
        "evaluate",
        str(path),
        "--label",
        "y",
        "--pred",
        "a",
        "--pred",
        "b=b",
        "--score",
        "a=s",
        "--lang",
        "lang",
        "--text",
        "text",
        "--n-boot",
        "50",
    ]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("a (class 1): f1 ") and "b (class 1): f1 " in out


def test_cascade_review_and_files(
    frame: pd.DataFrame, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        frame.assign(y=frame["y"].where(frame["reviewed"])), tmp_path / "t.csv"
    )  # unreviewed: no label
    argv = [
        "evaluate", str(path), "--label", "y", "--pred", "a", "--pred", "b", "--text", "text", "--lang", "lang",
        "--n-boot", "50", "--second", "b", "--keywords", "kill,मार", "--cost", "0.1,2", "--latency", "1,40",
        "--reviewed", "reviewed", "--propensity", "pi", "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    reviewed = int(frame["reviewed"].sum())
    assert f"on the {reviewed} reviewed items" in out
    romanized = int((frame["reviewed"] & (frame["lang"] == "hin_Latn")).sum())
    assert f"cascade: escalation {romanized / reviewed:.1%}" in out  # romanized Hindi matches no keyword
    assert f"files into {tmp_path / 'out'}" in out
    assert (tmp_path / "out" / "evaluation.html").is_file() and (tmp_path / "out" / "keywords.csv").is_file()
    keywords = pd.read_csv(tmp_path / "out" / "keywords.csv")
    assert (
        "no predicted positives"
        in keywords.set_index(["slice_kind", "slice"]).loc[("language", "hin_Latn"), "flag"]
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--lang", "language"], "no column 'language' in the data"),
        (["--label", "nope"], "no column 'nope'"),
        (["--positive", "2"], "label column 'y' holds values outside the positive set \\[2\\]"),
        (["--second", "b"], "--second needs one first stage"),
        (["--compare", "f1,f2"], "unknown metric 'f2'"),
    ],
)
def test_errors_are_one_line(
    frame: pd.DataFrame, tmp_path: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(frame, tmp_path / "t.csv")
    argv = ["evaluate", str(path), "--label", "y", "--pred", "a", "--n-boot", "0", *extra]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("tokenloom: error: ") and err.count("\n") == 1
    assert pytest.importorskip("re").search(message, err)


def test_not_a_table_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.txt").write_text("hello\n", encoding="utf-8")
    assert cli.main(["evaluate", str(tmp_path / "t.txt"), "--label", "y", "--pred", "a"]) == 2
    assert "not a table" in capsys.readouterr().err
