from __future__ import annotations

from pathlib import Path

import pytest

from reasoning_graphs.errors import InputError
from reasoning_graphs.evals import detect_format, load_dataset
from reasoning_graphs.evals.datasets import file_sha256
from tests.conftest import DATA

FILES = {
    "humaneval.jsonl": "humaneval",
    "mbpp_sanitized.jsonl": "mbpp",
    "gsm8k_test.jsonl": "gsm8k",
    "mt_bench_questions.jsonl": "questions",
    "vicuna_bench_questions.jsonl": "questions",
    "game24.csv": "game24",
}


@pytest.mark.parametrize(("name", "expected"), sorted(FILES.items()))
def test_every_shared_file_format_is_detected(name: str, expected: str) -> None:
    assert detect_format(DATA / name) == expected


def test_items_keep_ids_prompts_and_verifiers_without_references() -> None:
    mbpp = load_dataset(DATA / "mbpp_sanitized.jsonl", n=2)
    assert [i.id for i in mbpp.items] == ["mbpp/2", "mbpp/3"]
    assert mbpp.items[0].verifier == f"mbpp:2@{DATA.resolve() / 'mbpp_sanitized.jsonl'}"
    assert "assert" in mbpp.items[0].prompt and mbpp.verifiable and not mbpp.short_answers
    gsm = load_dataset(DATA / "gsm8k_test.jsonl", n=1).items[0]
    assert gsm.id == "gsm8k/0" and gsm.verifier == "numeric:18"
    assert "####" not in gsm.prompt and "The answer is N." in gsm.prompt and gsm.raw in gsm.prompt
    game = load_dataset(DATA / "game24.csv", n=1).items[0]
    assert (game.id, game.raw, game.verifier) == ("game24/1", "1 1 4 6", "game24:1 1 4 6")
    assert "1 1 4 6" in game.prompt
    human = load_dataset(DATA / "humaneval.jsonl", n=1).items[0]
    assert human.id == "HumanEval/0" and "def has_close_elements" in human.prompt
    question = load_dataset(DATA / "mt_bench_questions.jsonl", n=1).items[0]
    assert (
        question.id == "mt_bench_questions/81"
        and question.verifier is None
        and question.category == "writing"
    )


def test_the_dataset_is_identified_by_its_hash() -> None:
    data = load_dataset(DATA / "game24.csv", n=3)
    assert data.sha256 == file_sha256(DATA / "game24.csv") and len(data.sha256) == 64
    assert data.path == str((DATA / "game24.csv").resolve())


def test_shuffled_selection_is_seeded() -> None:
    a = load_dataset(DATA / "game24.csv", n=5, shuffle=True, seed=1)
    b = load_dataset(DATA / "game24.csv", n=5, shuffle=True, seed=1)
    c = load_dataset(DATA / "game24.csv", n=5, shuffle=True, seed=2)
    assert [i.id for i in a.items] == [i.id for i in b.items] != [i.id for i in c.items]


def test_unknown_or_missing_files_are_input_errors(tmp_path: Path) -> None:
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"foo": 1}\n', encoding="utf-8")
    with pytest.raises(InputError, match="unknown JSON fields"):
        detect_format(odd)
    csv = tmp_path / "x.csv"
    csv.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(InputError, match="Puzzles"):
        detect_format(csv)
    with pytest.raises(InputError, match="does not exist"):
        load_dataset(tmp_path / "missing.jsonl")
    with pytest.raises(InputError, match="positive"):
        load_dataset(DATA / "game24.csv", n=0)
