"""`arbiter perft` and `arbiter moves`."""

from __future__ import annotations

import argparse
import json

import pytest

from arbiter_tools.cli.commands import moves, perft


def run(module: object, argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="arbiter")
    module.register(parser.add_subparsers(dest="command", required=True))  # type: ignore[attr-defined]
    args = parser.parse_args(argv)
    return int(args.handler(args))


def test_perft_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(perft, ["perft", "international", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"nodes", "seconds", "routes"}
    assert out["nodes"] == 4265 and out["seconds"] >= 0 and out["routes"] is False


def test_perft_routes_counts_every_capture_route(capsys: pytest.CaptureFixture[str]) -> None:
    # Two routes around the same four pieces: one move, two routes.
    fen = "W:WK13:B10,19,8,4,18,2,11"
    assert run(perft, ["perft", "italian", "1", "--fen", fen, "--routes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) | {"seconds": 0} == {"nodes": 2, "seconds": 0, "routes": True}
    assert run(perft, ["perft", "italian", "1", "--fen", fen, "--routes"]) == 0
    assert capsys.readouterr().out.startswith("perft(1) = 2 ")


def test_perft_text_from_fen(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(perft, ["perft", "english", "2", "--fen", "B:W21-32:B1-12"]) == 0
    assert capsys.readouterr().out.startswith("perft(2) = 49 ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["perft", "frysk", "3"], "known variants: international"),
        (["perft", "russian", "3", "--fen", "W:W33:B1"], "not on the russian board"),
        (["perft", "russian", "-1"], "depth must be >= 0"),
        (["moves", "checkerz"], "unknown draughts variant"),
        (["moves", "italian", "--fen", "W:W1:B9"], "crowning row"),
    ],
)
def test_bad_input_exits_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    module = perft if argv[0] == "perft" else moves
    assert run(module, argv) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


def test_moves_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(moves, ["moves", "english"]) == 0
    assert capsys.readouterr().out.split() == ["9-13", "9-14", "10-14", "10-15", "11-15", "11-16", "12-16"]


def test_moves_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(moves, ["moves", "international", "--fen", "W:WK46:B41,32,23", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["turn"] == "white" and out["fen"] == "W:WK46:B23,32,41"
    assert out["moves"][0] == {"notation": "46x5", "path": [46, 37, 28, 5], "captured": [41, 32, 23], "crowns": False}
    assert len(out["moves"]) == 4


def test_main_knows_both_commands(capsys: pytest.CaptureFixture[str]) -> None:
    from arbiter_tools.cli.main import main

    assert main(["perft", "brazilian", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nodes"] == 302
    assert main(["moves", "russian", "--fen", "W:W22:B18"]) == 0
    assert capsys.readouterr().out.split() == ["22x15"]
