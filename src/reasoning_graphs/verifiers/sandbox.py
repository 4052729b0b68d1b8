"""Run untrusted Python code against tests in a sandboxed subprocess.

One run starts a fresh interpreter (``python -I -B -S``) with, where the machine allows it:

- new network, pid and mount namespaces (``unshare --net --pid --fork --kill-child
  --mount-proc``): no network at all (not even loopback), every process the code starts dies
  with it, and private ``tmpfs`` mounts over ``/tmp``, ``/var/tmp``, ``/dev/shm`` and
  ``/run/lock``, so nothing it writes outlives the run;
- uid/gid 65534 with no supplementary groups and ``no_new_privs`` when the caller is root (the
  process limit does not bind root). The harness drops privileges itself (``setgroups``,
  ``setresgid``, ``setresuid``, ``PR_SET_NO_NEW_PRIVS``: what ``setpriv --reuid=65534
  --regid=65534 --clear-groups --no-new-privs`` does) because it must first mount the private
  ``tmpfs`` as root inside the namespaces, and a separate ``setpriv`` exec would cost time.
  A caller that is not root gets the namespaces through a user namespace and runs the code as
  itself;
- resource limits: CPU seconds, address space, file size, open files, processes, no core;
- a wall-clock timeout that kills the whole process group;
- a minimal environment (no API keys or other secrets of the caller), stdin from ``/dev/null``,
  no inherited descriptors except the result pipe, and stdout/stderr captured and truncated.

The verdict comes only from a record the trusted harness (``_harness.py``) writes to a separate
pipe after the last check, marked with a random per-run token; exit codes and output do not
count. The values every ``assert`` compares are checked to be plain data (``_guard.py``), and
the tests cannot see candidate names that shadow built-ins.

When a guarantee is unavailable (no ``unshare``, namespaces denied, not root, no interpreter
that uid 65534 can run) the run still happens, and :class:`Isolation` says exactly what is
missing: ``SandboxResult.isolation.missing`` is never silently empty.

Limits of the design: code runs in the same interpreter as the harness, so code written to
attack this harness specifically (walking frames to find the token, patching attributes of
shared modules such as ``math.isclose``) can still forge a pass; the process boundary protects
the machine, not the verdict, from such code. Memory is capped per process, not per run.
"""

from __future__ import annotations

import marshal
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import JsonValue

from ..errors import InputError, SandboxError
from ._isolation import SAFE_PATH, Isolation, Plan, degrade, harness_args, plan, sandbox_isolation
from ._pipes import collect, parse_records

__all__ = [
    "Isolation",
    "SandboxLimits",
    "SandboxResult",
    "SandboxStatus",
    "run_python_tests",
    "sandbox_isolation",
]

SandboxStatus = Literal["passed", "failed", "timeout", "cpu_limit", "killed", "no_report"]
"""How a sandboxed run ended.

- ``passed`` / ``failed``: the harness reported after running every check.
- ``timeout``: the wall-clock limit was reached; the process group was killed.
- ``cpu_limit``: the CPU-time limit was reached.
- ``killed``: a signal ended the process (CPU hard limit, memory, or a crash).
- ``no_report``: the process exited without the harness's final record (``os._exit`` or
  ``sys.exit`` from code the harness could not intercept, or a broken interpreter).
"""

