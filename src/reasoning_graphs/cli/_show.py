"""Readable text for ``show``: a thread's state as indented sections."""

from __future__ import annotations

from typing import Any

__all__ = ["render"]


def _block(text: object, indent: str) -> str:
    return "\n".join(indent + line for line in str(text).splitlines() or [""])


def render(state: dict[str, Any]) -> str:
    """Render a JSON-ready state (or role view) for a terminal."""
    lines: list[str] = []
    for key in ("thread_id", "graph", "role", "stop_reason", "passed", "attempts", "next"):
        if key in state:
            lines.append(f"{key}: {state[key]}")
    for attempt_no, attempt in enumerate(state.get("history") or [], start=1):
        verdict = "passed" if attempt.get("passed") else "failed"
        lines.append(f"\nattempt {attempt_no} ({attempt.get('model')}) {verdict}")
        lines.append(_block(attempt.get("answer", ""), "    "))
        if attempt.get("feedback"):
            lines.append("  feedback:")
            lines.append(_block(attempt["feedback"], "    "))
    outputs = state.get("outputs") or {}
    if outputs and not state.get("history"):
        lines.append("\noutputs:")
        for label, output in outputs.items():
            who = ", ".join(x for x in (output.get("role"), output.get("model")) if x)
            lines.append(f"  {label}" + (f" ({who})" if who else ""))
            lines.append(_block(output.get("text", ""), "      "))
    if "final_answer" in state:
        lines.append("\nfinal answer:")
        lines.append(_block(state.get("final_answer"), "    "))
    usage = state.get("usage")
    if isinstance(usage, dict) and "total" in usage:
        total = usage["total"]
        lines.append(
            f"\nusage: {total['calls']} calls, {total['input_tokens']} in / {total['output_tokens']} out"
            f" tokens, {total['failed_calls']} failed, {total['unknown_usage_calls']} unknown-usage"
        )
    return "\n".join(lines)
