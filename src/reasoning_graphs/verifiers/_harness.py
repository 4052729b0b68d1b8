"""Child side of the Python sandbox: the trusted script that runs a candidate and its tests.

The package never imports this module: the text of ``_guard.py`` followed by this file's is
compiled once into a script that a fresh interpreter runs (``python -I -B -S SCRIPT FD``); the
job arrives on stdin as a ``marshal``-encoded dict. The script imports only built-in modules at
start-up (``json``, ``ast``, ``signal`` and ``typing`` each cost milliseconds), then:

1. reads the job and points stdin at ``/dev/null``;
2. when asked (it then runs as root in fresh namespaces) mounts private ``tmpfs`` over the
   world-writable directories, changes to its work directory, drops to the unprivileged
   uid/gid with ``no_new_privs``, and sets the resource limits;
3. runs the setup code and the candidate in one namespace, then the tests in another (see
   ``_prepare``), with each ``assert`` guarded by ``_guard.py`` so that an object whose
   ``__eq__`` always returns True cannot pass;
4. writes one record (``repr`` of a dict of plain values carrying the per-run token and this
   process's pid) to the result descriptor FD, and only then exits with ``os._exit(0)``.

The parent trusts nothing else: exit codes, stdout and records without the token mean nothing.
"""

from __future__ import annotations

import _ast
import _signal  # type: ignore[import-not-found]  # built in: cheaper than signal (enum)
import builtins
import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import: the harness needs it only for mypy
    from collections.abc import Callable
    from types import CodeType
    from typing import Any

    # In the child, ``_guard.py`` is prepended to this file (see ``isolation.harness_source``).
    from ._guard import guard_asserts, make_checker

__all__: list[str] = []

_MS_NOSUID = 2
_MS_NODEV = 4
_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_SIGKILL = 9
_MAX_REPR = 200
_SHARED_DIRS = ("/var/tmp", "/dev/shm", "/run/lock")
_FILES = {"<setup>": "setup", "<candidate>": "candidate", "<tests>": "test"}
_JOB_KEYS = {"<setup>": "setup", "<candidate>": "program", "<tests>": "tests"}
# Bound before any candidate code runs, so patching os or builtins cannot silence the harness.
_write, _exit, _exec, _compile, _repr = os.write, os._exit, builtins.exec, builtins.compile, builtins.repr


