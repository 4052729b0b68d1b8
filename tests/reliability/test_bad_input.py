"""Bad input everywhere: every CLI command and flag, with missing, malformed, oversized and hostile values.

Each case expects one clear ``error:`` line (the last line on stderr; argparse prints its usage
above it), the documented exit code (2 bad input, 4 configuration or database), no traceback,
nothing stored changed (the database's rows, and no file created or removed anywhere under the
test's folder), and no secret echoed from a file the value pointed at. Cases that could hang or
exhaust memory in process (a FIFO, ``/dev/zero``) run in a child process with a timeout and an
address-space limit (marked ``slow``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reasoning_graphs.cli import build_parser, main
from tests.reliability.conftest import GAME24, ROOT, TASK, cli_env, db_snapshot, repair_routes, write_script

DATA = ROOT.parent / "shared" / "data"
SECRET = "SECRET-7c41f0aa-do-not-print"


@dataclass(frozen=True)
class Case:
    """One bad invocation."""

    flag: str
    """The command and option (or positional) under test, e.g. ``run --input``."""
    argv: tuple[str, ...]
    """Arguments; ``{name}`` placeholders are filled from the fixture's files."""
    code: int
    """The documented exit code."""
    needle: str
    """Text the error line must contain."""
    isolate: bool = False
    """Run in a child process with a timeout and memory limit (it may hang or explode today)."""


def c(flag: str, code: int, needle: str, *argv: str, isolate: bool = False) -> Case:
    return Case(flag, argv, code, needle, isolate)


M = ("--model", "{model}")
DB = ("--db", "{db}")
REPAIR = ("run", "repair", "--task", TASK, "--verifier", GAME24, *M, *DB)
EV_OUT = ("--quiet", "--n", "1", "--out", "{evout}")
EV = ("--dataset", "{game24}", *M, *EV_OUT)
EVAL = ("eval", "--pattern", "repair", *EV)

