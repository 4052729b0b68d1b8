"""Adversarial candidates against the sandbox: each must be contained and fail within its limits.

Where this machine lacks a guarantee, the test asserts that the verdict says so (never a silent
pass); ``test_degraded_mode_*`` force that path on any machine.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from pathlib import Path
from typing import Any

import pytest

import reasoning_graphs.verifiers.sandbox as sandbox_module
from reasoning_graphs.errors import SandboxError
from reasoning_graphs.types import Verdict
from reasoning_graphs.verifiers import (
    PythonTests,
    SandboxLimits,
    _isolation,
    _pipes,
    run_python_tests,
    sandbox_isolation,
)

from .conftest import FAST


def verify(program: str, tests: str = "assert f() == 1\n", limits: SandboxLimits = FAST) -> Verdict:
    return PythonTests(tests, limits=limits)(program)


def missing(verdict: Verdict) -> str:
    isolation = verdict.details["isolation"]
    assert isinstance(isolation, dict)
    return " ".join(str(m) for m in isolation["missing"])  # type: ignore[union-attr]


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def assert_contained(verdict: Verdict, started: float, limits: SandboxLimits = FAST) -> None:
    assert not verdict.passed
    assert verdict.feedback
    assert time.monotonic() - started < limits.wall_seconds + 5  # generous: the machine may be loaded


def test_busy_loop_hits_the_cpu_limit() -> None:
    started = time.monotonic()
    verdict = verify("while True:\n    pass\n")
    assert_contained(verdict, started)
    assert verdict.details["status"] in ("cpu_limit", "timeout")
    assert "CPU time limit" in verdict.feedback or "Timed out" in verdict.feedback


def test_busy_loop_inside_c_code_is_killed() -> None:
    started = time.monotonic()
    verdict = verify("x = sum(range(10**13))\n")
    assert_contained(verdict, started)
    assert verdict.details["status"] in ("cpu_limit", "timeout", "killed")


def test_sleep_hits_the_wall_clock_limit() -> None:
    limits = SandboxLimits(wall_seconds=1.5, cpu_seconds=1)
    started = time.monotonic()
    verdict = verify("import time\ntime.sleep(60)\n", limits=limits)
    assert_contained(verdict, started, limits)
    assert verdict.details["status"] == "timeout"
    assert "Timed out" in verdict.feedback


@pytest.mark.parametrize(
    "program",
    [
        "x = bytearray(10**10)\ndef f(): return 1\n",
        "blocks = []\nwhile True:\n    blocks.append(bytearray(10**8))\n",
    ],
    ids=["one-allocation", "growing"],
)
def test_memory_bomb_hits_the_memory_limit(program: str) -> None:
    limits = SandboxLimits(wall_seconds=10.0, cpu_seconds=5)  # touching 500 MiB takes CPU time
    started = time.monotonic()
    verdict = verify(program, limits=limits)
    assert_contained(verdict, started, limits)
    assert "memory limit of 512 MiB" in verdict.feedback


def test_fork_bomb_is_contained_and_reaped() -> None:
    marker = f"3600.{secrets.randbelow(10**9)}"
    program = (
        "import os\n"
        "while True:\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        f"            os.execv('/bin/sleep', ['sleep', '{marker}'])\n"
        "    except OSError:\n"
        "        pass\n"
    )
    started = time.monotonic()
    verdict = verify(program)
    assert_contained(verdict, started)
    leftovers = processes_with(marker)
    if sandbox_isolation().pid_namespace:
        assert leftovers == []
    else:  # the group was killed; only processes that left the group could survive
        assert "pid namespace" in missing(verdict)


@pytest.mark.enable_socket
def test_network_is_unreachable() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]
        program = (
            "import socket\n"
            "def f():\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2).close()\n"
            "    return 1\n"
        )
        verdict = verify(program)
        try:
            connection, _ = server.accept()
        except BlockingIOError:
            accepted = False
        else:
            connection.close()
            accepted = True
    if sandbox_isolation().network:
        assert not verdict.passed
        assert not accepted
        assert "OSError" in verdict.feedback or "unreachable" in verdict.feedback.lower()
    else:
        assert "network not isolated" in missing(verdict)


def test_writes_outside_the_work_directory_do_not_reach_the_host(tmp_path: Path) -> None:
    shared = Path("/tmp") / f"rg-escape-{secrets.token_hex(6)}"
    private = tmp_path / "escape.txt"
    beside_repo = Path.cwd() / f"rg-escape-{secrets.token_hex(6)}"
    targets = [str(shared), str(private), str(beside_repo)]
    program = (
        "import os\n"
        "def f():\n"
        "    written = []\n"
        f"    for path in {targets!r}:\n"
        "        try:\n"
        "            with open(path, 'w') as out:\n"
        "                out.write('x')\n"
        "            written.append(path)\n"
        "        except OSError:\n"
        "            pass\n"
        "    with open('inside.txt', 'w') as out:\n"
        "        out.write('fine')\n"
        "    return written\n"
    )
    try:
        verdict = verify(program, "assert f() is not None\n")
        assert verdict.passed, verdict.feedback
        isolation = sandbox_isolation()
        if isolation.private_tmp:
            assert not shared.exists()
        else:
            assert "no private /tmp" in missing(verdict)
        if isolation.separate_user or isolation.private_tmp:
            assert not private.exists()
        if isolation.separate_user:
            assert not beside_repo.exists()
        else:
            assert "runs as" in missing(verdict)
    finally:
        for path in (shared, private, beside_repo):
            path.unlink(missing_ok=True)


@pytest.mark.parametrize(
    ("program", "status"),
    [
        ("import sys\nsys.exit(0)\ndef f(): return 1\n", "failed"),
        ("exit(0)\ndef f(): return 1\n", "failed"),
        ("def f():\n    raise SystemExit(0)\n", "failed"),
        ("import os\nos._exit(0)\ndef f(): return 1\n", "no_report"),
        ("import os\ndef f():\n    os._exit(0)\n", "no_report"),
    ],
    ids=["sys.exit", "exit", "SystemExit-in-call", "os._exit", "os._exit-in-call"],
)
def test_exit_before_the_asserts_fails(program: str, status: str) -> None:
    verdict = verify(program)
    assert not verdict.passed
    assert verdict.details["status"] == status
    assert "exit" in verdict.feedback


def test_forged_success_output_fails() -> None:
    program = (
        "import os, sys\n"
        "print('ALL TESTS PASSED')\n"
        "print('ok', file=sys.stderr)\n"
        "record = \"\\n{'token': 'guess', 'event': 'finished', 'status': 'passed', 'pid': 1}\\n\"\n"
        "for fd in range(1, 64):\n"
        "    try:\n"
        "        os.write(fd, record.encode())\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)\n"
    )
    verdict = verify(program)
    assert not verdict.passed
    assert verdict.details["status"] == "no_report"


@pytest.mark.parametrize(
    "program",
    [
        "class E:\n    def __eq__(self, other): return True\n    __hash__ = object.__hash__\n"
        "def f(): return E()\n",
        "class E(int):\n    def __eq__(self, other): return True\n    __hash__ = int.__hash__\n"
        "def f(): return E(5)\n",
        "class D(dict):\n    def __eq__(self, other): return True\ndef f(): return D()\n",
        "class L(list):\n    def __eq__(self, other): return True\ndef f(): return L([0])\n",
        "class B:\n    def __bool__(self): return True\ndef f(): return B()\n",
        "class M(type):\n    def __eq__(cls, other): return True\n"
        "class C(metaclass=M): pass\ndef f(): return C\n",
    ],
    ids=["object", "int-subclass", "dict-subclass", "list-subclass", "truthy", "metaclass"],
)
def test_rigged_equality_fails(program: str) -> None:
    verdict = verify(program, "assert f() == 1\nassert f() == [1, 2]\nassert f()\nassert f() == {'a': 1}\n")
    assert verdict.details["passed_checks"] != verdict.details["checks"]
    assert not verdict.passed


def test_always_equal_object_fails_with_a_clear_message() -> None:
    program = "class E:\n    def __eq__(self, other): return True\n    __ne__ = __eq__\ndef f(): return E()\n"
    verdict = verify(program)
    assert not verdict.passed
    assert "Failed test line 1: `assert f() == 1`" in verdict.feedback
    assert "'E'" in verdict.feedback


def test_candidate_cannot_shadow_builtins_used_by_the_tests() -> None:
    program = "def set(*args):\n    return 1\ndef similar(a, b):\n    return 0\n"
    verdict = verify(program, "assert set(similar((3, 4, 5), (4, 5, 6))) == set((4, 5))\n")
    assert not verdict.passed


def test_builtin_patches_are_undone_before_the_tests() -> None:
    program = "import builtins\nbuiltins.sorted = lambda *a, **k: [1, 2, 3]\ndef f(): return [3, 2]\n"
    verdict = verify(program, "assert sorted(f()) == [1, 2, 3]\n")
    assert not verdict.passed


def test_grandchild_is_gone_afterwards() -> None:
    marker = f"3600.{secrets.randbelow(10**9)}"
    program = (
        "import subprocess\n"
        "def f():\n"
        f"    subprocess.Popen(['sleep', '{marker}'], start_new_session=True)\n"
        "    return 1\n"
    )
    verdict = verify(program)
    try:
        assert verdict.passed, verdict.feedback
        deadline = time.monotonic() + 2
        while processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        if sandbox_isolation().pid_namespace:
            assert processes_with(marker) == []
        else:
            assert "pid namespace" in missing(verdict)
    finally:
        for pid in processes_with(marker):
            os.kill(pid, 9)


def test_parent_secrets_are_not_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"sk-test-{secrets.token_hex(8)}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    program = (
        "import os\n"
        "def f():\n"
        "    seen = [repr(dict(os.environ))]\n"
        "    for path in ['/proc/1/environ', f'/proc/{os.getppid()}/environ']:\n"
        "        try:\n"
        "            seen.append(open(path, 'rb').read().decode(errors='replace'))\n"
        "        except OSError:\n"
        "            pass\n"
        "    return '\\n'.join(seen)\n"
    )
    verdict = verify(program, f"assert {secret!r} not in f()\nassert 'OPENAI_API_KEY' not in f()\n")
    isolation = sandbox_isolation()
    if isolation.pid_namespace or isolation.separate_user:
        assert verdict.passed, verdict.feedback
    else:
        assert "environment of the caller" in missing(verdict)


def test_process_runs_unprivileged_in_a_fresh_directory_with_no_input() -> None:
    program = (
        "import os\n"
        "def uid(): return os.getuid()\n"
        "def fds(): return len(os.listdir('/proc/self/fd'))\n"
        "def cwd(): return os.listdir('.')\n"
        "def read():\n"
        "    try:\n"
        "        return input()\n"
        "    except EOFError:\n"
        "        return 'eof'\n"
    )
    tests = "assert cwd() == []\nassert read() == 'eof'\nassert fds() <= 5\n"
    isolation = sandbox_isolation()
    if isolation.separate_user:
        tests += "assert uid() == 65534\n"
    verdict = verify(program, tests)
    assert verdict.passed, verdict.feedback


def test_output_flood_does_not_block_or_hide_the_verdict() -> None:
    program = "import sys\nfor _ in range(200_000):\n    print('x' * 100)\ndef f(): return 2\n"
    verdict = verify(program)
    assert not verdict.passed
    assert "left side was 2" in verdict.feedback
    assert len(str(verdict.details["stdout"])) <= 1000


def test_result_reports_isolation_and_python() -> None:
    result = run_python_tests("def f(): return 1\n", "assert f() == 1\n", limits=FAST)
    assert result.status == "passed"
    assert result.python.startswith("3.")
    assert result.isolation == sandbox_isolation()
    details = result.isolation.as_details()
    assert details["mode"] == ("full" if result.isolation.complete else "degraded")
    assert all(isinstance(reason, str) for reason in result.isolation.missing)


def test_missing_interpreter_raises_sandbox_error() -> None:
    with pytest.raises(SandboxError, match="no Python interpreter"):
        run_python_tests("", "assert True\n", limits=SandboxLimits(python="/nonexistent/python3"))


def test_broken_interpreter_raises_sandbox_error() -> None:
    with pytest.raises(SandboxError, match="did not start"):
        run_python_tests("", "assert True\n", limits=SandboxLimits(python="/bin/false"))


@pytest.mark.parametrize("field", ["wall_seconds", "cpu_seconds", "memory_bytes", "open_files"])
def test_bad_limits_are_rejected(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        SandboxLimits(**{field: 0})  # type: ignore[arg-type]


@pytest.fixture
def degraded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend namespaces are refused, as on a machine without unshare or user namespaces."""
    monkeypatch.setattr(_isolation, "_plans", {})
    monkeypatch.setattr(_isolation, "_probe_namespaces", lambda root: ((), "simulated refusal"))


