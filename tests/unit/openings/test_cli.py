"""`arbiter openings`: listing the official tables from the command line."""

from __future__ import annotations

import json

import pytest

from arbiter_tools.cli.main import main


def test_lists_the_table_up_to_class_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["openings", "italian", "--mode", "table_up_to_1"]) == 0
    out = capsys.readouterr().out
    assert "mode table_up_to_1 (O-5): 83 openings" in out
    assert "   1  21-17 9-13 25-21     1B" in out
    assert " 3N" not in out


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["openings", "english", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["variant"] == "english" and data["mode"] == "table_all" and data["count"] == 174
    skunk = data["openings"][173]
    assert skunk["name"] == "Skunk" and skunk["moves"] == ["12-16", "24-20", "10-15"] and skunk["class"] == "1B"


def test_variant_without_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["openings", "russian"]) == 2
    assert "russian has no official opening table" in capsys.readouterr().err


def test_only_table_modes_are_offered() -> None:
    with pytest.raises(SystemExit):
        main(["openings", "italian", "--mode", "free"])
