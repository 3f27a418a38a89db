"""The package skeleton: version, CLI, lazy imports, errors, atomic outputs, encoder config."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import textwrap

import pytest

import tokenloom
from tokenloom import _atomic, cli, errors
from tokenloom.encoder.config import PRESETS, EncoderConfig


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, check=False)


def test_version_flag_prints_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"tokenloom {tokenloom.__version__}"


def test_module_help_lists_every_command_module() -> None:
    result = _run("-m", "tokenloom", "--help")
    assert result.returncode == 0, result.stderr
    for module in cli._command_modules():
        assert module.NAME in result.stdout
    assert "demo" in result.stdout


def test_help_imports_no_heavy_library() -> None:
    code = textwrap.dedent(
        """
        import sys
        from tokenloom import cli
        try:
            cli.main(["--help"])
        except SystemExit:
            pass
        heavy = sorted(m for m in ("torch", "pandas", "matplotlib", "numpy", "PIL") if m in sys.modules)
        print("HEAVY", heavy)
        """
    )
    result = _run("-c", code)
    assert "HEAVY []" in result.stdout, result.stdout + result.stderr


def test_import_tokenloom_is_lazy() -> None:
    result = _run(
        "-c", "import sys, tokenloom; print(sorted(m for m in ('torch','pandas') if m in sys.modules))"
    )
    assert result.stdout.strip() == "[]", result.stderr


def test_public_api_resolves() -> None:
    for name in tokenloom.__all__:
        assert getattr(tokenloom, name) is not None, name
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = tokenloom.no_such_name


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "commands" in capsys.readouterr().out


@pytest.mark.slow
def test_demo_runs_and_says_what_it_did(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "demo"
    for _ in range(2):  # the Quickstart command can be repeated: the demo replaces its own outputs
        assert cli.main(["demo", "--quiet", "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert "decoded back exactly (byte fallback)" in out
    for lang in ("eng_Latn", "zho_Hans", "tha_Thai"):
        assert re.search(rf"^   language  {lang} +\d+ +\d\.\d{{3}} +\[", out, re.M), lang  # report_table rows
    assert re.search(r"^   eng_Latn +1\.00 +4096 +1\.00 +1\.00 +1\.00$", out, re.M)  # the pivot costs ×1
    assert "-> (3, " in out and "+ class token -> (1, 197, 96)" in out
    assert {"report.csv", "report.md", "report.html"} <= {p.name for p in (out_dir / "report").iterdir()}
    counts = re.search(
        r"(\d+) languages in (\d+) scripts \(([A-Za-z, ]+)\), (\d+) parallel sentences each", out
    )
    assert counts is not None, out[:500]
    assert int(counts[1]) >= 30 and int(counts[2]) >= 15 and int(counts[4]) >= 60
    assert len(counts[3].split(", ")) == int(counts[2])
    for lang in ("amh_Ethi", "khm_Khmr", "mya_Mymr"):  # scripts the corpus promises
        assert re.search(rf"^ *language +{lang} +{counts[4]} ", out, re.M), lang
    for label in ("hin-eng_mixed", "spa-eng_mixed", "tgl-eng_mixed", "hin_Latn-translit", "rust"):
        assert re.search(
            rf"^   (code_mixed|transliterated|code) +{re.escape(label)} +\d+ texts? +fertility", out, re.M
        ), label
    from tokenloom.text.tokenizer import load_tokenizer

    tok = load_tokenizer(out_dir / "tokenizer")
    assert tok.decode(tok.encode("Der Weber saß am Fenster.")) == "Der Weber saß am Fenster."


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (errors.ConfigError, ValueError),
        (errors.CorpusError, ValueError),
        (errors.TokenizerError, ValueError),
        (errors.ImageDecodeError, OSError),
    ],
)
def test_errors_subclass_builtins(cls: type[Exception], builtin: type[Exception]) -> None:
    assert issubclass(cls, builtin)
    assert issubclass(cls, errors.TokenloomError)


def test_cli_turns_tokenloom_errors_into_one_line(monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tokenloom._commands import demo

    def boom(args: object) -> int:
        raise errors.CorpusError("corpus 'x.txt' is empty; add text or drop it")

    monkeypatch.setattr(demo, "run", boom)
    assert cli.main(["demo"]) == 2
    assert capsys.readouterr().err.strip() == "tokenloom: error: corpus 'x.txt' is empty; add text or drop it"


def test_cli_reports_file_system_errors_in_one_line(monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tokenloom._commands import demo

    def boom(args: object) -> int:
        raise NotADirectoryError(20, "Not a directory", "/tmp/a-file/out")

    monkeypatch.setattr(demo, "run", boom)
    assert cli.main(["demo"]) == 2
    assert (
        capsys.readouterr().err.strip() == "tokenloom: error: [Errno 20] Not a directory: '/tmp/a-file/out'"
    )


def test_atomic_write_refuses_a_folder(tmp_path) -> None:
    with pytest.raises(errors.ConfigError, match="is a folder; give the name of a file"):
        _atomic.atomic_write(tmp_path, "x")
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_replaces_whole_file(tmp_path) -> None:
    target = tmp_path / "sub" / "out.txt"
    _atomic.atomic_write(target, "old")
    _atomic.atomic_write(target, b"new")
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o666 & ~_atomic._umask()  # not mkstemp's 0600
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.txt"]


def test_atomic_dir_refuses_existing_and_cleans_up_on_error(tmp_path) -> None:
    out = tmp_path / "out"
    with _atomic.atomic_dir(out) as tmp:
        (tmp / "a.txt").write_text("1")
    assert (out / "a.txt").read_text() == "1"
    assert out.stat().st_mode & 0o777 == 0o777 & ~_atomic._umask()  # not mkdtemp's 0700
    with pytest.raises(errors.ConfigError, match=r"already exists.*--overwrite"), _atomic.atomic_dir(out):
        pass
    with pytest.raises(RuntimeError), _atomic.atomic_dir(out, overwrite=True) as tmp:
        (tmp / "b.txt").write_text("half")
        raise RuntimeError("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # old folder intact, no temp left
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"]
    with _atomic.atomic_dir(out, overwrite=True) as tmp:
        (tmp / "c.txt").write_text("2")
    assert sorted(p.name for p in out.iterdir()) == ["c.txt"]


def test_encoder_config_defaults_and_resolution() -> None:
    cfg = EncoderConfig()
    assert (cfg.resolved_head_dim, cfg.resolved_kv_heads, cfg.resolved_mlp_hidden) == (64, 12, 3072)
    swiglu = EncoderConfig(width=768, mlp="swiglu")
    assert swiglu.resolved_mlp_hidden == 2048  # 8*768/3 = 2048, already a multiple of 64
    assert EncoderConfig(width=1000, heads=8, mlp="swiglu").resolved_mlp_hidden == 2688  # 2666.7 -> 2688
    wider = dataclasses.replace(cfg, width=1024, heads=16)
    assert wider.resolved_head_dim == 64 and wider.resolved_mlp_hidden == 4096
    assert EncoderConfig.preset("vit-b16") == cfg
    assert set(PRESETS) >= {"vit-ti16", "vit-s16", "vit-b16", "vit-l16"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"heads": 12, "kv_heads": 5}, "multiple of kv_heads=5"),
        ({"width": 770, "heads": 12}, "not divisible by heads=12"),
        ({"depth": 0}, "depth must be a positive int"),
        ({"mlp": "relu"}, "mlp must be one of"),
        ({"dropout": 1.0}, r"dropout must be in \[0, 1\)"),
        ({"position": "rope", "width": 36, "heads": 4}, "head_dim must be even"),
    ],
)
def test_encoder_config_rejects_bad_values(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(errors.ConfigError, match=message):
        EncoderConfig(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(errors.ConfigError, match="unknown encoder preset 'vit-x'"):
        EncoderConfig.preset("vit-x")