_WORKDIR_IN_NAMESPACE = "/tmp/work"


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Resource limits and options of one sandboxed run."""

    wall_seconds: float = 10.0
    """Wall-clock limit; the whole process group is killed when it is reached."""
    cpu_seconds: int = 3
    """CPU-time limit per process (``RLIMIT_CPU``)."""
    memory_bytes: int = 512 * 2**20
    """Address-space limit per process (``RLIMIT_AS``)."""
    file_size_bytes: int = 2**20
    """Largest file the code may write (``RLIMIT_FSIZE``)."""
    open_files: int = 64
    """Open file descriptors per process (``RLIMIT_NOFILE``)."""
    processes: int = 64
    """Processes and threads of the sandbox user (``RLIMIT_NPROC``); not enforced for root."""
    output_bytes: int = 4096
    """Bytes of stdout and of stderr kept (head and tail); the rest is read and dropped."""
    tmp_bytes: int = 32 * 2**20
    """Size of the private ``/tmp`` (when mount namespaces are available)."""
    python: str | None = None
    """Interpreter to run; by default the first of this interpreter and the system ``python3``
    binaries that the sandbox user can execute."""

    def __post_init__(self) -> None:
        """Reject limits the interpreter cannot start under."""
        minimum = {"open_files": 16, "memory_bytes": 64 * 2**20}
        for name in ("wall_seconds", "cpu_seconds", "memory_bytes", "file_size_bytes", "output_bytes"):
            value = getattr(self, name)
            if value < minimum.get(name, 0) or value <= 0:
                raise InputError(f"SandboxLimits.{name} is too small: {value!r}")
        for name in ("open_files", "processes", "tmp_bytes"):
            value = getattr(self, name)
            if value < minimum.get(name, 0) or value <= 0:
                raise InputError(f"SandboxLimits.{name} is too small: {value!r}")


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """The outcome of one sandboxed run."""

    status: SandboxStatus
    """How the run ended."""
    report: dict[str, JsonValue]
    """The harness's final record (checks, passed_checks, failure ...); empty without one."""
    stdout: str
    """Captured stdout, truncated to ``SandboxLimits.output_bytes``."""
    stderr: str
    """Captured stderr, truncated to ``SandboxLimits.output_bytes``."""
    returncode: int | None
    """Exit code of the sandbox process (negative: killed by that signal)."""
    wall_seconds: float
    """Wall time of the run, start to reaped."""
    cpu_seconds: float
    """CPU time the sandbox used (user plus system)."""
    isolation: Isolation
    """The guarantees this run had."""
    python: str = ""
    """Version of the interpreter that ran the code."""
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    """The limits the run had."""


def _job(run_plan: Plan, limits: SandboxLimits, workdir: str, **code: object) -> dict[str, object]:
    return {
        **code,
        "mount_tmp": run_plan.mount_tmp,
        "drop_to": run_plan.drop_to,
        "workdir": workdir,
        "tmp_bytes": limits.tmp_bytes,
        "cpu_seconds": limits.cpu_seconds,
        "memory_bytes": limits.memory_bytes,
        "file_size_bytes": limits.file_size_bytes,
        "open_files": limits.open_files,
        "processes": limits.processes,
    }


def run_python_tests(
    program: str,
    tests: str,
    *,
    setup: str = "",
    exports: Sequence[str] = (),
    limits: SandboxLimits | None = None,
    strict_types: bool = True,
) -> SandboxResult:
    """Run ``program`` then ``tests`` in a sandboxed interpreter and report what happened.

    The setup code runs first (in the candidate's namespace and again in the tests'), then the
    program. The tests run in their own namespace holding the program's names, except names that
    shadow a built-in (so a candidate cannot redefine ``set`` or ``sorted`` under the tests),
    unless listed in ``exports``. Each top-level ``assert`` or call statement, and each top-level
    function named ``test*`` (called with no arguments), is one check; all run, and the first
    failure is reported.

    Args:
        program: The untrusted code (plain Python, not markdown).
        tests: Test code: asserts, check calls or ``test*`` functions.
        setup: Imports both the program and the tests may use (MBPP's ``test_imports``).
        exports: Program names the tests may see even though they shadow a built-in.
        limits: Resource limits; defaults to ``SandboxLimits()``.
        strict_types: Require every value compared in an ``assert`` to be plain built-in data
            (defeats objects with a rigged ``__eq__``); turn off for tests that compare
            instances of user classes.

    Returns:
        The run's status, the harness's report, captured output and the isolation it had.

    Raises:
        SandboxError: The sandbox itself could not start or set itself up.
    """
    limits = limits or SandboxLimits()
    run_plan = plan(limits.python)
    code: dict[str, object] = {"setup": setup, "program": program, "tests": tests}
    code.update(exports=list(exports), strict_types=strict_types)
    while True:
        try:
            return _run(run_plan, limits, code)
        except _SetupFailedError as exc:
            weaker = degrade(limits.python, run_plan, str(exc))
            if weaker is None:
                raise SandboxError(f"the sandbox could not set itself up: {exc}") from exc
            run_plan = weaker


