"""The one reader for files a user names: regular, bounded, UTF-8, shallow JSON, one-line errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reasoning_graphs._files import read_user_json, read_user_text
from reasoning_graphs.errors import ConfigurationError, InputError


def test_reads_text_and_json(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"task": "caf\\u00e9", "n": [1, 2]}', encoding="utf-8")
    assert read_user_json(tmp_path / "a.json", "input file") == {"task": "café", "n": [1, 2]}
    assert read_user_text(str(tmp_path / "a.json"), "input file").startswith('{"task"')


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.mkdir(), "is a directory, not a file"),
        (lambda p: os.mkfifo(p), "is not a regular file"),
        (lambda p: p.write_bytes(b"\xff\xfe not utf-8"), "is not UTF-8 text"),
        (lambda p: p.write_text("x" * 101), "is larger than 100 bytes"),
        (lambda p: p.write_text('{"task": '), "is not valid JSON: Expecting value at line 1"),
        (lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "is nested too deeply"),
    ],
    ids=["missing", "folder", "fifo", "non-utf8", "too-large", "bad-json", "deep"],
)
def test_each_refusal_names_the_file_and_the_problem_only(tmp_path: Path, make: object, needle: str) -> None:
    path = tmp_path / "f.json"
    make(path)  # type: ignore[operator]
    limit = 100 if needle.startswith("is larger") else 10 * 2**20
    with pytest.raises(InputError) as caught:
        read_user_json(path, "input file", max_bytes=limit)
    message = str(caught.value)
    assert message.startswith(f"input file {str(path)!r} ") and needle in message
    assert "\n" not in message and "task" not in message, "no file content in the message"


def test_the_error_type_is_the_caller_s(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"fake model script .* does not exist"):
        read_user_json(tmp_path / "nope.json", "fake model script", error=ConfigurationError)


def test_dev_zero_is_refused_without_reading(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is not a regular file"):
        read_user_text("/dev/zero", "input file")
