"""Reports of a finished perspectives run: JSON, Markdown and CSV (private; re-exported).

Each function takes the run's result (the dict ``invoke`` returns, or the same loaded back from
the JSON report) and renders it; nothing here calls a model or changes the matrix.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic_core import to_jsonable_python

from reasoning_graphs.graphs._perspectives_parts import Agenda, Matrix, RoleSpec, StepAttempt, Synthesis, View
from reasoning_graphs.graphs._perspectives_prompts import render_matrix
from reasoning_graphs.types import Usage

__all__ = ["to_csv", "to_json", "to_markdown", "write_report"]

_ORDER = (
    "final_answer",
    "stop_reason",
    "recommendation",
    "caps",
    "agenda",
    "panel",
    "gates",
    "missing",
    "matrix",
    "views",
    "synthesis",
    "attempts",
    "usage",
    "snapshot",
)


def _matrix(result: Mapping[str, Any]) -> Matrix:
    raw = result.get("matrix")
    if raw is None:
        raise ValueError("the result has no 'matrix'; pass the output of a finished perspectives run")
    return Matrix.model_validate(raw)


def to_json(result: Mapping[str, Any]) -> str:
    """Return the whole result as indented JSON (report keys first)."""
    _matrix(result)
    keys = [k for k in _ORDER if k in result] + sorted(k for k in result if k not in _ORDER)
    return json.dumps(to_jsonable_python({k: result[k] for k in keys}), indent=2, ensure_ascii=False)


def to_csv(result: Mapping[str, Any]) -> str:
    """Return the comparison matrix as CSV: one row per topic (and the overall positions)."""
    matrix = _matrix(result)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["topic", *matrix.roles, "status", "shared_unknown", "unknown_roles"])
    for row in (*matrix.rows, matrix.overall):
        cells = [row.judgments.get(r, "missing") for r in matrix.roles]
        writer.writerow(
            [row.topic, *cells, row.status, str(row.shared_unknown).lower(), ";".join(row.unknown_roles)]
        )
    return buffer.getvalue()


def _view_lines(view: View, criteria: str) -> list[str]:
    lines = [
        f"### {view.role}: {view.position}",
        "",
        f"*Criteria:* {criteria}",
        "",
        f"{view.summary}",
        "",
        f"*Trade-off:* {view.trade_off}",
        "",
    ]
    for item in view.judgments:
        quotes = "; ".join(f"“{q}”" for q in item.quotes) or "no quotation"
        lines.append(f"- **{item.topic}**: {item.judgment}. {item.reason} ({quotes})")
    return [*lines, ""]


def _synthesis_lines(synthesis: Synthesis) -> list[str]:
    lines = ["## Synthesis", "", f"*Proposed:* {synthesis.recommendation}", "", synthesis.rationale, ""]
    sections: list[tuple[str, list[str]]] = [
        ("Conditions", synthesis.conditions),
        ("Resolved disagreements", [f"**{a.topic}**: {a.answer}" for a in synthesis.resolutions]),
        ("Unresolved (with follow-ups)", [f"**{u.topic}**: {u.follow_up}" for u in synthesis.unresolved]),
        ("Problems the synthesis never fixed", synthesis.violations),
    ]
    for title, items in sections:
        if items:
            lines += [f"### {title}", "", *(f"- {i}" for i in items), ""]
    return lines


def to_markdown(result: Mapping[str, Any]) -> str:
    """Return a readable report: recommendation and caps, matrix, views, synthesis, usage."""
    matrix = _matrix(result)
    agenda = Agenda.model_validate(result["agenda"]) if result.get("agenda") else None
    criteria = {
        RoleSpec.model_validate(r).name: RoleSpec.model_validate(r).criteria
        for r in result.get("panel") or []
    }
    lines = ["# Perspectives report", ""]
    if agenda is not None:
        lines += [f"**Question:** {agenda.question}", ""]
    lines += [
        f"**Recommendation:** {result.get('recommendation') or 'none'} "
        f"(stop reason: {result.get('stop_reason')})",
        "",
    ]
    lines += [f"- capped: {c}" for c in result.get("caps") or []]
    lines += ["", "## Comparison matrix (computed in code)", "", render_matrix(matrix), ""]
    attempts = [StepAttempt.model_validate(a) for a in result.get("attempts") or []]
    if matrix.missing:
        lines += ["## Missing views", ""]
        for role in matrix.missing:
            last = [a for a in attempts if a.role == role]
            why = "; ".join(last[-1].errors) if last else "never attempted (budget)"
            lines.append(f"- **{role}** ({len(last)} attempt(s)): {why}")
        lines.append("")
    views = {k: View.model_validate(v) for k, v in (result.get("views") or {}).items()}
    if views:
        lines += ["## Views", ""]
        for role in matrix.roles:
            if role in views:
                lines += _view_lines(views[role], criteria.get(role, ""))
    if result.get("synthesis") is not None:
        lines += _synthesis_lines(Synthesis.model_validate(result["synthesis"]))
    usage = Usage.model_validate(result["usage"]) if result.get("usage") is not None else Usage()
    lines += [
        "## Usage",
        "",
        f"{usage.total.calls} calls, {usage.total.input_tokens} input and "
        f"{usage.total.output_tokens} output tokens, {usage.total.schema_repairs} schema repairs",
        "",
    ]
    return "\n".join(lines)


def write_report(result: Mapping[str, Any], directory: str | Path) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and ``matrix.csv`` into ``directory`` (created if needed).

    Returns:
        The written paths by format (``json``, ``markdown``, ``csv``).
    """
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / "report.json", "markdown": folder / "report.md", "csv": folder / "matrix.csv"}
    paths["json"].write_text(to_json(result) + "\n", encoding="utf-8")
    paths["markdown"].write_text(to_markdown(result), encoding="utf-8")
    paths["csv"].write_text(to_csv(result), encoding="utf-8")
    return paths