class _SetupFailedError(Exception):
    """The harness started but could not set up the isolation its plan asked for."""


def _run(run_plan: Plan, limits: SandboxLimits, code: dict[str, object]) -> SandboxResult:
    token = secrets.token_hex(16)
    private = run_plan.mount_tmp
    workdir = _WORKDIR_IN_NAMESPACE if private else tempfile.mkdtemp(prefix="rg-sandbox-")
    try:
        if not private and run_plan.drop_to is not None:
            os.chown(workdir, run_plan.drop_to, run_plan.drop_to)
        job = _job(run_plan, limits, workdir, token=token, **code)
        return _execute(run_plan, limits, workdir, token, marshal.dumps(job))
    finally:
        if not private:
            shutil.rmtree(workdir, ignore_errors=True)


def _execute(
    run_plan: Plan, limits: SandboxLimits, workdir: str, token: str, payload: bytes
) -> SandboxResult:
    read_fd, write_fd = os.pipe()
    interpreter = run_plan.isolation.interpreter
    argv = [*run_plan.prefix, interpreter, "-I", "-B", "-S", *harness_args(interpreter), str(write_fd)]
    setpriv = shutil.which("setpriv", path=SAFE_PATH)
    if run_plan.prefix and setpriv:
        # If this process is killed (SIGKILL included), the kernel kills the sandbox too: its
        # pid-namespace init dies, and with it everything the candidate started.
        argv = [setpriv, "--pdeathsig", "KILL", *argv]
    env = {"PATH": SAFE_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": workdir, "TMPDIR": "/tmp"}
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(write_fd,),
            env=env,
            cwd="/" if run_plan.mount_tmp else workdir,
            start_new_session=True,
        )
    except OSError as exc:
        os.close(read_fd)
        raise SandboxError(f"cannot start the sandbox interpreter {interpreter!r}: {exc}") from exc
    finally:
        os.close(write_fd)
    outcome = collect(proc, read_fd, payload, deadline=start + limits.wall_seconds, keep=limits.output_bytes)
    elapsed = time.monotonic() - start
    started, finished, setup_error = parse_records(outcome.records, token)
    if setup_error is not None:
        raise _SetupFailedError(setup_error)
    if started is None:
        reason = "timed out" if outcome.timed_out else f"exit code {outcome.returncode}"
        raise SandboxError(f"the sandbox interpreter did not start ({reason}): {outcome.stderr[-500:]}")
    status: SandboxStatus
    report: dict[str, JsonValue] = {}
    if finished is not None and not (finished.get("status") == "passed" and outcome.returncode != 0):
        report = {k: v for k, v in finished.items() if k not in ("token", "event", "pid")}
        status = "cpu_limit" if report.get("status") == "cpu_limit" else _status(report.get("status"))
    elif outcome.timed_out:
        status = "timeout"
    elif outcome.cpu_seconds >= limits.cpu_seconds:
        status = "cpu_limit"
    elif outcome.returncode is not None and outcome.returncode < 0:
        status = "killed"
    else:
        status = "no_report"
    return SandboxResult(
        status=status,
        report=report,
        stdout=outcome.stdout,
        stderr=outcome.stderr,
        returncode=outcome.returncode,
        wall_seconds=elapsed,
        cpu_seconds=outcome.cpu_seconds,
        isolation=run_plan.isolation,
        python=str(started.get("python", "")),
        limits=limits,
    )


def _status(value: JsonValue) -> SandboxStatus:
    return "passed" if value == "passed" else "failed"
