"""JSON schemas to llama.cpp grammars, for the embedded model's constrained decoding."""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from reasoning_graphs._local_paths import _INSTALL_FIX
from reasoning_graphs.errors import ConfigurationError

if TYPE_CHECKING:
    from llama_cpp.llama_grammar import LlamaGrammar


@functools.lru_cache(maxsize=128)
def _grammar(schema_json: str) -> LlamaGrammar:
    """Compile a JSON schema to a llama.cpp grammar, failing loudly.

    llama-cpp-python's own ``response_format`` path falls back to unconstrained JSON when the
    conversion fails; a dropped constraint must be an error here instead.
    """
    try:
        from llama_cpp.llama_grammar import LlamaGrammar
    except ImportError as exc:
        raise ConfigurationError(
            f"grammar-constrained output needs llama-cpp-python; {_INSTALL_FIX}"
        ) from exc
    try:
        return LlamaGrammar.from_json_schema(schema_json, verbose=False)
    except (AssertionError, KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"llama.cpp cannot turn this JSON schema into a grammar: {exc!r}") from exc


def _schema_grammar(schema: dict[str, Any]) -> LlamaGrammar:
    # Key order is kept: it fixes the order in which the model writes the properties.
    return _grammar(json.dumps(_inline_refs(schema)))


_DATA_KEYS = frozenset({"const", "default", "enum", "examples"})


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline local ``$ref``s; recursive ones stay, pointing into a rebuilt ``$defs``.

    llama-cpp-python's converter fails on a root ``$ref`` (pydantic's shape for a recursive
    model: nested refs are never rewritten) and resolves a ref by its last segment, so a
    definition named like one of its built-in rules (``string``, ``space``...) would silently
    turn into that rule. Inlined schemas avoid both.
    """
    recursive: dict[str, str] = {}

    def target(ref: str) -> Any:
        node: Any = schema
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def expand(node: Any, active: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [expand(item, active) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            if ref in active:
                name = ref.rsplit("/", 1)[-1]
                recursive[name] = ref
                return {"$ref": f"#/$defs/{name}"}
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            return expand({**target(ref), **siblings}, active | {ref})
        return {
            key: value if key in _DATA_KEYS else expand(value, active)
            for key, value in node.items()
            if key not in ("$defs", "definitions")
        }

    inlined = expand(schema, frozenset())
    defs: dict[str, Any] = {}
    while missing := [name for name in recursive if name not in defs]:
        for name in missing:
            defs[name] = expand(target(recursive[name]), frozenset({recursive[name]}))
    return {**inlined, "$defs": defs} if defs else inlined


def _response_grammar(response_format: dict[str, Any]) -> LlamaGrammar | None:
    """Accept llama-cpp-python's and OpenAI's ``response_format`` shapes."""
    kind = response_format.get("type")
    if kind == "json_object":
        return _schema_grammar(response_format.get("schema") or {"type": "object"})
    if kind == "json_schema":
        return _schema_grammar(response_format["json_schema"]["schema"])
    if kind == "text":
        return None
    raise ValueError(
        f"unsupported response_format {response_format!r}; use type 'json_object' with a 'schema'"
    )
