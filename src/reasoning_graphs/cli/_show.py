"""Readable text for ``show``: a thread's state as indented sections."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["render"]

_SHOWN = frozenset(
    {
        "thread_id", "graph", "role", "stop_reason", "passed", "attempts", "next", "history", "outputs",
        "final_answer", "usage", "tree", "access", "reads", "budget", "candidate", "candidate_model",
        "messages", "tool_calls",
    }
)  # fmt: skip
_MAX_LINES = 40


def _block(text: object, indent: str) -> str:
    return "\n".join(indent + line for line in str(text).splitlines() or [""])


def _history(state: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for number, attempt in enumerate(state.get("history") or [], start=1):
        verdict = "passed" if attempt.get("passed") else "failed"
        lines += [
            f"\nattempt {number} ({attempt.get('model')}) {verdict}",
            _block(attempt.get("answer", ""), "    "),
        ]
        if attempt.get("feedback"):
            lines += ["  feedback:", _block(attempt["feedback"], "    ")]
    return lines


def _outputs(state: dict[str, Any]) -> list[str]:
    outputs = state.get("outputs") or {}
    if not outputs or state.get("history"):
        return []
    lines = ["\noutputs:"]
    for label, output in outputs.items():
        who = ", ".join(x for x in (output.get("role"), output.get("model")) if x)
        lines += [f"  {label}" + (f" ({who})" if who else ""), _block(output.get("text", ""), "      ")]
    return lines


def _tool_calls(state: dict[str, Any]) -> list[str]:
    calls = state.get("tool_calls") or []
    if not calls:
        return []
    lines = ["\ntool calls:"]
    for call in calls:
        args = ", ".join(f"{k}={v!r}" for k, v in (call.get("args") or {}).items())
        mark = "  [error]" if call.get("error") else ""
        result = " ".join(str(call.get("result", "")).split())
        lines.append(f"  {call.get('tool')}({args}) -> {result[:200]}{mark}")
    return lines


def _rest(state: dict[str, Any]) -> list[str]:
    lines: list[str] = _tool_calls(state)
    tree = state.get("tree")
    if tree:
        from reasoning_graphs.graphs import render_tree

        lines += ["\ntree:", _block(render_tree(tree), "  ")]
    for key, value in state.items():
        if key in _SHOWN or value in (None, [], {}, ""):
            continue
        text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
        body = text.splitlines()
        if len(body) > _MAX_LINES:
            body = [*body[:_MAX_LINES], f"... ({len(body) - _MAX_LINES} more lines; use --json)"]
        lines += [f"\n{key}:", _block("\n".join(body), "    ")]
    return lines


def _usage(state: dict[str, Any]) -> list[str]:
    usage = state.get("usage")
    if not isinstance(usage, dict) or "total" not in usage:
        return []
    t = usage["total"]
    return [
        f"\nusage: {t['calls']} calls, {t['input_tokens']} in / {t['output_tokens']} out tokens, "
        f"{t['failed_calls']} failed, {t['unknown_usage_calls']} unknown-usage"
    ]


def render(state: dict[str, Any]) -> str:
    """Render a JSON-ready state (or role view) for a terminal."""
    header = ("thread_id", "graph", "role", "stop_reason", "passed", "attempts", "next")
    lines = [f"{k}: {state[k]}" for k in header if k in state]
    lines += _history(state) + _outputs(state) + _rest(state)
    if "final_answer" in state:
        lines += ["\nfinal answer:", _block(state.get("final_answer"), "    ")]
    return "\n".join(lines + _usage(state))
