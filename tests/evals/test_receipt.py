from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasoning_graphs.evals import EvalConfig, read_receipt, run_eval, write_report
from reasoning_graphs.evals.datasets import file_sha256
from tests.evals.conftest import QUESTIONS


def script(tmp_path: Path) -> Path:
    """A routed fake: right for two questions, always wrong for the other two (deterministic)."""
    routes = [
        {"match": QUESTIONS[0][0], "reply": "The answer is 5."},
        {"match": QUESTIONS[1][0], "reply": "The answer is 20."},
        {"match": QUESTIONS[2][0], "reply": "The answer is 3."},
        {"match": QUESTIONS[3][0], "reply": "I think 4."},
    ]
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"routes": routes}), encoding="utf-8")
    return path


def config(tmp_path: Path, gsm8k_file: Path, out: str) -> EvalConfig:
    return EvalConfig(
        pattern="repair",
        dataset=str(gsm8k_file),
        model=f"fake:{script(tmp_path)}",
        seed=11,
        out=str(tmp_path / out),
    )


def test_the_receipt_is_complete(tmp_path: Path, gsm8k_file: Path) -> None:
    cfg = config(tmp_path, gsm8k_file, "run")
    result = run_eval(cfg, stream=None)
    receipt = read_receipt(result.receipt)
    assert EvalConfig.model_validate(receipt["config"]) == cfg
    assert receipt["dataset"] == {
        "path": str(gsm8k_file.resolve()),
        "sha256": file_sha256(gsm8k_file),
        "format": "gsm8k",
        "item_ids": ["gsm8k/0", "gsm8k/1", "gsm8k/2", "gsm8k/3"],
    }
    versions = receipt["versions"]
    assert versions["python"] and versions["langgraph"] and versions["reasoning-graphs"]
    (spec,) = receipt["models"]["specs"]
    assert spec["spec"] == cfg.model and spec["sha256"] == file_sha256(script(tmp_path))
    assert receipt["models"]["answered_by"] == [cfg.model]
    assert receipt["seeds"]["seed"] == 11 and receipt["matched_samples"] == 2
    assert receipt["seeds"]["sample_seeds"] == [11, 12]
    records = receipt["records"]
    assert len(records) == 4 * 4 and {r["arm"] for r in records} == {
        "graph",
        "single",
        "best_of_n",
        "self_consistency",
    }
    assert all(r["thread_id"].startswith(receipt["fingerprint"] + "/") for r in records)
    graph = {r["item"]: r for r in records if r["arm"] == "graph"}
    assert [graph[i]["passed"] for i in receipt["dataset"]["item_ids"]] == [True, False, True, False]
    assert graph["gsm8k/1"]["stop_reason"] == "no_progress" and graph["gsm8k/1"]["calls"] == 2
    assert receipt["summary"]["arms"][0]["arm"] == "graph"
    assert (result.out_dir / "report.md").is_file() and (result.out_dir / "plot.png").read_bytes()[
        :4
    ] == b"\x89PNG"


def test_rerunning_a_receipt_s_config_reproduces_every_record(tmp_path: Path, gsm8k_file: Path) -> None:
    first = run_eval(config(tmp_path, gsm8k_file, "first"), stream=None)
    stored = read_receipt(first.receipt)
    again = EvalConfig.model_validate(stored["config"]).model_copy(update={"out": str(tmp_path / "second")})
    second = run_eval(again, stream=None)
    assert [r.comparable() for r in second.records] == [r.comparable() for r in first.records]

    def untimed(summary: dict[str, Any]) -> dict[str, Any]:
        return summary | {"arms": [{k: v for k, v in a.items() if k != "wall_s"} for a in summary["arms"]]}

    assert untimed(read_receipt(second.receipt)["summary"]) == untimed(stored["summary"])
    assert stored["summary"]["comparisons"]  # the paired statistics are part of what is reproduced


def test_the_receipt_is_written_before_anything_is_summarized(
    tmp_path: Path, gsm8k_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(receipt: Any) -> Any:
        raise RuntimeError("summary failed")

    monkeypatch.setattr("reasoning_graphs.evals.runner.summarize", broken)
    cfg = config(tmp_path, gsm8k_file, "run").model_copy(update={"n": 2})
    with pytest.raises(RuntimeError, match="summary failed"):
        run_eval(cfg, stream=None)
    receipt = read_receipt(tmp_path / "run" / "receipt.json")
    assert "summary" not in receipt and len(receipt["records"]) == 2 * 4
    monkeypatch.undo()
    summary, report, _ = write_report(tmp_path / "run" / "receipt.json")
    assert summary.items == 2 and "Reproduce" in report.read_text(encoding="utf-8")
