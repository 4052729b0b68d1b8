"""The Markdown report and its cost-quality plot (matplotlib, from the ``plot`` extra).

The plot has two panels: quality (pass rate, or for open-ended items the preference against
the plain call) against mean calls per item, and against mean known tokens per item. Every arm
is a labelled point; the dashed step is the cost-quality frontier: the best quality an arm
reaches at or below each cost (its corners are the arms no other arm beats on both).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reasoning_graphs.evals.config import EvalConfig
from reasoning_graphs.evals.summary import ArmSummary, EvalSummary

__all__ = ["command_line", "frontier", "render_markdown", "write_plot"]

_ORACLE = {
    "graph": "the pattern's own use of the verifier (repair and tot choose their answer with it)",
    "single": "none",
    "best_of_n": "returns the first of N samples that passes the verifier (the oracle access the "
    "graph has); sample 0 when none passes",
    "self_consistency": "none: the majority answer of N samples",
}


def command_line(config: EvalConfig) -> str:
    """Return the ``reasoning-graphs eval`` command that reproduces a configuration."""
    args = ["reasoning-graphs", "eval", "--pattern", config.pattern, "--dataset", config.dataset]
    options: list[tuple[str, Any]] = [
        ("--n", config.n),
        ("--arms", ",".join(config.arms) if config.arms else None),
        ("--roster", ",".join(config.roster) if config.roster else None),
        ("--model", None if config.roster else config.model),
        ("--judge-model", config.judge_model),
        ("--samples", config.samples),
        ("--temperature", config.temperature),
        ("--sample-temperature", config.sample_temperature if config.sample_temperature != 0.7 else None),
        ("--max-tokens", config.max_tokens),
        ("--max-calls", config.max_calls),
        ("--seed", config.seed),
        ("--concurrency", config.concurrency if config.concurrency != 1 else None),
        ("--out", config.out),
    ]
    for flag, value in options:
        if value is not None:
            args += [flag, str(value)]
    if config.shuffle:
        args.append("--shuffle")
    for key, value in sorted(config.settings.items()):
        args += ["--set", f"{key}={value}" if isinstance(value, str) else f"{key}={_json(value)}"]
    return shlex.join(args)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


def frontier(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Return the points no other point beats on both cost (lower) and quality (higher), by cost."""
    best: list[tuple[float, float]] = []
    for cost, quality in sorted(points, key=lambda p: (p[0], -p[1])):
        if not best or quality > best[-1][1]:
            best.append((cost, quality))
    return best


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _arm_rows(arms: Sequence[ArmSummary], judged: bool) -> list[str]:
    quality = "preference vs single" if judged else "pass rate"
    rows = [
        f"| arm | {quality} | any-of-k | samples | calls/item | input tok/item | output tok/item "
        "| unknown-usage calls | failed calls | no answer | wall s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for a in arms:
        rows.append(
            f"| {a.arm} | {_pct(a.quality)} | {_pct(a.any_of_k)} | {a.samples} | {a.mean_calls:.2f} "
            f"| {a.mean_input_tokens:.0f} | {a.mean_output_tokens:.0f} | {a.unknown_usage_calls} "
            f"| {a.failed_calls} | {a.errors} | {a.wall_s:.1f} |"
        )
    return rows


def _comparison_rows(summary: EvalSummary) -> list[str]:
    rows = [
        "| graph vs | decided by | items | wins | ties | losses | judge failures | mean difference "
        "| 95% bootstrap interval |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for c in summary.comparisons:
        s = c.stats
        rows.append(
            f"| {c.other} | {c.basis} | {s.n} | {s.wins} | {s.ties} | {s.losses} | {s.judge_failures} "
            f"| {s.mean_diff:+.3f} | [{s.low:+.3f}, {s.high:+.3f}] |"
        )
    return rows


def render_markdown(
    summary: EvalSummary, config: EvalConfig, receipt: dict[str, Any], *, plot: str | None
) -> str:
    """Render the report (``plot`` is the PNG's file name beside it, if one was drawn)."""
    judged = any(c.basis == "judge" for c in summary.comparisons)
    dataset = receipt["dataset"]
    lines = [
        f"# Evaluation: {summary.pattern} on {Path(summary.dataset).name}",
        "",
        f"- Dataset: `{dataset['path']}` ({dataset['format']}, sha256 `{dataset['sha256'][:16]}...`), "
        f"{summary.items} items",
        f"- Models: {', '.join(config.members)}" + (f"; judge: {config.judge}" if judged else ""),
        f"- Answered by: {', '.join(receipt['models']['answered_by']) or 'nobody'}",
    ]
    if summary.samples is not None:
        how = "given" if config.samples else "the graph's mean calls per item, rounded"
        lines.append(
            f"- Sampling arms: N = {summary.samples} ({how}); temperature {config.sample_temperature}"
        )
    lines += [
        "- Receipt: `receipt.json` (configuration, dataset hash, versions, per-item records)",
        f"- Reproduce: `{command_line(config)}`",
        "",
    ]
    if plot:
        lines += [f"![quality against cost per arm]({plot})", ""]
    lines += ["## Arms", "", *_arm_rows(summary.arms, judged), ""]
    if summary.comparisons:
        lines += ["## Paired comparison (per item)", "", *_comparison_rows(summary), ""]
        lines.append(
            "A positive difference favours the graph. Judged items: win 1, tie 0, loss -1; the judge "
            "sees both answers blind in both orders, a disagreement between orders is a tie, and a "
            "judge failure counts as a tie and is reported in its own column."
            if judged
            else "A positive difference favours the graph (per item: passed minus passed)."
        )
        lines.append("")
    lines += ["## Verifier use by arm", ""]
    lines += [f"- `{a.arm}`: {_ORACLE.get(a.arm, 'see the pattern')}" for a in summary.arms]
    lines += [
        "",
        "Pass rates check the returned answer with the item's verifier; any-of-k says whether any "
        "candidate an arm produced passed (it is not an answer the arm returned).",
        "",
    ]
    return "\n".join(lines)


_NEAR_X = 0.15
"""Points closer than this share of the panel's x range (and ``_NEAR_Y`` in quality) stack labels."""
_NEAR_Y = 0.06
_COLORS = {"graph": "C0", "single": "C1", "best_of_n": "C2", "self_consistency": "C3"}


def write_plot(summary: EvalSummary, path: Path) -> bool:
    """Draw quality against calls and against tokens per arm, with the frontier.

    Filled points are the returned answers; hollow points, where an arm reports it, any-of-k
    (whether any candidate passed: a ceiling, not an answer the arm returned).

    Returns:
        False (drawing nothing) when matplotlib is not installed or no arm has a quality.
    """
    arms = [a for a in summary.arms if a.quality is not None]
    if not arms:
        return False
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
    except ImportError:
        return False
    judged = any(c.basis == "judge" for c in summary.comparisons)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), sharey=True)
    panels = [("mean calls per item", "mean_calls"), ("mean known tokens per item", "mean_tokens")]
    for ax, (label, attr) in zip(axes, panels, strict=True):
        points = [(float(getattr(a, attr)), float(a.quality or 0.0)) for a in arms]
        xs = [p[0] for p in points]
        span = (max(xs) - min(xs)) or 1.0
        # The frontier as a step: the best quality any arm reaches within each cost, carried to
        # the right edge, so a frontier of one arm is still a visible line.
        edge = frontier(points)
        ax.step(
            [p[0] for p in edge] + [max(xs) + 0.2 * span],
            [p[1] for p in edge] + [edge[-1][1]],
            "--",
            where="post",
            color="0.6",
            zorder=1,
        )
        placed: list[tuple[float, float]] = []
        for arm, (x, y) in zip(arms, points, strict=True):
            color = _COLORS.get(arm.arm, "C4")
            ax.scatter([x], [y], s=70, color=color, zorder=3)
            if arm.any_of_k is not None:
                ax.scatter([x], [arm.any_of_k], s=70, facecolors="none", edgecolors=color, zorder=3)
            # Labels of nearby points (not only equal ones) go one line higher each, so none overlap.
            stacked = sum(abs(px - x) <= _NEAR_X * span and abs(py - y) <= _NEAR_Y for px, py in placed)
            placed.append((x, y))
            ax.annotate(
                arm.arm, (x, y), textcoords="offset points", xytext=(7, 6 + 12 * stacked), color=color
            )
        ax.set_xlabel(label)
        ax.margins(x=0.25)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("preference vs single" if judged else "pass rate of the returned answer")
    axes[0].set_ylim(-0.05, 1.1)
    handles = [Line2D([], [], ls="--", color="0.6", label="cost-quality frontier")]
    if any(a.any_of_k is not None for a in arms):
        handles.append(
            Line2D([], [], ls="", marker="o", mfc="none", mec="0.3", label="any-of-k (not returned)")
        )
    axes[1].legend(handles=handles, loc="upper right", fontsize="small")
    fig.suptitle(f"{summary.pattern} on {Path(summary.dataset).name} ({summary.items} items)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