@pytest.mark.usefixtures("degraded")
def test_degraded_mode_runs_and_says_what_is_missing() -> None:
    isolation = sandbox_isolation()
    assert not isolation.complete
    assert not isolation.network and not isolation.pid_namespace and not isolation.private_tmp
    verdict = verify("def f(): return 1\n")
    assert verdict.passed, verdict.feedback
    text = missing(verdict)
    assert "network not isolated: simulated refusal" in text
    assert "no pid namespace" in text and "no private /tmp" in text
    assert verdict.details["isolation"]["mode"] == "degraded"  # type: ignore[index,call-overload]


@pytest.mark.usefixtures("degraded")
def test_degraded_mode_still_fails_bad_candidates() -> None:
    assert not verify("import os\nos._exit(0)\n").passed
    assert not verify("class E:\n    def __eq__(self, o): return True\ndef f(): return E()\n").passed
    started = time.monotonic()
    assert_contained(verify("while True:\n    pass\n"), started)


def test_exit_is_polled_where_pidfds_are_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pipes, "_pidfd", lambda pid: None)
    assert verify("def f(): return 1\n").passed
    limits = SandboxLimits(wall_seconds=1.0, cpu_seconds=1)
    verdict = verify("import time\ntime.sleep(30)\n", limits=limits)
    assert verdict.details["status"] == "timeout"


def test_a_plan_that_cannot_set_itself_up_degrades_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_isolation, "_plans", {})
    private_tmp = sandbox_isolation().private_tmp
    make_job = sandbox_module._job

    def unmountable(*args: Any, **kwargs: Any) -> dict[str, object]:
        return {**make_job(*args, **kwargs), "tmp_bytes": "not-a-size"}

    monkeypatch.setattr(sandbox_module, "_job", unmountable)
    verdict = verify("def f(): return 1\n")
    assert verdict.passed, verdict.feedback
    if private_tmp:
        assert "no private /tmp: mounting tmpfs failed" in missing(verdict)
        assert not sandbox_isolation().private_tmp
