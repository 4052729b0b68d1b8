from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasoning_graphs.errors import InputError
from reasoning_graphs.evals import read_receipt, run_eval
from reasoning_graphs.evals.table import main, results_table
from tests.evals.test_receipt import config


def test_the_table_shows_each_run_from_its_receipt_with_its_command(tmp_path: Path, gsm8k_file: Path) -> None:
    result = run_eval(config(tmp_path, gsm8k_file, "runs/repair-gsm8k"), stream=None)
    summary = read_receipt(result.receipt)["summary"]
    graph = next(a for a in summary["arms"] if a["arm"] == "graph")
    single = next(a for a in summary["arms"] if a["arm"] == "single")
    vs_single = next(c["stats"] for c in summary["comparisons"] if c["other"] == "single")

    text = results_table([tmp_path / "runs"], relative_to=tmp_path)
    header, _rule, row, *rest = text.splitlines()
    assert header.startswith("| run | items | graph | single | best-of-N | self-consistency |")
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "[repair on gsm8k_tiny.jsonl](runs/repair-gsm8k/report.md)"
    assert cells[1] == "4"
    assert cells[2] == f"{100 * graph['pass_rate']:.0f}% @ {graph['mean_calls']:.1f} calls"
    assert cells[3] == f"{100 * single['pass_rate']:.0f}% @ 1.0 calls"
    wtl = f"{vs_single['wins']}W/{vs_single['ties']}T/{vs_single['losses']}L"
    assert f"vs single: {wtl}, diff {vs_single['mean_diff']:+.2f}" in cells[6]
    command = rest[-1]
    assert command.startswith("- repair: `reasoning-graphs eval --pattern repair --dataset ")
    assert "--seed 11" in command and f"--out {tmp_path / 'runs/repair-gsm8k'}" in command


def test_bad_paths_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InputError, match="does not exist"):
        results_table([tmp_path / "nope"])
    with pytest.raises(InputError, match=r"no receipt\.json"):
        results_table([tmp_path])
    (tmp_path / "receipt.json").write_text(json.dumps({"receipt_version": 0}))
    assert main([str(tmp_path / "receipt.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a version-" in err
