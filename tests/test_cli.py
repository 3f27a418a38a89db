"""The command line as a new user meets it: one-line errors, quiet pipes, --verbose, defaults, honest flags."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tokenloom import _tables, cli

SRC = Path(__file__).resolve().parent.parent / "src"


def _tokenloom(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-m", "tokenloom", *args],
        capture_output=True, text=True, timeout=300, check=False, env=env, cwd=cwd,
    )  # fmt: skip


def _all_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _all_parsers(sub)
    return found


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["costs", "kv", "--layers", "x"], "argument --layers: invalid value 'x': give a positive integer"),
        (["nope"], "argument COMMAND: invalid choice: 'nope'"),
        (["costs"], "the following arguments are required: WHAT"),
        (["images"], "the following arguments are required: ACTION"),
        (["train", "a.txt"], "the following arguments are required: --out"),
        (
            ["costs", "kv", "--bytes", "--units", "decimal"],
            "argument --units: not allowed with argument --bytes",
        ),
    ],
)
def test_argument_errors_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "usage:" not in captured.err
    assert captured.err.startswith(f"tokenloom: error: {message}"), captured.err
    assert "--help`)" in captured.err  # where the usage is


def test_help_still_has_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["costs", "kv", "--help"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("usage: tokenloom costs kv")


def test_piping_into_head_exits_quietly(tmp_path: Path) -> None:
    """More output than a pipe buffers, read one line, close: no traceback, no 'Broken pipe' message."""
    lengths = ",".join(str(n) for n in range(1, 4001))  # ~4000 table lines, far more than 64 KiB
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    script = f'"{sys.executable}" -m tokenloom costs sweep --seq-len {lengths} | head -1'
    result = subprocess.run(
        ["bash", "-c", f"{script}; echo status=${{PIPESTATUS[0]}} >&2"],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert result.stdout.startswith("vit-b16: d=768") and result.stdout.count("\n") == 1
    assert result.stderr == "status=141\n"  # quiet, and the status says a closed pipe stopped it


@pytest.mark.slow
def test_verbose_is_tokenloom_debug_only(tmp_path: Path) -> None:
    """--verbose turns on tokenloom's loggers, not other libraries' (matplotlib's font manager, PIL...)."""
    code = textwrap.dedent(
        """
        import logging, sys
        from tokenloom import cli
        from tokenloom._commands import costs
        real = costs.run
        def run(args):
            logging.getLogger("tokenloom.probe").debug("ours")
            logging.getLogger("matplotlib.font_manager").debug("theirs")
            logging.getLogger("PIL.PngImagePlugin").debug("theirs")
            return real(args)
        costs.run = run
        sys.exit(cli.main(sys.argv[1:]))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    argv = ["costs", "sweep", "--seq-len", "1k,2k", "--png", str(tmp_path / "s.png")]
    for verbose in (True, False):
        result = subprocess.run(
            [sys.executable, "-c", code, *argv, *(["-v"] if verbose else [])],
            capture_output=True, text=True, timeout=300, check=False, env=env,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert result.stderr == ("DEBUG tokenloom.probe: ours\n" if verbose else "")


def test_verbose_train_prints_no_engine_trainer_log(tmp_path: Path) -> None:
    """sentencepiece's trainer writes hundreds of lines to stderr unless told not to; --verbose keeps it quiet."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(200)))
    result = _tokenloom(
        "train", str(corpus), "--engine", "sentencepiece", "--vocab-size", "400", "--heldout", "0",
        "--out", str(tmp_path / "tok"), "-v", "-q",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "trainer_interface" not in result.stderr and "LOG(INFO)" not in result.stderr
    assert all(line.startswith(("DEBUG tokenloom", "INFO tokenloom")) for line in result.stderr.splitlines())
    assert "  corpus         1 file, 200 lines, " in result.stdout  # singular where the count is one


def test_every_option_with_a_default_shows_it() -> None:
    formatter = cli.HelpFormatter("tokenloom")
    checked = 0
    for parser in _all_parsers(cli.build_parser()):
        for action in parser._actions:
            if action.default in (None, False, argparse.SUPPRESS) or action.help == argparse.SUPPRESS:
                continue
            if not action.option_strings:
                continue
            text = formatter._get_help_string(action) or ""
            assert "default" in text, f"{parser.prog} {action.option_strings[0]}: {text!r}"
            checked += 1
    assert checked > 30
    assert all(p.formatter_class is cli.HelpFormatter for p in _all_parsers(cli.build_parser()))


def test_help_shows_defaults_in_place(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["fertility", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "language slice premiums are measured against (default: eng_Latn)" in text
    assert "word segmenter (default: icu)" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["costs", "sweep", "--seq-len", "1k", "--image-sizes", "224"], "--seq-len would be ignored with"),
        (["costs", "sweep", "--pad"], "--pad would be ignored without --image-sizes"),
        (["costs", "sweep", "--no-class-token", "--pad"], "--no-class-token, --pad would be ignored"),
        (
            ["costs", "encoder", "--seq-len", "1k", "--image-size", "384"],
            "--image-size would be ignored with",
        ),
        (["costs", "encoder", "--seq-len", "1k", "--pad"], "--pad would be ignored with --seq-len"),
    ],
)
def test_options_that_would_be_ignored_are_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tokenloom: error: {message}") and err.count("\n") == 1, err


def test_weights_units_like_the_other_costs_commands(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["costs", "weights", "--params", "70e9", "--dtype", "bf16"]
    outputs = {}
    for units in ("binary", "decimal", "both"):
        assert cli.main([*base, "--units", units]) == 0
        outputs[units] = capsys.readouterr().out
    assert outputs == {"binary": "130.4 GiB\n", "decimal": "140.0 GB\n", "both": "140.0 GB (130.4 GiB)\n"}
    assert cli.main(base) == 0
    assert capsys.readouterr().out == outputs["both"]  # the default


def test_every_batch_job_sets_bad_input_aside_by_default() -> None:
    """One rule for every job over a corpus: ``--errors`` defaults to skip, with the same choices and help."""
    from tokenloom import TrainerConfig

    parsers = {p.prog.split()[-1]: p for p in _all_parsers(cli.build_parser())}
    flags = {
        name: next(a for a in parsers[name]._actions if "--errors" in a.option_strings)
        for name in ("fertility", "sweep", "train")
    }
    assert flags["fertility"].default == flags["sweep"].default == TrainerConfig().errors == "skip"
    assert flags["train"].default == argparse.SUPPRESS  # a flag not given leaves TrainerConfig's default
    assert {tuple(f.choices) for f in flags.values()} == {("strict", "replace", "skip")}
    helps = {f.help.split(" (default")[0].split("; default")[0] for f in flags.values()}
    assert len(helps) == 1 and "skip sets each aside, counted on the summary line" in helps.pop()


def test_a_missing_tokenizer_path_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "eng_Latn.txt").write_text("Hello\n", encoding="utf-8")
    assert cli.main(["fertility", "--tokenizer", "nope", "--corpus", "c", "--out", "r"]) == 2
    assert capsys.readouterr().err == (
        "tokenloom: error: tokenizer path 'nope' does not exist; give a folder written by Tokenizer.save or "
        "`tokenloom train`, a tokenizer.json or a sentencepiece .model, and check the spelling and the working "
        "folder\n"
    )


def test_plural() -> None:
    assert [_tables.plural(n, "shard") for n in (0, 1, 2)] == ["0 shards", "1 shard", "2 shards"]
    assert _tables.plural(1200, "line") == "1,200 lines"
    assert (
        _tables.plural(1, "child", "children") == "1 child"
        and _tables.plural(3, "child", "children") == "3 children"
    )
