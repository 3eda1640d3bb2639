"""`arbiter tripleblock` (TB-5)."""

from __future__ import annotations

import argparse
import json

import pytest

from arbiter_tools.cli.commands import tripleblock


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="arbiter")
    tripleblock.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["tripleblock", *argv])
    return args.handler(args)


def test_one_year_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--days", "365", "--start", "2026-01-01", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "increment_days": 1,
        "bank_days": 75,
        "length_days": 350,
        "end": "2026-12-17",
    }


def test_two_years_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--days", "730", "--start", "2026-01-01"]) == 0
    out = capsys.readouterr().out
    assert "increment  5 days" in out
    assert "bank       50 days" in out
    assert "length     700 days" in out
    assert "end        2027-12-02" in out


def test_default_start_is_today(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--days", "400", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["length_days"] == 400


def test_too_short_fails_with_a_clear_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--days", "299", "--json"]) != 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "too short" in captured.err and "300 days" in captured.err


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 18
    assert lines[1].split() == ["1", "50", "300"]
    assert lines[-1].split() == ["9", "75", "1150"]


def test_table_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--table", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[1] == {"increment_days": 1, "bank_days": 75, "length_days": 350}


@pytest.mark.parametrize(
    "argv",
    [[], ["--days", "x"], ["--days", "400", "--start", "2026-02-30"], ["--table", "--days", "400"]],
)
def test_bad_input_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run(argv)
    assert exit_info.value.code == 2
    assert "error" in capsys.readouterr().err
