"""Mechanical checks of the perspectives graph: views, matrix, synthesis, caps (private).

Everything here is code, never a model: quotations are found verbatim in the snapshot, topics and
judgments are compared with the agenda, the matrix is computed from the validated views, and the
recommendation is capped by missing views and hard gates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reasoning_graphs.graphs._perspectives_parts import (
    RECOMMENDATIONS,
    Agenda,
    FollowUp,
    Gate,
    Matrix,
    MatrixStatus,
    Recommendation,
    SynthesisReply,
    TopicAnswer,
    TopicJudgment,
    TopicJudgmentReply,
    TopicRow,
    View,
    ViewReply,
)

__all__ = [
    "OVERALL",
    "apply_caps",
    "build_matrix",
    "canonical",
    "check_synthesis",
    "check_view",
    "compare_row",
    "quote_problem",
]

OVERALL = "(overall position)"
"""The matrix row comparing the roles' overall positions."""


def canonical(value: str, allowed: Sequence[str]) -> str | None:
    """Return the member of ``allowed`` that ``value`` names (case and spacing ignored), or None."""
    wanted = " ".join(value.split()).casefold()
    return next((a for a in allowed if " ".join(a.split()).casefold() == wanted), None)


def quote_problem(quote: str, evidence: str, min_chars: int) -> str | None:
    """Return why ``quote`` is not a verbatim passage of ``evidence``, or None when it is."""
    text = quote.strip()
    if len(text) < min_chars:
        return f"the quotation {text!r} is shorter than {min_chars} characters"
    if text not in evidence:
        shown = text if len(text) <= 120 else text[:117] + "..."
        return f"the quotation {shown!r} does not occur verbatim in the snapshot; copy an exact passage"
    return None


def _check_topic(
    item: TopicJudgmentReply, topic: str, agenda: Agenda, snapshot: str, min_chars: int
) -> tuple[TopicJudgment, list[str]]:
    errors: list[str] = []
    judgment = canonical(item.judgment, agenda.judgments)
    if judgment is None:
        errors.append(f"topic {topic!r}: judgment {item.judgment!r} is not one of {agenda.judgments}")
    if not item.reason.strip():
        errors.append(f"topic {topic!r}: the reason is empty")
    quotes = [q.strip() for q in item.quotes]
    if not quotes and (judgment is None or judgment != agenda.unknown):
        errors.append(f"topic {topic!r}: give at least one quotation from the snapshot")
    for quote in quotes:
        problem = quote_problem(quote, snapshot, min_chars)
        if problem:
            errors.append(f"topic {topic!r}: {problem}")
    made = TopicJudgment(
        topic=topic, judgment=judgment or item.judgment, reason=item.reason.strip(), quotes=quotes
    )
    return made, errors


def check_view(
    reply: ViewReply, *, role: str, agenda: Agenda, snapshot: str, min_quote_chars: int
) -> tuple[View | None, list[str]]:
    """Check a view in code; return (the view, []) when valid, else (None, every problem)."""
    errors: list[str] = []
    position = canonical(reply.position, agenda.judgments)
    if position is None:
        errors.append(f"position {reply.position!r} is not one of {agenda.judgments}")
    if not reply.summary.strip():
        errors.append("summary is empty")
    if not reply.trade_off.strip():
        errors.append("trade_off is empty: name the main trade-off you see")
    judged: dict[str, TopicJudgment] = {}
    for number, item in enumerate(reply.judgments, 1):
        topic = canonical(item.topic, agenda.topics)
        if topic is None:
            errors.append(f"judgment {number}: topic {item.topic!r} is not one of the topics {agenda.topics}")
        elif topic in judged:
            errors.append(f"topic {topic!r} is judged twice: judge each topic once")
        else:
            judged[topic], found = _check_topic(item, topic, agenda, snapshot, min_quote_chars)
            errors.extend(found)
    errors.extend(f"topic {t!r} is not covered: judge every topic" for t in agenda.topics if t not in judged)
    if errors or position is None:
        return None, errors
    view = View(
        role=role,
        position=position,
        summary=reply.summary.strip(),
        judgments=[judged[t] for t in agenda.topics],
        trade_off=reply.trade_off.strip(),
    )
    return view, []


