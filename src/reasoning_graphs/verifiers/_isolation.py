"""How the sandbox isolates a run on this machine: probing, the plan, and the harness script.

Private to the sandbox: :mod:`reasoning_graphs.verifiers.sandbox` re-exports the public names.
The probe runs once per interpreter choice and is cached for the life of the process.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from pydantic import JsonValue

from ..errors import SandboxError

__all__ = ["SAFE_PATH", "Isolation", "Plan", "degrade", "harness_args", "plan", "sandbox_isolation"]

SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
"""The only ``PATH`` a sandboxed process (or a probe) gets."""
_NOBODY = 65534
_UNSHARE_FLAGS = ("--net", "--pid", "--fork", "--kill-child", "--mount-proc")
_HERE = Path(__file__).parent


@dataclass(frozen=True, slots=True)
class Isolation:
    """Which isolation guarantees a sandboxed run had on this machine."""

    network: bool
    """No network access (a fresh network namespace)."""
    pid_namespace: bool
    """Every process the code starts is killed when the run ends."""
    private_tmp: bool
    """World-writable directories are private, size-limited ``tmpfs`` mounts."""
    separate_user: bool
    """The code runs as uid/gid 65534, not as the caller's user."""
    process_limit: bool
    """The process-count limit is enforced (it never is for root)."""
    interpreter: str
    """The Python binary the sandbox runs."""
    missing: tuple[str, ...] = ()
    """One sentence per missing guarantee, with the reason; empty only when all are present."""

    @property
    def complete(self) -> bool:
        """Whether every guarantee is present."""
        return not self.missing

    def as_details(self) -> dict[str, JsonValue]:
        """Return the guarantees as a JSON-ready dict (for ``Verdict.details``)."""
        return {
            "mode": "full" if self.complete else "degraded",
            "network": self.network,
            "pid_namespace": self.pid_namespace,
            "private_tmp": self.private_tmp,
            "separate_user": self.separate_user,
            "process_limit": self.process_limit,
            "interpreter": self.interpreter,
            "missing": list(self.missing),
        }


@dataclass(frozen=True, slots=True)
class Plan:
    """How runs are started here: the command prefix, mounts, privilege drop, guarantees."""

    prefix: tuple[str, ...]
    """The ``unshare ... --`` command prefix (empty: no namespaces)."""
    mount_tmp: bool
    """Whether the harness mounts the private ``tmpfs`` (it then creates its work directory)."""
    drop_to: int | None
    """The uid/gid the harness drops to, or None to keep the caller's."""
    isolation: Isolation
    """The guarantees runs under this plan have."""


_plans: dict[str | None, Plan] = {}
_plans_lock = threading.Lock()


def _others_can_run(path: str) -> bool:
    """Whether a user outside the file's owner and group can execute ``path``."""
    try:
        real = Path(os.path.realpath(path))
        if not real.is_file() or not real.stat().st_mode & 0o001:
            return False
        return all(parent.stat().st_mode & 0o001 for parent in real.parents)
    except OSError:
        return False


def _interpreters(python: str | None) -> list[str]:
    if python is not None:
        return [python] if os.path.isfile(python) else []
    minor = f"python3.{sys.version_info.minor}"
    found = [sys.executable, getattr(sys, "_base_executable", sys.executable)]
    found += [f"/usr/bin/{minor}", f"/usr/local/bin/{minor}", "/usr/bin/python3", "/usr/local/bin/python3"]
    return [p for p in dict.fromkeys(found) if p and os.path.isfile(p)]


