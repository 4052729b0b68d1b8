from __future__ import annotations

from pathlib import Path

import pytest

from reasoning_graphs.evals import EvalConfig, read_receipt, run_eval
from tests.conftest import DATA


@pytest.mark.local_model
def test_repair_against_its_controls_on_one_mbpp_task_with_the_embedded_model(tmp_path: Path) -> None:
    config = EvalConfig(
        pattern="repair",
        dataset=str(DATA / "mbpp_sanitized.jsonl"),
        n=1,
        model="local:smollm2",
        max_tokens=96,
        settings={"max_attempts": 2},
        out=str(tmp_path / "run"),
    )
    result = run_eval(config, stream=None)
    receipt = read_receipt(result.receipt)
    graph = next(r for r in result.records if r.arm == "graph")
    assert graph.calls in (1, 2) and graph.models == ["local:smollm2"] and graph.input_tokens > 0
    single = next(r for r in result.records if r.arm == "single")
    assert single.calls == 1 and single.output_tokens <= 96
    spec = receipt["models"]["specs"][0]
    assert spec["provider"] == "local" and len(spec["sha256"]) == 64
    assert result.report.is_file()
