"""A strict checkpoint serializer: no pickle, and only allowlisted types are rebuilt.

LangGraph's ``JsonPlusSerializer`` stores objects as msgpack extension values naming a module,
a class and its arguments, and by default imports and calls whatever a stored value names: a
crafted row can run ``os.system`` on load. :class:`StrictSerializer` rebuilds only

- LangGraph's own safe list (``SAFE_MSGPACK_TYPES``: datetimes, UUIDs, sets, LangChain
  messages and documents, ``Send``, ``Interrupt``, ``Command`` ...);
- every :class:`~reasoning_graphs.types.Frozen` subclass defined in the ``reasoning_graphs``
  package, including ones in modules not imported yet: a name is admitted by its module prefix
  first, the module is imported (only ever a module of this package), then the class must be a
  ``Frozen`` subclass defined in the package;
- types passed explicitly (``allow=``), and the types LangGraph derives from a graph's state
  schema when ``LANGGRAPH_STRICT_MSGPACK=true`` (it calls :meth:`with_msgpack_allowlist`).

Anything else comes back as its raw stored arguments and LangGraph logs "Blocked
deserialization": nothing named in the database is imported or called. The policy does not
depend on the ``LANGGRAPH_STRICT_MSGPACK`` environment variable.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from functools import lru_cache

from langgraph.checkpoint.serde._msgpack import SAFE_MSGPACK_TYPES
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer, _create_msgpack_ext_hook

from reasoning_graphs.types import Frozen

__all__ = ["AllowedType", "StrictSerializer"]

AllowedType = type | tuple[str, str]
"""A type to admit, given as the class or as ``(module, class name)``."""

_PACKAGE = "reasoning_graphs"
_MODULE_RE = re.compile(r"reasoning_graphs(\.[A-Za-z_][A-Za-z0-9_]*)*")
_NEVER_IMPORTED = frozenset({f"{_PACKAGE}.studio"})
"""Modules with import-time effects by design (``studio`` compiles graphs)."""


def _key(item: AllowedType) -> tuple[str, str]:
    if isinstance(item, type):
        return (item.__module__, item.__name__)
    module, name = item
    return (str(module), str(name))


def _in_package(module: str) -> bool:
    return module == _PACKAGE or module.startswith(f"{_PACKAGE}.")


@lru_cache(maxsize=4096)
def _is_package_model(module: str, name: str) -> bool:
    """Return whether ``module.name`` is a ``Frozen`` subclass defined in ``reasoning_graphs``.

    Only a module of this package is ever imported to decide; any other name is refused before
    an import happens.

    Args:
        module: the module a stored value names.
        name: the class name a stored value names.
    """
    if not _MODULE_RE.fullmatch(module) or any(
        module == skip or module.startswith(f"{skip}.") for skip in _NEVER_IMPORTED
    ):
        return False
    if any(part.startswith("__") for part in module.split(".")) or not name.isidentifier():
        return False
    try:
        cls = getattr(importlib.import_module(module), name)
    except Exception:
        return False
    return isinstance(cls, type) and issubclass(cls, Frozen) and _in_package(cls.__module__)


class _Allowlist(set[tuple[str, ...]]):
    """The membership test LangGraph's msgpack hook runs for each stored ``(module, name)``."""

    def __contains__(self, key: object) -> bool:
        if not (isinstance(key, tuple) and len(key) == 2):
            return False
        module, name = key
        if not (isinstance(module, str) and isinstance(name, str)):
            return False
        return set.__contains__(self, key) or key in SAFE_MSGPACK_TYPES or _is_package_model(module, name)


class StrictSerializer(JsonPlusSerializer):
    """LangGraph's msgpack serializer, locked down to the package's allowlist.

    Pickle is never used (values that msgpack cannot encode raise), legacy JSON rows revive only
    LangChain's and LangGraph's safe types, and msgpack values rebuild only allowlisted types
    (see the module docstring). A subclass of ``JsonPlusSerializer`` so that LangGraph's
    ``with_allowlist`` keeps working in strict mode.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> saver = InMemorySaver(serde=StrictSerializer())
    """

    def __init__(self, *, allow: Iterable[AllowedType] = ()) -> None:
        """Create the serializer.

        Args:
            allow: extra types to rebuild on load (your own state types outside this package).
        """
        self.allowed: frozenset[tuple[str, str]] = frozenset(_key(item) for item in allow)
        """The explicitly allowed ``(module, name)`` pairs, beyond the built-in policy."""
        self._allowlist = _Allowlist(self.allowed)
        super().__init__(
            pickle_fallback=False,
            allowed_json_modules=None,
            allowed_msgpack_modules=None,
            __unpack_ext_hook__=_create_msgpack_ext_hook(self._allowlist),
        )

    def admits(self, module: str, name: str) -> bool:
        """Return whether a stored value naming ``module.name`` would be rebuilt on load.

        Deciding may import ``module`` when it belongs to this package (never otherwise).
        """
        return (module, name) in self._allowlist

    def with_msgpack_allowlist(self, extra_allowlist: Iterable[tuple[str, ...] | type]) -> StrictSerializer:
        """Return a serializer that also admits ``extra_allowlist`` (LangGraph calls this).

        Args:
            extra_allowlist: classes or ``(module, name)`` pairs, e.g. derived from a state schema.
        """
        extra = frozenset(
            _key(item if isinstance(item, type) else (item[0], item[-1]))
            for item in extra_allowlist
            if isinstance(item, type) or len(item) == 2
        )
        if extra <= self.allowed:
            return self
        return StrictSerializer(allow=self.allowed | extra)