def _probe_namespaces(root: bool) -> tuple[tuple[str, ...], str]:
    """Return the ``unshare`` prefix that works here (empty if none) and why not."""
    unshare = shutil.which("unshare", path=SAFE_PATH)
    if unshare is None:
        return (), "`unshare` (util-linux) is not installed"
    flags = _UNSHARE_FLAGS if root else ("--user", "--map-root-user", *_UNSHARE_FLAGS)
    try:
        probe = subprocess.run(
            [unshare, *flags, "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env={"PATH": SAFE_PATH},
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return (), f"`unshare` could not run: {exc}"
    if probe.returncode != 0:
        error = probe.stderr.decode(errors="replace").strip() or f"exit code {probe.returncode}"
        return (), f"`unshare {' '.join(flags)}` was refused: {error}"
    return (unshare, *flags, "--"), ""


def _make_plan(python: str | None) -> Plan:
    root = os.geteuid() == 0
    prefix, ns_reason = _probe_namespaces(root)
    missing = []
    if not prefix:
        missing.append(f"network not isolated: {ns_reason}")
        missing.append("no pid namespace: processes that leave the process group can outlive the run")
        missing.append("no private /tmp: the code can write to world-writable directories of the host")
    candidates = _interpreters(python)
    if not candidates:
        raise SandboxError(f"no Python interpreter found to run the sandbox (python={python!r})")
    drop_to: int | None = None
    interpreter = candidates[0]
    if root:
        usable = [p for p in candidates if _others_can_run(p)]
        if usable:
            drop_to, interpreter = _NOBODY, usable[0]
        else:
            missing.append(
                f"runs as root: no interpreter among {candidates} is executable by uid {_NOBODY} "
                "(pass SandboxLimits(python=...)); the process limit does not apply to root"
            )
    else:
        user = pwd.getpwuid(os.getuid()).pw_name if prefix else str(os.getuid())
        missing.append(f"runs as the calling user ({user}): the code can read and write that user's files")
        if not prefix:
            missing.append("the code can read the environment of the caller's processes via /proc")
    isolation = Isolation(
        network=bool(prefix),
        pid_namespace=bool(prefix),
        private_tmp=bool(prefix),
        separate_user=drop_to is not None,
        process_limit=drop_to is not None or not root,
        interpreter=os.path.realpath(interpreter),
        missing=tuple(missing),
    )
    return Plan(prefix=prefix, mount_tmp=bool(prefix), drop_to=drop_to, isolation=isolation)


def plan(python: str | None) -> Plan:
    """Return the (cached) plan for runs with this interpreter choice."""
    with _plans_lock:
        if python not in _plans:
            _plans[python] = _make_plan(python)
        return _plans[python]


def degrade(python: str | None, failed: Plan, error: str) -> Plan | None:
    """Replace a plan whose harness could not set itself up by a weaker one, if any is left.

    The private ``tmpfs`` goes first, then the privilege drop; each loss is recorded in
    ``Isolation.missing`` with the error. Namespaces stay: the probe showed they work.

    Args:
        python: The interpreter choice the plan is cached under.
        failed: The plan that failed.
        error: The harness's setup error.

    Returns:
        The new (cached) plan, or None when nothing is left to give up.
    """
    old = failed.isolation
    if failed.mount_tmp:
        reason = f"no private /tmp: mounting tmpfs failed ({error})"
        isolation = dataclasses.replace(old, private_tmp=False, missing=(*old.missing, reason))
        weaker = dataclasses.replace(failed, mount_tmp=False, isolation=isolation)
    elif failed.drop_to is not None:
        reason = f"runs as root: dropping privileges failed ({error}); the process limit does not apply"
        isolation = dataclasses.replace(
            old, separate_user=False, process_limit=False, missing=(*old.missing, reason)
        )
        weaker = dataclasses.replace(failed, drop_to=None, isolation=isolation)
    else:
        return None
    with _plans_lock:
        _plans[python] = weaker
    return weaker


def sandbox_isolation(python: str | None = None) -> Isolation:
    """Return the isolation guarantees sandboxed runs get on this machine (probed once).

    Args:
        python: The interpreter to run, as in ``SandboxLimits.python``.

    Returns:
        Which guarantees hold, and a sentence per missing one.
    """
    return plan(python).isolation


_harness_cache: dict[str, tuple[str, ...]] = {}


def harness_source() -> str:
    """Return the child script: ``_guard.py`` followed by ``_harness.py`` as one module."""
    guard = (_HERE / "_guard.py").read_text(encoding="utf-8")
    harness = (_HERE / "_harness.py").read_text(encoding="utf-8")
    future = "from __future__ import annotations\n"
    return guard + "\n\n" + harness.replace(future, "", 1)


def harness_args(interpreter: str) -> tuple[str, ...]:
    """Return the arguments that start the harness: its bytecode if it compiles, else its source.

    Compiling the script in every child costs about 4 ms, so the sandbox interpreter itself
    (its bytecode format may differ from ours) compiles it once into a fresh directory that
    only the caller can write; the directory is removed at exit.

    Args:
        interpreter: The sandbox interpreter.

    Returns:
        ``(path_to_pyc,)``, or ``("-c", source)`` when compiling failed.
    """
    with _plans_lock:
        if interpreter in _harness_cache:
            return _harness_cache[interpreter]
        source = harness_source()
        directory = tempfile.mkdtemp(prefix="rg-harness-")
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        script_path, target = os.path.join(directory, "harness.py"), os.path.join(directory, "harness.pyc")
        Path(script_path).write_text(source, encoding="utf-8")
        compile_script = (
            "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True,"
            " invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)"
        )
        try:
            subprocess.run(
                [interpreter, "-I", "-S", "-c", compile_script, script_path, target],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env={"PATH": SAFE_PATH},
                timeout=60,
                check=True,
            )
            os.chmod(target, 0o644)
            os.chmod(directory, 0o755)
            args: tuple[str, ...] = (target,)
        except (OSError, subprocess.SubprocessError):
            args = ("-c", source)
        _harness_cache[interpreter] = args
        return args
