"""`arbiter rate`: the Glicko-2 calculator (R-5)."""

from __future__ import annotations

import argparse
import json

import pytest

from arbiter_tools.cli.commands import rate

GLICKMAN = [
    "--rating",
    "1500",
    "--rd",
    "200",
    "--vol",
    "0.06",
    "--tau",
    "0.5",
    "--game",
    "1400:30:win",
    "--game",
    "1550:100:loss",
    "--game",
    "1700:300:loss",
]


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="arbiter")
    rate.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["rate", *argv])
    return args.handler(args)


def test_glickmans_example_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run([*GLICKMAN, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"rating", "rd", "vol"}
    assert out["rating"] == pytest.approx(1464.06, abs=0.01)
    assert round(out["rd"], 2) == 151.52
    assert out["vol"] == pytest.approx(0.05999, abs=1e-5)


def test_glickmans_example_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(GLICKMAN) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("rating  1464.05")
    assert lines[1] == "rd      151.52"
    assert lines[2] == "vol     0.059996"


def test_draw_and_default_tau(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        run(
            [
                "--rating",
                "1500",
                "--rd",
                "350",
                "--vol",
                "0.06",
                "--game",
                "1500:350:draw",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["rating"] == pytest.approx(1500)
    assert out["rd"] < 350


def test_no_game_grows_the_deviation(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--rating", "1500", "--rd", "200", "--vol", "0.06", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rating"] == 1500
    assert out["rd"] > 200


def test_out_of_range_input_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--rating", "1500", "--rd", "400", "--vol", "0.06"]) == 2
    assert "at most 350" in capsys.readouterr().err


@pytest.mark.parametrize(
    "game", ["1400:30", "1400:30:won", "x:30:win", "1400:y:loss", "1400:30:win:1"]
)
def test_bad_game_exits_2(game: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run(["--rating", "1500", "--rd", "200", "--vol", "0.06", "--game", game])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "OPP_RATING:OPP_RD" in err or "must be numbers" in err