CASES: list[Case] = [
    # --- ask --------------------------------------------------------------------------------------
    c("ask prompt", 2, "required: prompt", "ask"),
    c("ask --model", 4, "PROVIDER:MODEL", "ask", "hi", "--model", ""),
    c("ask --model", 4, "known providers", "ask", "hi", "--model", "nope:x"),
    c("ask --model", 4, "does not exist", "ask", "hi", "--model", "fake:{missing}"),
    c("ask --model", 4, "is not UTF-8 text", "ask", "hi", "--model", "fake:{nonutf8}"),
    c("ask --model", 4, "fake model script", "ask", "hi", "--model", "fake:{secret}"),
    c("ask --model", 4, "fake model script", "ask", "hi", "--model", "fake:/dev/zero", isolate=True),
    c("ask --model", 4, "fake model script", "ask", "hi", "--model", "fake:{fifo}", isolate=True),
    c("ask --max-tokens", 2, "positive integer", "ask", "hi", *M, "--max-tokens", "0"),
    c("ask --max-tokens", 2, "positive integer", "ask", "hi", *M, "--max-tokens", "-5"),
    c("ask --max-tokens", 2, "positive integer", "ask", "hi", *M, "--max-tokens", "lots"),
    # --- models -----------------------------------------------------------------------------------
    c("models", 2, "unrecognized arguments", "models", "--bogus"),
    c("COMMAND", 2, "invalid choice", "nope"),
    # --- verify -----------------------------------------------------------------------------------
    c("verify --verifier", 2, "required: --verifier", "verify", "--candidate", "x"),
    c("verify --verifier", 2, "it is empty", "verify", "--verifier", "", "--candidate", "x"),
    c("verify --verifier", 2, "unknown verifier name", "verify", "--verifier", "nope:1", "--candidate", "x"),
    c(
        "verify --verifier",
        2,
        "bad regular expression",
        "verify",
        "--verifier",
        "regex:(",
        "--candidate",
        "x",
    ),
    c(
        "verify --verifier",
        2,
        "expected a whole number",
        "verify",
        "--verifier",
        "mbpp:abc",
        "--candidate",
        "x",
    ),
    c(
        "verify --verifier",
        2,
        "is not UTF-8 text",
        "verify",
        "--verifier",
        "python-tests:{nonutf8}",
        "--candidate",
        "x",
    ),
    c(
        "verify --verifier",
        2,
        "does not exist",
        "verify",
        "--verifier",
        "python-tests:{missing}",
        "--candidate",
        "x",
    ),
    c(
        "verify --verifier",
        2,
        "do not parse",
        "verify",
        "--verifier",
        "python-tests:{secret}",
        "--candidate",
        "x",
    ),
    c(
        "verify --verifier",
        2,
        "json-schema",
        "verify",
        "--verifier",
        "json-schema:{deep}",
        "--candidate",
        "{}",
    ),
    c(
        "verify --verifier",
        2,
        "quotes-in",
        "verify",
        "--verifier",
        "quotes-in:/dev/zero",
        "--candidate",
        "x",
        isolate=True,
    ),
    c("verify --candidate", 2, "one of the arguments", "verify", "--verifier", GAME24),
    c(
        "verify --candidate",
        2,
        "not allowed with",
        "verify",
        "--verifier",
        GAME24,
        "--candidate",
        "x",
        "--candidate-file",
        "{bad}",
    ),
    c(
        "verify --candidate-file",
        2,
        "does not exist",
        "verify",
        "--verifier",
        GAME24,
        "--candidate-file",
        "{missing}",
    ),
    c(
        "verify --candidate-file",
        2,
        "is a directory",
        "verify",
        "--verifier",
        GAME24,
        "--candidate-file",
        "{dir}",
    ),
    c(
        "verify --candidate-file",
        2,
        "not UTF-8",
        "verify",
        "--verifier",
        GAME24,
        "--candidate-file",
        "{nonutf8}",
    ),
    c(
        "verify --candidate-file",
        2,
        "larger than",
        "verify",
        "--verifier",
        GAME24,
        "--candidate-file",
        "{huge}",
    ),
    c(
        "verify --candidate-file",
        2,
        "candidate file",
        "verify",
        "--verifier",
        GAME24,
        "--candidate-file",
        "/dev/zero",
        isolate=True,
    ),
    c(
        "verify --task",
        2,
        "expected one argument",
        "verify",
        "--verifier",
        GAME24,
        "--candidate",
        "x",
        "--task",
    ),
    # --- run --------------------------------------------------------------------------------------
    c("run graph", 2, "required: graph", "run"),
    c("run graph", 2, "unknown graph 'nope'", "run", "nope", "--task", "x", *M, *DB),
    c("run --task", 2, "missing task", "run", "repair", "--task", "", "--verifier", GAME24, *M, *DB),
    c("run --task", 2, "missing task", "run", "repair", "--task", "   ", "--verifier", GAME24, *M, *DB),
    c("run --input", 2, "does not exist", "run", "repair", "--input", "{missing}", *M, *DB),
    c("run --input", 2, "is a directory", "run", "repair", "--input", "{dir}", *M, *DB),
    c("run --input", 2, "not UTF-8", "run", "repair", "--input", "{nonutf8}", *M, *DB),
    c("run --input", 2, "not valid JSON", "run", "repair", "--input", "{bad}", *M, *DB),
    c("run --input", 2, "must hold a JSON object", "run", "repair", "--input", "{list}", *M, *DB),
    c("run --input", 2, "larger than", "run", "repair", "--input", "{huge}", *M, *DB),
    c("run --input", 2, "input file", "run", "repair", "--input", "{deep}", *M, *DB),
    c("run --input", 2, "max_calls", "run", "repair", "--input", "{boolcalls}", *M, *DB),
    c("run --input", 2, "bogus", "run", "repair", "--input", "{extra}", *M, *DB),
    c("run --input", 2, "input file", "run", "repair", "--input", "/dev/zero", *M, *DB, isolate=True),
    c("run --model", 4, "PROVIDER:MODEL", "run", "repair", "--task", "x", "--model", "bogus", *DB),
    c("run --model", 4, "does not exist", "run", "repair", "--task", "x", "--model", "fake:{missing}", *DB),
    c("run --roster", 4, "empty entry", "run", "repair", "--task", "x", *M, "--roster", ",", *DB),
    c(
        "run --roster",
        4,
        "known providers",
        "run",
        "repair",
        "--task",
        "x",
        *M,
        "--roster",
        "{model},nope:x",
        *DB,
    ),
    c(
        "run --verifier",
        2,
        "unknown verifier name",
        "run",
        "repair",
        "--task",
        "x",
        "--verifier",
        "nope:1",
        *M,
        *DB,
    ),
    c("run --thread", 2, "already exists", *REPAIR, "--thread", "done1"),
    c("run --thread", 2, "thread", *REPAIR, "--thread", ""),
    c("run --max-calls", 2, "positive integer", *REPAIR, "--max-calls", "0"),
    c("run --max-calls", 2, "positive integer", *REPAIR, "--max-calls", "many"),
    c("run --max-tokens", 2, "positive integer", *REPAIR, "--max-tokens", "-1"),
    c(
        "run --db",
        4,
        "is a directory",
        "run",
        "repair",
        "--task",
        TASK,
        "--verifier",
        GAME24,
        *M,
        "--db",
        "{dir}",
    ),
    c(
        "run --db",
        4,
        "not a SQLite database",
        "run",
        "repair",
        "--task",
        TASK,
        "--verifier",
        GAME24,
        *M,
        "--db",
        "{secret}",
    ),
    c(
        "run --db",
        4,
        "cannot create the folder",
        "run",
        "repair",
        "--task",
        TASK,
        "--verifier",
        GAME24,
        *M,
        "--db",
        "/proc/nope/x.db",
    ),
    c(
        "run --db",
        4,
        "checkpoint database",
        "run",
        "repair",
        "--task",
        TASK,
        "--verifier",
        GAME24,
        *M,
        "--db",
        "{fifo}",
        isolate=True,
    ),
    c("run --max-attempts", 2, "positive integer", *REPAIR, "--max-attempts", "0"),
    c("run --max-attempts", 2, "less than or equal to 100", *REPAIR, "--max-attempts", "100000"),
    c("run --beam", 2, "does not apply", *REPAIR, "--beam", "2"),
    c("run --beam", 2, "beam_width", "run", "tot", "--task", "x", *M, *DB, "--beam", "100000"),
    c("run --breadth", 2, "breadth", "run", "tot", "--task", "x", *M, *DB, "--breadth", "100000"),
    c("run --depth", 2, "max_depth", "run", "tot", "--task", "x", *M, *DB, "--depth", "100000"),
    c("run --samples", 2, "positive integer", "run", "tot", "--task", "x", *M, *DB, "--samples", "0"),
    c("run --kind", 2, "unknown task 'nope'", "run", "tot", "--task", "x", *M, *DB, "--kind", "nope"),
    c(
        "run --refinements",
        2,
        "max_refinements",
        "run",
        "self_refine",
        "--task",
        "x",
        *M,
        *DB,
        "--refinements",
        "100000",
    ),
    c("run --policy", 2, "policy", "run", "self_refine", "--task", "x", *M, *DB, "--policy", "nope"),
    c(
        "run --answer-format",
        2,
        "answer_format",
        "run",
        "self_refine",
        "--task",
        "x",
        *M,
        *DB,
        "--answer-format",
        "nope",
    ),
    c(
        "run --drafts",
        2,
        "less than or equal to 64",
        "run",
        "reflection",
        "--task",
        "x",
        *M,
        *DB,
        "--drafts",
        "1000",
    ),
    c("run --no-access-lists", 2, "does not apply", *REPAIR, "--no-access-lists"),
    c("run --rounds", 2, "max_rounds", "run", "dialectic", "--task", "x", *M, *DB, "--rounds", "100000"),
    c("run --config", 2, "does not exist", "run", "debate", "--task", "x", *M, *DB, "--config", "{missing}"),
    c(
        "run --config",
        2,
        "configuration file",
        "run",
        "debate",
        "--task",
        "x",
        *M,
        *DB,
        "--config",
        "{nonutf8}",
    ),
    c(
        "run --config",
        2,
        "must hold a JSON object",
        "run",
        "debate",
        "--task",
        "x",
        *M,
        *DB,
        "--config",
        "{list}",
    ),
    c("run --config", 2, "configuration file", "run", "debate", "--task", "x", *M, *DB, "--config", "{deep}"),
    c("run --config", 2, "does not apply", *REPAIR, "--config", "{list}"),
    c(
        "run --max-claims",
        2,
        "max_claims",
        "run",
        "adversarial",
        "--task",
        "x",
        *M,
        *DB,
        "--max-claims",
        "100000",
    ),
    c("run --rebuttal", 2, "does not apply", *REPAIR, "--rebuttal"),
    c(
        "run --max-view-attempts",
        2,
        "max_view_attempts",
        "run",
        "perspectives",
        *M,
        *DB,
        "--max-view-attempts",
        "100000",
    ),
    c("run --out", 2, "does not apply", *REPAIR, "--out", "{dir}"),
    c("run --tools", 2, "MODULE:NAME", *REPAIR, "--tools", "nope"),
    c("run --tools", 2, "cannot import tool module", *REPAIR, "--tools", "nope:x"),
    c("run --tools", 2, "cannot load tool module file", *REPAIR, "--tools", "{secret}:x"),
    c("run --tools", 2, "tool", *REPAIR, "--tools", "os:system"),
    c("run --max-tool-steps", 2, "positive integer", *REPAIR, "--max-tool-steps", "0"),
    c("run --max-steps", 2, "positive integer", "run", "agent", "--task", "x", *M, *DB, "--max-steps", "0"),
    c("run --schema", 2, "does not apply", *REPAIR, "--schema", "os:system"),
    c("run --answers", 2, "not UTF-8", "run", "debate", "--task", "x", *M, *DB, "--answers", "{nonutf8}"),
    c(
        "run --answers",
        2,
        "must hold a JSON object",
        "run",
        "debate",
        "--task",
        "x",
        *M,
        *DB,
        "--answers",
        "{list}",
    ),
    # --- resume -----------------------------------------------------------------------------------
    c("resume --thread", 2, "required: --thread", "resume", *DB),
    c("resume --thread", 2, "no thread 'nope'", "resume", "--thread", "nope", *DB),
    c("resume --db", 4, "not a SQLite database", "resume", "--thread", "done1", "--db", "{secret}"),
    c("resume --db", 4, "is a directory", "resume", "--thread", "done1", "--db", "{dir}"),
    c("resume --db", 2, "no thread", "resume", "--thread", "done1", "--db", "{newdb}"),
    c("resume --answer", 2, "no thread 'nope'", "resume", "--thread", "nope", "--answer", "noequals", *DB),
    c("resume --answers", 2, "no thread 'nope'", "resume", "--thread", "nope", "--answers", "{nonutf8}", *DB),
    c(
        "resume --allow-changed",
        2,
        "invalid choice",
        "resume",
        "--thread",
        "done1",
        "--allow-changed",
        "all",
        *DB,
    ),
    c(
        "resume --allow-changed",
        2,
        "no thread 'nope'",
        "resume",
        "--thread",
        "nope",
        "--allow-changed",
        "models",
        *DB,
    ),
    # --- threads / history / show -----------------------------------------------------------------
    c("threads --db", 4, "not a SQLite database", "threads", "--db", "{secret}"),
    c("threads --db", 4, "is a directory", "threads", "--db", "{dir}"),
    c("threads --db", 4, "checkpoint database", "threads", "--db", "{fifo}", isolate=True),
    c("threads --db", 2, "no checkpoint database", "threads", "--db", "{newdb}"),
    c("history --thread", 2, "required: --thread", "history", *DB),
    c("history --thread", 2, "no thread 'nope'", "history", "--thread", "nope", *DB),
    c("history --db", 4, "not a SQLite database", "history", "--thread", "done1", "--db", "{secret}"),
    c("history --db", 2, "no thread", "history", "--thread", "done1", "--db", "{newdb}"),
    c("show --thread", 2, "required: --thread", "show", *DB),
    c("show --thread", 2, "no thread 'nope'", "show", "--thread", "nope", *DB),
    c("show --as", 2, "unknown role 'nobody'", "show", "--thread", "done1", "--as", "nobody", *DB),
    c(
        "show --checkpoint",
        2,
        "no checkpoint 'nope'",
        "show",
        "--thread",
        "done1",
        "--checkpoint",
        "nope",
        *DB,
    ),
    c("show --checkpoint", 2, "checkpoint", "show", "--thread", "done1", "--checkpoint", "", *DB),
    c("show --db", 4, "not a SQLite database", "show", "--thread", "done1", "--db", "{secret}"),
    c("show --db", 2, "no thread", "show", "--thread", "done1", "--db", "{newdb}"),
    # --- seal -------------------------------------------------------------------------------------
    c("seal --thread", 2, "required: --thread", "seal", *DB),
    c("seal --thread", 2, "no thread 'nope'", "seal", "--thread", "nope", *DB),
    c("seal --db", 4, "not a SQLite database", "seal", "--thread", "done1", "--db", "{secret}"),
    c("seal --db", 4, "is a directory", "seal", "--thread", "done1", "--db", "{dir}"),
    c("seal --db", 2, "no thread", "seal", "--thread", "done1", "--db", "{newdb}"),
    # --- evaluate ---------------------------------------------------------------------------------
    c("evaluate --thread", 2, "required: --thread", "evaluate", *M, *DB),
    c("evaluate --thread", 2, "no thread 'nope'", "evaluate", "--thread", "nope", *M, *DB),
    c(
        "evaluate --config",
        2,
        "not valid JSON",
        "evaluate",
        "--thread",
        "done1",
        "--config",
        "{bad}",
        *M,
        *DB,
    ),
    c("evaluate --config", 2, "is invalid", "evaluate", "--thread", "done1", "--config", "{list}", *M, *DB),
    c(
        "evaluate --config",
        2,
        "configuration file",
        "evaluate",
        "--thread",
        "done1",
        "--config",
        "{nonutf8}",
        *M,
        *DB,
    ),
    c(
        "evaluate --config",
        2,
        "configuration file",
        "evaluate",
        "--thread",
        "done1",
        "--config",
        "{deep}",
        *M,
        *DB,
    ),
    c("evaluate --output", 2, "output", "evaluate", "--thread", "done1", "--output", "{dir}", *M, *DB),
    c("evaluate --model", 4, "PROVIDER:MODEL", "evaluate", "--thread", "done1", "--model", "bogus", *DB),
    c("evaluate --roster", 4, "model spec", "evaluate", "--thread", "done1", "--roster", ",", *M, *DB),
    c("evaluate --db", 4, "not a SQLite database", "evaluate", "--thread", "done1", *M, "--db", "{secret}"),
    # --- eval -------------------------------------------------------------------------------------
    c("eval", 2, "needs --pattern and --dataset", "eval"),
    c("eval --pattern", 2, "unknown pattern 'nope'", "eval", "--pattern", "nope", *EV),
    c(
        "eval --dataset",
        2,
        "does not exist",
        "eval",
        "--pattern",
        "repair",
        "--dataset",
        "{missing}",
        *EV_OUT,
    ),
    c("eval --dataset", 2, "dataset", "eval", "--pattern", "repair", "--dataset", "{nonutf8}", *EV_OUT),
    c("eval --dataset", 2, "dataset", "eval", "--pattern", "repair", "--dataset", "{deep}", *EV_OUT),
    c("eval --from-receipt", 2, "does not exist", "eval", "--from-receipt", "{missing}"),
    c("eval --from-receipt", 2, "receipt", "eval", "--from-receipt", "{nonutf8}"),
    c("eval --from-receipt", 2, "receipt", "eval", "--from-receipt", "{deep}"),
    c("eval --from-receipt", 2, "not a version-1 evaluation receipt", "eval", "--from-receipt", "{list}"),
    c("eval --n", 2, "positive integer", *EVAL, "--n", "0"),
    c("eval --arms", 2, "comma-separated subset", *EVAL, "--arms", "nope"),
    c(
        "eval --model",
        4,
        "PROVIDER:MODEL",
        "eval",
        "--pattern",
        "repair",
        "--dataset",
        "{game24}",
        "--model",
        "bogus",
        *EV_OUT,
    ),
    c(
        "eval --roster",
        4,
        "empty entry",
        "eval",
        "--pattern",
        "repair",
        "--dataset",
        "{game24}",
        "--roster",
        ",",
        *EV_OUT,
        isolate=True,
    ),
    c("eval --judge-model", 4, "PROVIDER:MODEL", *EVAL, "--judge-model", "bogus", isolate=True),
    c("eval --samples", 2, "positive integer", *EVAL, "--samples", "0"),
    c("eval --temperature", 2, "invalid float value", *EVAL, "--temperature", "warm"),
    c("eval --temperature", 2, "temperature", *EVAL, "--temperature", "-1"),
    c("eval --sample-temperature", 2, "sample_temperature", *EVAL, "--sample-temperature", "99"),
    c("eval --max-tokens", 2, "positive integer", *EVAL, "--max-tokens", "0"),
    c("eval --max-calls", 2, "positive integer", *EVAL, "--max-calls", "0"),
    c("eval --set", 2, "expected KEY=VALUE", *EVAL, "--set", "nokeyvalue"),
    c("eval --set", 2, "bogus", *EVAL, "--set", "bogus=1"),
    c("eval --seed", 2, "invalid int value", *EVAL, "--seed", "abc"),
    c("eval --concurrency", 2, "positive integer", *EVAL, "--concurrency", "0"),
    c("eval --concurrency", 2, "less than or equal to 64", *EVAL, "--concurrency", "100000"),
    c(
        "eval --out",
        2,
        "out",
        "eval",
        "--pattern",
        "repair",
        "--dataset",
        "{game24}",
        *M,
        "--n",
        "1",
        "--out",
        "{secret}",
    ),
    c(
        "eval --out",
        2,
        "out",
        "eval",
        "--pattern",
        "repair",
        "--dataset",
        "{game24}",
        *M,
        "--n",
        "1",
        "--out",
        "/proc/x/y",
    ),
]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding one finished repair thread, ``done1``."""
    folder = tmp_path_factory.mktemp("template")
    model = write_script(folder / "script.json", repair_routes(1))
    db = folder / "ck.sqlite"
    argv = ["run", "repair", "--task", TASK, "--verifier", GAME24, "--model", model, "--thread", "done1"]
    assert main([*argv, "--db", str(db)]) == 0
    return folder


def _files(base: Path) -> dict[str, str]:
    """Every file under ``base`` (SQLite's -wal/-shm aside), with its size, for 'nothing created'."""
    found = {}
    for path in base.rglob("*"):
        if path.name.endswith(("-wal", "-shm")) or path.is_dir():
            continue
        found[str(path.relative_to(base))] = "fifo" if path.is_fifo() else str(path.stat().st_size)
    return found


def _world(tmp_path: Path, template: Path) -> dict[str, str]:
    shutil.copy(template / "ck.sqlite", tmp_path / "ck.sqlite")
    shutil.copy(template / "ck.sqlite.key", tmp_path / "ck.sqlite.key")  # mode 0600 is copied
    shutil.copy(template / "script.json", tmp_path / "script.json")
    (tmp_path / "folder").mkdir()
    (tmp_path / "nonutf8.txt").write_bytes(b"\xff\xfe\xfa not utf-8")
    (tmp_path / "huge.json").write_text(json.dumps({"task": "a" * (11 * 2**20)}))
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "bad.json").write_text('{"task": ')
    (tmp_path / "boolcalls.json").write_text(json.dumps({"task": TASK, "max_calls": True}))
    (tmp_path / "extra.json").write_text(json.dumps({"task": TASK, "verifier": GAME24, "bogus": 1}))
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    os.mkfifo(tmp_path / "fifo")
    return {
        "db": str(tmp_path / "ck.sqlite"),
        "model": f"fake:{tmp_path / 'script.json'}",
        "dir": str(tmp_path / "folder"),
        "missing": str(tmp_path / "missing.json"),
        "newdb": str(tmp_path / "new" / "sub" / "ck.sqlite"),
        "evout": str(tmp_path / "evout"),
        "game24": str(DATA / "game24.csv"),
        "fifo": str(tmp_path / "fifo"),
        **{name: str(tmp_path / f"{name}.{ext}") for name, ext in (("nonutf8", "txt"), ("secret", "txt"))},
        **{
            name: str(tmp_path / f"{name}.json")
            for name in ("huge", "deep", "list", "bad", "boolcalls", "extra")
        },
    }


