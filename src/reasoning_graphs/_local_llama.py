"""The process-wide llama.cpp models behind ``LocalChatModel``: one slot per file and settings.

A slot loads its ``Llama`` on first use (with llama.cpp's extra buffer types off unless asked for),
owns the lock that serializes calls to it and the worker thread async calls queue on; loaded models
are freed at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from reasoning_graphs._local_paths import _INSTALL_FIX
from reasoning_graphs.errors import ConfigurationError

if TYPE_CHECKING:
    from llama_cpp import Llama


class _Slot:
    """One in-process model file: its ``Llama`` (loaded on first use), call lock and worker."""

    def __init__(self, key: _SlotKey) -> None:
        self.key = key
        self.lock = threading.Lock()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reasoning-graphs-llama")
        self._llama: Llama | None = None

    def llama(self) -> Llama:
        """Return the loaded model, loading it now if needed; the caller holds ``self.lock``."""
        if self._llama is None:
            path, n_ctx, n_threads, repack_weights = self.key
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise ConfigurationError(
                    f"the embedded model needs llama-cpp-python; {_INSTALL_FIX}"
                ) from exc
            try:
                with _LOAD_LOCK, _extra_buffer_types(enabled=repack_weights):
                    self._llama = Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, verbose=False)
            except ValueError as exc:
                raise ConfigurationError(
                    f"cannot load GGUF model {path!r} with n_ctx={n_ctx} ({exc}); check that the file is "
                    "a complete GGUF model and that the context fits in memory"
                ) from exc
        return self._llama


_SlotKey = tuple[str, int, int, bool]
_SLOTS: dict[_SlotKey, _Slot] = {}
_SLOTS_LOCK = threading.Lock()
_LOAD_LOCK = threading.Lock()


def _slot(key: _SlotKey) -> _Slot:
    with _SLOTS_LOCK:
        if not _SLOTS:
            atexit.register(_close_all)
        if key not in _SLOTS:
            _SLOTS[key] = _Slot(key)
        return _SLOTS[key]


def _close_all() -> None:
    """Free loaded models while the interpreter is whole (``Llama.__del__`` fails at teardown)."""
    with _SLOTS_LOCK:
        for slot in _SLOTS.values():
            llama, slot._llama = slot._llama, None
            if llama is not None:
                llama.close()


@contextlib.contextmanager
def _extra_buffer_types(*, enabled: bool) -> Iterator[None]:
    """Set llama.cpp's ``use_extra_bufts`` model parameter, which ``Llama()`` does not expose.

    Extra buffer types repack weights for special CPU kernels. Where llama.cpp was built for a
    CPU with AMX (as here: a native build on a Sapphire Rapids-class VM), its AMX kernel crashed in
    the first matrix product (``ggml_backend_amx_mul_mat``, cf. llama.cpp issue 20824), and it is
    known to compute Q4_0/Q4_1 wrongly (llama.cpp PR 16315); so they are off unless asked for.
    ``Llama()`` reads the defaults through this module attribute, swapped under ``_LOAD_LOCK``.
    """
    import llama_cpp.llama_cpp as lib

    default = lib.llama_model_default_params
    if enabled or not any(field[0] == "use_extra_bufts" for field in lib.llama_model_params._fields_):
        yield
        return

    def params() -> Any:
        chosen = default()
        chosen.use_extra_bufts = False
        return chosen

    lib.llama_model_default_params = params
    try:
        yield
    finally:
        lib.llama_model_default_params = default


def _default_threads() -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cpus // 2)
