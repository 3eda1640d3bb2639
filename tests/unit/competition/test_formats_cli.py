"""`arbiter rounds` (T-2, T-9..T-12)."""

from __future__ import annotations

import json

import pytest

from arbiter_tools.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_rounds_json_swiss(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rounds", "10", "--json")
    assert code == 0
    assert json.loads(out) == {"format": "swiss", "rounds": 6, "games_per_pairing": 1, "rules": ["T-2", "T-9"]}


def test_rounds_json_four_entrants(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rounds", "4", "--extra", "--json")
    assert code == 0
    assert json.loads(out) == {
        "format": "round_robin",
        "rounds": 3,
        "games_per_pairing": 2,
        "rules": ["T-2", "T-9", "T-10", "T-11"],
    }


def test_rounds_json_threshold_extra_double(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rounds", "25", "--threshold", "20", "--extra", "--double", "--json")
    assert code == 0
    assert json.loads(out) == {
        "format": "swiss",
        "rounds": 8,
        "games_per_pairing": 2,
        "rules": ["T-2", "T-9", "T-11", "T-12"],
    }


def test_rounds_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rounds", "9", "--threshold", "12")
    assert code == 0
    lines = out.splitlines()
    assert lines[:4] == ["format: round robin", "rounds: 9", "games per pairing: 1", "rules: T-2, T-9"]
    assert "(T-2)" in lines[4] and "(T-9)" in lines[5]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["rounds", "3"], "(T-3)"),
        (["rounds", "201"], "(T-3)"),
        (["rounds", "10", "--threshold", "25"], "threshold 25 is outside 7..20 (T-1)"),
    ],
)
def test_rounds_bad_input_exits_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert message in err


def test_rounds_non_integer_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["rounds", "ten"])
    assert exit_info.value.code == 2
