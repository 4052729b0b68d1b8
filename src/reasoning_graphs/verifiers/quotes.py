"""Quotes-in-evidence: every span the candidate quotes must occur in the evidence text.

Used wherever an answer cites a source (adversarial advocates, perspectives): a quotation is a
mechanical claim, so it is checked in code, never by asking a model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import JsonValue

from .._files import read_user_text
from ..errors import InputError
from ..types import Verdict

__all__ = ["QuotesInEvidence", "find_quotes"]

_QUOTE = re.compile('["\u201c\u201d]([^"\u201c\u201d]+)["\u201c\u201d]')
_ELLIPSIS = re.compile(r"\.\.\.|\u2026")
_SHOWN = 120


def _show(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "...")


def find_quotes(text: str) -> list[str]:
    """Return the spans quoted with straight (``"``) or curly (``“ ”``) double quotes.

    Single quotes are not read as quotes: they double as apostrophes.

    Args:
        text: Any text.

    Returns:
        The quoted spans, in order, stripped of surrounding spaces; empty spans are dropped.
    """
    return [q.strip() for q in _QUOTE.findall(text) if q.strip()]


def _squash(text: str) -> str:
    """Casefold, straighten curly apostrophes and collapse whitespace."""
    return " ".join(text.replace("\u2019", "'").replace("\u2018", "'").casefold().split())


@dataclass(frozen=True, slots=True)
class QuotesInEvidence:
    """Pass when every quoted span of the candidate occurs verbatim in the evidence.

    Matching ignores case (a quote may start mid-sentence), whitespace and curly apostrophes;
    otherwise a quote must be verbatim. An ellipsis (``...``) inside a quote splits it into
    parts that must each occur. With neither ``evidence`` nor ``path``, the task text is the
    evidence. A candidate without quotes passes.
    """

    evidence: str | None = None
    """The evidence text (read from ``path`` when built from a file)."""
    path: str | None = None
    """The evidence file, as given in the spec."""

    @classmethod
    def from_file(cls, path: str) -> QuotesInEvidence:
        """Build the verifier from an evidence file.

        Args:
            path: A UTF-8 text file.

        Returns:
            The verifier.

        Raises:
            InputError: The file cannot be read.
        """
        return cls(evidence=read_user_text(path, "the evidence file"), path=path)

    @property
    def spec(self) -> str:
        """``quotes-in:PATH`` (``quotes-in:`` when the task is the evidence)."""
        if self.path is None and self.evidence is not None:
            raise InputError("QuotesInEvidence built from in-memory text has no spec; use from_file(path)")
        return f"quotes-in:{self.path or ''}"

    def __call__(self, candidate: str, task: str = "") -> Verdict:
        """Check every quoted span of the candidate against the evidence."""
        evidence = _squash(self.evidence if self.evidence is not None else task)
        quotes = find_quotes(candidate)
        missing = [
            q
            for q in quotes
            if not all(_squash(part) in evidence for part in _ELLIPSIS.split(q) if part.strip())
        ]
        details: dict[str, JsonValue] = {"quotes": len(quotes), "missing": list(missing)}
        if not missing:
            return Verdict(passed=True, score=1.0, details=details)
        shown = "; ".join(_show(q) for q in missing[:5]) + (" ..." if len(missing) > 5 else "")
        return Verdict(
            passed=False,
            score=1 - len(missing) / len(quotes),
            feedback=f"{len(missing)} of {len(quotes)} quotes are not in the evidence: {shown}.",
            details=details,
        )
