"""Verification: adapt a verifier (callable or spec string) to a node step."""

from __future__ import annotations

from reasoning_graphs.errors import InputError
from reasoning_graphs.nodes._runtime import NodeIO
from reasoning_graphs.types import Verdict
from reasoning_graphs.verifiers import Verifier, from_spec

__all__ = ["choose_verifier", "load_verifier", "run_check"]


def choose_verifier(built: Verifier | None, spec: str | None) -> Verifier:
    """Return the verifier for a run: the spec from the input, else the one built in.

    Raises:
        InputError: neither was given, or the spec is unknown.
    """
    if spec:
        return from_spec(spec)
    if built is None:
        raise InputError(
            "this graph needs a verifier: pass verifier=... to the factory or 'verifier' in the input"
        )
    return built


async def load_verifier(io: NodeIO, built: Verifier | None, spec: str | None) -> Verifier:
    """:func:`choose_verifier` off the event loop (specs may read data files).

    Raises:
        InputError: neither was given, or the spec is unknown.
    """
    return await io.run(choose_verifier, built, spec)


async def run_check(io: NodeIO, verifier: Verifier, candidate: str, task: str = "") -> Verdict:
    """Run ``verifier`` on ``candidate`` on the node's path (threaded when async)."""
    return await io.verify(verifier, candidate, task)
