"""Digests and fingerprints for run manifests: canonical JSON, files, specs, graph structure.

Private to ``checkpoints``; :mod:`reasoning_graphs.checkpoints.manifest` is the public face.
"""

from __future__ import annotations

import hashlib
import json
import re
from importlib import metadata
from pathlib import Path
from typing import Any

from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from pydantic import BaseModel

__all__: list[str] = []

_HASHED_BYTES = 8 * 2**20
_SPLIT = re.compile(r"\s(?:&&|\|\|)\s")
_INTERNAL = ("__", "branch:", "join:", "split:")
_MAX_PATH = 4096


def canonical(value: Any) -> str:
    """Return ``value`` as canonical JSON (sorted keys, no spaces; models dumped as JSON)."""

    def default(obj: Any) -> Any:
        if isinstance(obj, BaseModel):
            return obj.model_dump(mode="json")
        if isinstance(obj, set | frozenset):
            return sorted(obj, key=repr)
        if isinstance(obj, tuple):
            return list(obj)
        return str(obj)

    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=default)


def digest(text: str) -> str:
    """Return ``sha256:`` and the hex digest of ``text``."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def file_digest(path: Path) -> str | None:
    """Return ``sha256:`` of a file's content (its size and first 8 MiB when larger), or None."""
    try:
        with path.open("rb") as handle:
            size = path.stat().st_size
            head = handle.read(_HASHED_BYTES)
    except OSError:
        return None
    seed = b"" if size <= _HASHED_BYTES else f"size={size};".encode()
    return "sha256:" + hashlib.sha256(seed + head).hexdigest()[:16]


def fingerprint(argument: str) -> str | None:
    """Return ``PATH#sha256:..`` when ``argument`` (or its ``@PATH`` part) names a file."""
    for candidate in (argument, argument.partition("@")[2]):
        text = candidate.strip()
        try:
            is_file = bool(text) and len(text) < _MAX_PATH and Path(text).is_file()
        except (OSError, ValueError):
            is_file = False
        found = file_digest(Path(text)) if is_file else None
        if found:
            return f"{text}#{found}"
    return None


def model_entry(model: object) -> str:
    """Return a model's spec, with the digest of the file it names (``fake:``, ``local:`` paths)."""
    spec = model if isinstance(model, str) else str(getattr(model, "model_id", type(model).__name__))
    _, sep, rest = spec.partition(":")
    found = fingerprint(rest) if sep else None
    return f"{spec}#{found.rpartition('#')[2]}" if found else spec


def verifier_entry(spec: str) -> str:
    """Return a verifier spec followed by the digests of the files its atoms name."""
    files = []
    for atom in _SPLIT.split(spec):
        _, sep, argument = atom.strip().strip("()").strip().partition(":")
        found = fingerprint(argument) if sep else None
        if found:
            files.append(found)
    return f"{spec} [{', '.join(files)}]" if files else spec


def version(distribution: str) -> str:
    """Return an installed distribution's version, or ``unknown``."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


AnyGraph = Pregel[Any, Any, Any, Any] | StateGraph[Any, Any, Any, Any]
"""A compiled or uncompiled graph."""


def topology(graph: AnyGraph) -> tuple[str, tuple[str, ...]]:
    """Return the digest of a graph's nodes, edges and state keys, and its sorted node names."""
    compiled = graph if isinstance(graph, Pregel) else graph.compile()
    drawable = compiled.get_graph()
    nodes = tuple(sorted(str(n) for n in drawable.nodes))
    edges = sorted((e.source, e.target, bool(e.conditional)) for e in drawable.edges)
    keys = sorted(k for k in compiled.channels if not k.startswith(_INTERNAL))
    return digest(canonical({"nodes": nodes, "edges": edges, "state": keys})), nodes