def _emit(fd: int, record: dict[str, Any]) -> None:
    data = ("\n" + _repr(record) + "\n").encode("utf-8", "backslashreplace")
    while data:
        data = data[_write(fd, data) :]


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _mount_private_tmp(libc: Any, get_errno: Callable[[], int], job: dict[str, Any]) -> None:
    targets = [("/tmp", job["tmp_bytes"])]
    targets += [(d, 1 << 20) for d in _SHARED_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    for target, size in targets:
        opts = f"size={size},mode=1777".encode()
        if libc.mount(b"rg-sandbox", target.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, opts):
            err = get_errno()
            raise OSError(err, f"mount tmpfs on {target}: {os.strerror(err)}")
    os.mkdir(job["workdir"], 0o700)
    if job["drop_to"] is not None:
        os.chown(job["workdir"], job["drop_to"], job["drop_to"])


def _setup(job: dict[str, Any]) -> None:
    libc: Any = None
    get_errno: Callable[[], int] = lambda: 0  # noqa: E731
    if job["mount_tmp"] or job["drop_to"] is not None:
        import ctypes

        libc, get_errno = ctypes.CDLL(None, use_errno=True), ctypes.get_errno
    if job["mount_tmp"]:
        _mount_private_tmp(libc, get_errno, job)
    os.chdir(job["workdir"])
    if job["drop_to"] is not None:
        ident = job["drop_to"]
        os.setgroups([])
        os.setresgid(ident, ident, ident)
        os.setresuid(ident, ident, ident)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0):
            raise OSError(get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        # The init of the run's pid namespace: its parent is ``unshare --kill-child``, whose
        # death signal the uid change above has just cleared. Set it again, or a killed run
        # would leave this process (and everything the candidate started) running.
        if os.getpid() == 1 and libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0):
            raise OSError(get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    import resource

    cpu, memory, fsize = job["cpu_seconds"], job["memory_bytes"], job["file_size_bytes"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_NOFILE, (job["open_files"], job["open_files"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (job["processes"], job["processes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _safe_repr(value: object) -> str:
    try:
        return _short(_repr(value), _MAX_REPR)
    except Exception:
        return "<unrepresentable>"


def _describe(exc: BaseException, sources: dict[str, list[str]]) -> dict[str, Any]:
    """Summarize an exception: its type, message and the innermost line of each source."""
    info: dict[str, Any] = {"type": type(exc).__name__}
    try:
        info["message"] = _short(exc.msg if isinstance(exc, SyntaxError) else str(exc))
    except Exception:
        info["message"] = ""
    places: list[tuple[str, int | None]] = []
    if isinstance(exc, SyntaxError) and exc.filename in _FILES:
        places.append((exc.filename, exc.lineno))
    tb = exc.__traceback__
    while tb is not None:
        places.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    for filename, line in places:
        if filename in _FILES and line is not None:
            where, lines = _FILES[filename], sources[filename]
            info[where + "_line"] = line
            if 0 < line <= len(lines):
                info[where + "_source"] = _short(lines[line - 1].strip())
    return info


def _prepare(job: dict[str, Any], seen: dict[tuple[int, int], object]) -> tuple[_ast.Module, dict[str, Any]]:
    """Run the setup and the candidate; return the guarded test tree and the tests' namespace.

    The tests get their own namespace: the candidate's names, minus those that shadow a
    built-in (unless exported), plus the setup run again, with built-ins restored.
    """
    builtins.__dict__.setdefault("exit", sys.exit)  # ``site`` (not loaded: -S) adds exit() and quit()
    builtins.__dict__.setdefault("quit", sys.exit)
    saved_builtins = dict(builtins.__dict__)
    setup = _compile(job["setup"], "<setup>", "exec")
    candidate: dict[str, Any] = {"__name__": "candidate", "__builtins__": builtins}
    _exec(setup, candidate)
    _exec(_compile(job["program"], "<candidate>", "exec"), candidate)
    sys.settrace(None)
    sys.setprofile(None)
    for name in [n for n in builtins.__dict__ if n not in saved_builtins]:
        del builtins.__dict__[name]
    builtins.__dict__.update(saved_builtins)
    exports = set(job["exports"])
    namespace: dict[str, Any] = {
        name: value
        for name, value in candidate.items()
        if not name.startswith("__") and (name not in saved_builtins or name in exports)
    }
    namespace.update(__name__="tests", __builtins__=builtins)
    _exec(setup, namespace)
    tree = _compile(job["tests"], "<tests>", "exec", _ast.PyCF_ONLY_AST)
    assert isinstance(tree, _ast.Module)
    if job["strict_types"]:
        helper = "_rg_plain_" + os.urandom(6).hex()
        namespace[helper] = make_checker(seen)
        guard_asserts(tree, helper)
    return tree, namespace


def _statement(code: CodeType, namespace: dict[str, Any]) -> Callable[[], object]:
    return lambda: _exec(code, namespace)


def _test_function(name: str, namespace: dict[str, Any]) -> Callable[[], object]:
    return lambda: namespace[name]()


def _units(tree: _ast.Module, namespace: dict[str, Any]) -> list[tuple[bool, Callable[[], object]]]:
    """Split the tests into units: each top-level statement, then each ``test*`` function.

    A unit is a check when it is an ``assert``, a call statement or a ``test*`` function.
    """
    units: list[tuple[bool, Callable[[], object]]] = []
    for stmt in tree.body:
        code = _compile(_ast.Module(body=[stmt], type_ignores=[]), "<tests>", "exec")
        is_check = isinstance(stmt, _ast.Assert) or (
            isinstance(stmt, _ast.Expr) and isinstance(stmt.value, _ast.Call)
        )
        units.append((is_check, _statement(code, namespace)))
    for stmt in tree.body:
        if isinstance(stmt, _ast.FunctionDef) and stmt.name.startswith("test"):
            units.append((True, _test_function(stmt.name, namespace)))
    return units


def _run(job: dict[str, Any]) -> dict[str, Any]:
    sources = {name: job[key].splitlines() for name, key in _JOB_KEYS.items()}
    record: dict[str, Any] = {"status": "failed", "checks": 0, "passed_checks": 0, "failed_checks": 0}
    seen: dict[tuple[int, int], object] = {}
    try:
        units = _units(*_prepare(job, seen))
    except BaseException as exc:  # exits and interrupts count as failures too
        record["failure"] = _describe(exc, sources)
        return record
    for is_check, unit in units:
        record["checks"] += is_check
        try:
            unit()
        except BaseException as exc:
            record["failed_checks"] += 1
            if "failure" not in record:
                failure = record["failure"] = _describe(exc, sources)
                for side, key in ((0, "left"), (1, "right")):
                    if (failure.get("test_line"), side) in seen:
                        failure[key] = _safe_repr(seen[(failure["test_line"], side)])
            if not is_check:
                return record
        else:
            record["passed_checks"] += is_check
    if record["checks"] == 0:
        record["failure"] = {"type": "NoChecks", "message": "the tests contain no assert or check call"}
    elif record["failed_checks"] == 0:
        record["status"] = "passed"
    return record


def _main() -> None:
    out_fd = int(sys.argv[1])
    chunks = []
    while chunk := os.read(0, 1 << 16):
        chunks.append(chunk)
    job: dict[str, Any] = marshal.loads(b"".join(chunks))
    token, pid = job["token"], os.getpid()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        _setup(job)
    except BaseException as exc:
        _emit(out_fd, {"token": token, "event": "setup_error", "message": f"{type(exc).__name__}: {exc}"})
        _exit(3)

    def on_cpu_limit(signum: int, frame: object) -> None:
        _emit(out_fd, {"token": token, "event": "finished", "pid": pid, "status": "cpu_limit"})
        _exit(1)

    _signal.signal(_signal.SIGXCPU, on_cpu_limit)
    started = {"token": token, "event": "started", "pid": pid, "uid": os.getuid()}
    _emit(out_fd, {**started, "python": sys.version.split()[0], "executable": sys.executable})
    record = _run(job)
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # a closed or replaced stream must not hide the verdict
            continue
    _emit(out_fd, {**record, "token": token, "event": "finished", "pid": pid})
    _exit(0)


if __name__ == "__main__":
    _main()