def _fill(arg: str, world: dict[str, str]) -> str:
    for name, value in world.items():
        arg = arg.replace(f"{{{name}}}", value)
    return arg


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))


def _invoke(argv: list[str], isolate: bool, capsys: pytest.CaptureFixture[str], cwd: Path) -> tuple[int, str]:
    if isolate:
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "reasoning_graphs.cli", *argv],
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=20,
                env=cli_env(),
                preexec_fn=_limit_memory,
            )
        except subprocess.TimeoutExpired:
            return -1, "the command hung (killed after 20 s)\n"
        return proc.returncode, proc.stderr
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def _params() -> list[Any]:
    return [
        pytest.param(
            case,
            id=f"{case.flag}: {' '.join(case.argv)[:60]}",
            marks=[pytest.mark.slow] if case.isolate else [],
        )
        for case in CASES
    ]


@pytest.mark.parametrize("case", _params())
def test_bad_input_gets_one_clear_line_and_changes_nothing(
    case: Case,
    tmp_path: Path,
    template: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = _world(tmp_path, template)
    monkeypatch.chdir(tmp_path)
    argv = [_fill(arg, world) for arg in case.argv]
    before_db, before_files = db_snapshot(tmp_path / "ck.sqlite"), _files(tmp_path)
    code, err = _invoke(argv, case.isolate, capsys, tmp_path)
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err, err
    assert lines and "error:" in lines[-1], f"no error line (exit {code}): {err[-500:]}"
    assert sum("error:" in line for line in lines) == 1, err[-1000:]
    assert case.needle in lines[-1], lines[-1]
    assert code == case.code, f"exit {code}, expected {case.code}: {lines[-1]}"
    assert SECRET[:12] not in err, "the error echoed the content of the file it was given"
    assert db_snapshot(tmp_path / "ck.sqlite") == before_db, "the database changed"
    assert _files(tmp_path) == before_files, "files were created or removed"


def _value_options() -> set[str]:
    """Every ``command --option`` that takes a value, and every positional, of the real parser."""
    wanted: set[str] = set()
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for option in sub._actions:
                    if option.nargs == 0 or option.dest == "help":
                        continue
                    label = option.option_strings[-1] if option.option_strings else option.dest
                    wanted.add(f"{name} {label}")
    return wanted


def test_every_command_and_value_flag_has_a_bad_input_case() -> None:
    covered = {case.flag for case in CASES}
    missing = sorted(_value_options() - covered)
    assert not missing, f"add bad-input cases for: {missing}"
