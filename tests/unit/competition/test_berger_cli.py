"""`arbiter berger` (T-8, T-12, T-14)."""

from __future__ import annotations

import json

import pytest

from arbiter_tools.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_berger_text_even(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "berger", "6")
    assert code == 0
    assert out.splitlines() == [
        "R1: 1-6 2-5 3-4",
        "R2: 6-4 5-3 1-2",
        "R3: 2-6 3-1 4-5",
        "R4: 6-5 1-4 2-3",
        "R5: 3-6 4-2 5-1",
    ]


def test_berger_text_odd_shows_the_bye(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "berger", "5")
    assert code == 0
    assert out.splitlines() == [
        "R1: 1-bye 2-5 3-4",
        "R2: 4-bye 5-3 1-2",
        "R3: 2-bye 3-1 4-5",
        "R4: 5-bye 1-4 2-3",
        "R5: 3-bye 4-2 5-1",
    ]


def test_berger_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "berger", "4", "--json")
    assert code == 0
    assert json.loads(out) == {"rounds": [[[1, 4], [2, 3]], [[4, 3], [1, 2]], [[2, 4], [3, 1]]]}


def test_berger_json_odd_bye_is_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "berger", "3", "--json")
    assert code == 0
    assert json.loads(out) == {"rounds": [[[1, 0], [2, 3]], [[3, 0], [1, 2]], [[2, 0], [3, 1]]]}


def test_berger_double(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "berger", "3", "--double")
    assert code == 0
    assert out.splitlines() == ["R1: 1-bye 2-3 3-2", "R2: 3-bye 1-2 2-1", "R3: 2-bye 3-1 1-3"]
    code, out, _ = run(capsys, "berger", "4", "--double", "--json")
    assert json.loads(out)["rounds"][0] == [[1, 4], [4, 1], [2, 3], [3, 2]]


@pytest.mark.parametrize("n", ["1", "0", "21", "-4"])
def test_berger_bad_size_exits_2(capsys: pytest.CaptureFixture[str], n: str) -> None:
    code, out, err = run(capsys, "berger", "--", n) if n.startswith("-") else run(capsys, "berger", n)
    assert code == 2
    assert out == ""
    assert "round robin has 2..20" in err