def compare_row(
    topic: str, judgments: Mapping[str, str], roles: Sequence[str], unknown: str | None
) -> TopicRow:
    """Compare the roles on one topic: consensus needs every role, disagreement keeps every group."""
    available = [r for r in roles if r in judgments]
    missing = [r for r in roles if r not in judgments]
    groups: dict[str, list[str]] = {}
    for role in available:
        groups.setdefault(judgments[role], []).append(role)
    status: MatrixStatus
    if not available:
        status = "no_views"
    elif len(groups) > 1:
        status = "disagreement"
    else:
        status = "agreement_among_available" if missing else "consensus"
    unknown_roles = list(groups.get(unknown, [])) if unknown is not None else []
    return TopicRow(
        topic=topic,
        judgments={r: judgments[r] for r in available},
        groups=dict(sorted(groups.items())),
        missing=missing,
        status=status,
        unknown_roles=unknown_roles,
        shared_unknown=len(unknown_roles) >= 2,
    )


def build_matrix(agenda: Agenda, roles: Sequence[str], views: Mapping[str, View]) -> Matrix:
    """Compute the comparison matrix from the validated views."""
    available = [r for r in roles if r in views]
    rows = []
    for topic in agenda.topics:
        found = {r: views[r].judgment_on(topic) for r in available}
        rows.append(
            compare_row(topic, {r: j for r, j in found.items() if j is not None}, roles, agenda.unknown)
        )
    overall = compare_row(OVERALL, {r: views[r].position for r in available}, roles, agenda.unknown)
    return Matrix(
        roles=list(roles),
        available=available,
        missing=[r for r in roles if r not in views],
        rows=rows,
        overall=overall,
    )


def _answered(items: Sequence[TopicAnswer | FollowUp], topics: Sequence[str], errors: list[str]) -> set[str]:
    named: set[str] = set()
    for item in items:
        topic = canonical(item.topic, topics)
        text = item.answer if isinstance(item, TopicAnswer) else item.follow_up
        kind = "resolution" if isinstance(item, TopicAnswer) else "follow-up"
        if topic is None:
            errors.append(f"{kind} names {item.topic!r}, which is not a topic; use one of {list(topics)}")
        elif not text.strip():
            errors.append(f"the {kind} for {topic!r} is empty")
        else:
            named.add(topic)
    return named


def check_synthesis(reply: SynthesisReply, matrix: Matrix, topics: Sequence[str]) -> list[str]:
    """Check a synthesis in code: it must answer every disagreement and every shared unknown."""
    errors: list[str] = []
    rec = canonical(reply.recommendation, RECOMMENDATIONS)
    if rec is None:
        errors.append(f"recommendation {reply.recommendation!r} is not one of {list(RECOMMENDATIONS)}")
    if rec == "conditional" and not [c for c in reply.conditions if c.strip()]:
        errors.append("a conditional recommendation needs at least one condition")
    if not reply.rationale.strip():
        errors.append("rationale is empty")
    names = [*topics, OVERALL]
    resolved = _answered(reply.resolutions, names, errors)
    open_ = _answered(reply.unresolved, names, errors)
    for row in matrix.disagreements:
        if row.topic not in resolved | open_:
            groups = "; ".join(f"{j}: {', '.join(rs)}" for j, rs in row.groups.items())
            errors.append(
                f"the disagreement on {row.topic!r} ({groups}) is not answered: resolve it in "
                "resolutions or list it in unresolved with a follow-up"
            )
    for row in matrix.shared_unknowns:
        if row.topic not in open_:
            errors.append(
                f"{row.topic!r} is unknown to {', '.join(row.unknown_roles)}: "
                "list it in unresolved with a follow-up"
            )
    return errors


def apply_caps(
    proposed: str, *, matrix: Matrix, gates: Sequence[Gate], views: Mapping[str, View], valid: bool
) -> tuple[Recommendation, list[str]]:
    """Cap the proposed recommendation: missing views and an invalid synthesis defer; gates cap.

    Returns:
        The recommendation after every cap, and one line per cap that lowered or held it.
    """
    rec: Recommendation = canonical(proposed, RECOMMENDATIONS) or "defer"  # type: ignore[assignment]
    caps: list[tuple[Recommendation, str]] = []
    if matrix.missing:
        caps.append(("defer", f"views missing from {', '.join(matrix.missing)}: at most defer"))
    if not valid:
        caps.append(("defer", "the synthesis did not pass its checks: at most defer"))
    for gate in gates:
        view = views.get(gate.role)
        if view is None:
            continue
        seen = view.position if gate.topic is None else view.judgment_on(gate.topic)
        if seen == gate.judgment:
            where = "overall" if gate.topic is None else f"on {gate.topic!r}"
            caps.append((gate.cap, f"gate: {gate.role} judged {gate.judgment!r} {where}: at most {gate.cap}"))
    applied = []
    for cap, why in caps:
        if RECOMMENDATIONS.index(cap) < RECOMMENDATIONS.index(rec):
            rec = cap
        applied.append(why)
    return rec, applied
