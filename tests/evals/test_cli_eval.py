from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from reasoning_graphs.cli._eval import add_eval_parser, cmd_eval
from reasoning_graphs.errors import InputError
from reasoning_graphs.evals import read_receipt
from tests.evals.test_receipt import script


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_eval_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["eval", *argv])


def test_eval_command_runs_and_prints_where_the_report_is(
    tmp_path: Path, gsm8k_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    model = f"fake:{script(tmp_path)}"
    args = parse(
        "--pattern", "repair", "--dataset", str(gsm8k_file), "--n", "2", "--model", model,
        "--arms", "graph,single", "--set", "max_attempts=2", "--seed", "3", "--out", str(out),
    )  # fmt: skip
    assert cmd_eval(args) == 0
    printed = capsys.readouterr()
    assert f"report:  {out / 'report.md'}" in printed.out and "graph vs single" in printed.out
    assert "graph" in printed.err and "2/2" in printed.err  # the progress bars
    receipt = read_receipt(out / "receipt.json")
    assert receipt["config"]["settings"] == {"max_attempts": 2} and receipt["config"]["seed"] == 3
    assert "--set max_attempts=2" in (out / "report.md").read_text(encoding="utf-8")

    again = tmp_path / "again"
    assert (
        cmd_eval(parse("--from-receipt", str(out / "receipt.json"), "--out", str(again), "--json", "--quiet"))
        == 0
    )
    printed = capsys.readouterr()
    payload = json.loads(printed.out)
    assert payload["receipt"] == str(again / "receipt.json") and printed.err == ""
    records = read_receipt(again / "receipt.json")["records"]
    untimed = [{k: v for k, v in r.items() if k not in ("wall_s", "resumed")} for r in records]
    assert untimed == [
        {k: v for k, v in r.items() if k not in ("wall_s", "resumed")} for r in receipt["records"]
    ]


def test_eval_command_reports_bad_input(gsm8k_file: Path) -> None:
    with pytest.raises(InputError, match="--pattern"):
        cmd_eval(parse("--dataset", str(gsm8k_file)))
    with pytest.raises(InputError, match="concurrency"):
        cmd_eval(parse("--pattern", "repair", "--dataset", str(gsm8k_file), "--concurrency", "100"))
    with pytest.raises(InputError, match="unknown pattern"):
        cmd_eval(parse("--pattern", "nope", "--dataset", str(gsm8k_file)))
    with pytest.raises(SystemExit):
        parse("--arms", "graph,bogus")


def test_an_interrupted_eval_command_says_how_to_resume(
    gsm8k_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("reasoning_graphs.evals.run_eval", interrupted)
    assert cmd_eval(parse("--pattern", "repair", "--dataset", str(gsm8k_file))) == 130
    assert "run the same command again to resume" in capsys.readouterr().err
