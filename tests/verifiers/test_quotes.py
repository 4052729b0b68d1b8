"""Quotes in evidence: every quoted span must occur in the evidence text."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reasoning_graphs.errors import InputError
from reasoning_graphs.verifiers import QuotesInEvidence, find_quotes, from_spec

EVIDENCE = (
    "The committee found that costs rose by 12%.\nIt called the plan \u201cambitious but unfunded\u201d."
)


def test_find_quotes_reads_straight_and_curly_quotes() -> None:
    text = 'He said "costs rose" and \u201cunfunded\u201d, not \u2018this\u2019 or it\'s.'
    assert find_quotes(text) == ["costs rose", "unfunded"]


def test_every_quote_must_occur() -> None:
    verifier = QuotesInEvidence(EVIDENCE)
    assert verifier('It says "costs   rose by 12%" and \u201cAmbitious but unfunded\u201d.').passed
    assert verifier("No quotes at all.").passed
    verdict = verifier('"costs rose" but "costs fell" and "nobody agreed"')
    assert not verdict.passed
    assert verdict.score == pytest.approx(1 / 3)
    assert verdict.feedback == "2 of 3 quotes are not in the evidence: 'costs fell'; 'nobody agreed'."
    assert verdict.details["missing"] == ["costs fell", "nobody agreed"]


def test_ellipsis_splits_a_quote() -> None:
    verifier = QuotesInEvidence(EVIDENCE)
    assert verifier('"The committee found ... 12%"').passed
    assert not verifier('"The committee found \u2026 15%"').passed


@given(st.text(alphabet=st.characters(blacklist_characters='"\u201c\u201d'), min_size=1).filter(str.strip))
def test_a_span_of_the_evidence_always_passes(span: str) -> None:
    evidence = f"prefix {span} suffix"
    assert QuotesInEvidence(evidence)(f'as "{span}" says').passed


def test_task_text_is_the_evidence_by_default() -> None:
    verifier = QuotesInEvidence()
    assert verifier('"ambitious"', EVIDENCE).passed
    assert not verifier('"ambitious"', "other text").passed
    assert verifier.spec == "quotes-in:"


def test_evidence_file_and_spec(tmp_path: Path) -> None:
    path = tmp_path / "evidence.txt"
    path.write_text(EVIDENCE, encoding="utf-8")
    verifier = from_spec(f"quotes-in:{path}")
    assert isinstance(verifier, QuotesInEvidence)
    assert verifier.spec == f"quotes-in:{path}"
    assert verifier('"costs rose"').passed
    with pytest.raises(InputError, match=r"the evidence file .* does not exist"):
        QuotesInEvidence.from_file(str(tmp_path / "missing.txt"))
    with pytest.raises(InputError, match="no spec"):
        _ = QuotesInEvidence("in memory").spec
