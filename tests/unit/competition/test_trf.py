"""TRF(x) export and parsing (T-13) and `arbiter pair`, the bbpPairings drop-in."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import pytest

from arbiter.cli.commands import pair as pair_command
from arbiter.competition import swiss
from arbiter.competition.swiss import SwissBye, SwissEntrant, SwissGame, pair_swiss_round, tournament_to_trf
from arbiter.competition.trf import TrfError, parse_trf, relax_forfeit_wins
from arbiter.competition.types import ResultKind


def entrants(n: int) -> list[SwissEntrant]:
    """n entrants, rated 2000 down in steps of 100."""
    return [SwissEntrant(i, 2000 - 100 * i, f"Player {i}") for i in range(1, n + 1)]


def results(line: str) -> list[str]:
    """The round entries of a 001 line (columns 92 onwards, 10 apart)."""
    return [line[at : at + 8] for at in range(91, len(line), 10)]


def player_lines(text: str) -> dict[int, str]:
    """001 lines by starting number."""
    return {int(line[4:8]): line for line in text.splitlines() if line.startswith("001")}


HISTORY = [
    [
        SwissGame(1, 1, 3, 2, 0),
        SwissGame(1, 4, 2, 1, 1, ResultKind.CLOSED_DRAW),
        SwissBye(1, 5),
    ],
    [
        SwissGame(2, 2, 1, 0, 2, ResultKind.BUSY_FORFEIT),
        SwissGame(2, 3, 5, 0, 0, ResultKind.BOTH_ABSENT),
        SwissBye(2, 4),
    ],
]


def test_export_writes_trf06_columns_and_our_point_system() -> None:
    text = tournament_to_trf(entrants(5), HISTORY, 4, name="Spring Swiss")
    lines = text.splitlines()
    assert lines[0] == "012 Spring Swiss"
    assert "XXR 4" in lines and "XXC white1" in lines
    assert "XXS W=2.0 D=1.0 PAB=2.0" in lines  # T-7, T-8 for JaVaFo and py4swiss
    assert {"BBW  2.0", "BBD  1.0", "BBU  2.0"} <= set(lines)  # ... and for bbpPairings
    # 2 and 1 met only by forfeit, 3 and 5 by double absence: written as forbidden pairs.
    assert "XXP 1 2" in lines and "XXP 3 5" in lines
    players = player_lines(text)
    one = players[1]
    assert one[14:47].rstrip() == "Player 1" and one[48:52] == "1900"
    assert one[80:84] == " 4.0"  # a win and a forfeit win (T-7, T-18)
    assert results(one) == ["   3 w 1", "   2 b +"]
    assert results(players[2]) == ["   4 b =", "   1 w -"]
    assert results(players[3]) == ["   1 b 0", "   5 w -"]
    assert results(players[5]) == ["0000 - U", "   3 b -"]
    assert results(players[4]) == ["   2 w =", "0000 - U"]
    assert players[4][80:84] == " 3.0"  # a draw and a 2-point bye (T-8)


def test_export_reads_back_with_the_same_facts() -> None:
    tournament = parse_trf(tournament_to_trf(entrants(5), HISTORY, 4))
    assert tournament.rounds == 4 and tournament.rounds_played == 2
    assert tournament.forbidden == {frozenset({1, 2}), frozenset({3, 5})}
    assert [p.points_x10 for p in tournament.players] == [40, 10, 0, 30, 20]
    state = tournament.pairing_state()
    by_id = state.by_id()
    assert by_id[1].colours == "w"  # the forfeit is no game for colours
    assert by_id[5].byes == 1 and by_id[1].forfeit_wins == 1
    assert by_id[1].score == 40  # tenths of a point, from XXS


def test_export_is_read_by_py4swiss_without_complaint() -> None:
    text = tournament_to_trf(entrants(5), HISTORY, 4)
    parsed = swiss._parse_trf_for_engine(text)  # validates points and opponents like py4swiss
    assert [p.points_times_ten for p in parsed.player_sections] == [40, 10, 0, 30, 20]
    assert parsed.x_section.number_of_rounds == 4


def test_double_rounds_are_two_trf_rounds_with_reversed_colours() -> None:
    history = [
        [
            SwissGame(1, 1, 3, 2, 0, leg=1),
            SwissGame(1, 3, 1, 1, 1, leg=2),
            SwissGame(1, 2, 4, 0, 2, ResultKind.NEVER_SAT, leg=1),
            SwissGame(1, 4, 2, 2, 0, leg=2),
            SwissBye(1, 5, 4),
        ]
    ]
    text = tournament_to_trf(entrants(5), history, 3, double=True)
    assert "XXR 6" in text.splitlines()
    players = player_lines(text)
    assert results(players[1]) == ["   3 w 1", "   3 b ="]
    assert results(players[2]) == ["   4 w L", "   4 b 0"]  # L: lost without moving (T-16, R-3)
    assert results(players[5]) == ["0000 - U", "0000 - U"]  # one bye worth 4 (T-8, T-12)
    assert players[1][80:84] == " 3.0" and players[4][80:84] == " 4.0" and players[5][80:84] == " 4.0"


def test_names_are_cleaned_and_cut_to_their_columns() -> None:
    people = [SwissEntrant(1, 0, "A\tvery long name that goes on and on and on"), SwissEntrant(2, 12000, "B")]
    lines = player_lines(tournament_to_trf(people, [], 1))
    by_number = {line[14:47].strip()[0]: line for line in lines.values()}
    assert by_number["A"][14:47] == "A very long name that goes on and"
    assert by_number["A"][48:52] == "    "  # no rating
    assert by_number["B"][48:52] == "9999"  # TRF has four digits


def test_relaxing_forfeit_wins_keeps_points_and_drops_the_link() -> None:
    text = tournament_to_trf(entrants(5), HISTORY, 4)
    relaxed = relax_forfeit_wins(text)
    players = player_lines(relaxed)
    assert results(players[1]) == ["   3 w 1", "0000 - F"]
    assert results(players[2]) == ["   4 b =", "0000 - Z"]
    assert results(players[3])[1] == "0000 - Z"  # double absence: both zero-point byes
    assert [p.points_times_ten for p in swiss._parse_trf_for_engine(relaxed).player_sections] == [40, 10, 0, 30, 20]


STANDARD_TRF = """\
012 A club Swiss written by another program
XXR 3
001    1 m    Alpha, Ann                        2100                             1.0    1     3 w 1
001    2 m    Beta, Bob                         2000                             0.5    2     4 b =
001    3 m    Gamma, Gus                        1900                             0.0    4     1 b 0
001    4 m    Delta, Dan                        1800                             0.5    3     2 w =
"""


def test_parse_reads_other_programs_files_with_fide_points() -> None:
    tournament = parse_trf(STANDARD_TRF)
    assert [p.name for p in tournament.players] == ["Alpha, Ann", "Beta, Bob", "Gamma, Gus", "Delta, Dan"]
    assert [p.rating for p in tournament.players] == [2100, 2000, 1900, 1800]
    assert tournament.pairing_state().by_id()[1].score == 10  # default FIDE points, in tenths


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("XXR 3\n001    2      X" + " " * 80 + "\n", r"starting numbers must run 1\.\.1; missing \[1\]"),
        ("XXR 3\n", "no player"),
        ("XXR x\n", "line 1: cannot read"),
        (STANDARD_TRF.replace("   3 w 1", "   3 q 1"), "line 3: bad round entry"),
        (STANDARD_TRF.replace("   3 w 1", "   7 w 1"), "opponent 7 is not in the file"),
        ("XXS Q=1.0\n", "unknown XXS code 'Q'"),
    ],
)
def test_parse_errors_say_where(text: str, message: str) -> None:
    with pytest.raises(TrfError, match=message):
        parse_trf(text)


# --- arbiter pair -------------------------------------------------------------------------


def run_cli(tmp_path: Path, text: str | None, *extra: str) -> int:
    """Parse `pair FILE [extra]` with the subcommand's own parser and run its handler."""
    parser = argparse.ArgumentParser(prog="arbiter")
    pair_command.register(parser.add_subparsers(dest="command", required=True))
    path = tmp_path / "t.trf"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    args = parser.parse_args(["pair", str(path), *extra])
    return args.handler(args)


def test_pair_prints_like_bbppairings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tournament_to_trf(entrants(5), HISTORY, 4)
    assert run_cli(tmp_path, text) == 0
    out = capsys.readouterr().out.splitlines()
    expected = swiss.pair_trf(text)
    assert out[0] == str(len(expected.pairs) + 1)
    assert out[1:] == [f"{w} {b}" for w, b in expected.pairs] + [f"{expected.bye} 0"]


def test_pair_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(tmp_path, STANDARD_TRF, "--json") == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["engine"] == "py4swiss" and answer["bye"] is None
    assert sorted(x for pair in answer["pairs"] for x in pair) == [1, 2, 3, 4]


def test_pair_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(tmp_path, None) == 5  # file missing
    assert run_cli(tmp_path, "XXR 3\n001 garbage\n") == 3  # not TRF
    assert "Error parsing file" in capsys.readouterr().err
    wrong_points = STANDARD_TRF.replace("2100                             1.0", "2100                             2.0")
    assert run_cli(tmp_path, wrong_points) == 3  # points that do not add up, as bbpPairings checks
    assert "Calculated points for starting number '1' as 1.0, expected 2.0" in capsys.readouterr().err
    # 4 entrants after a complete round robin: a fourth round would need a rematch (T-13).
    round_robin = [
        [SwissGame(1, 1, 3, 2, 0), SwissGame(1, 2, 4, 1, 1)],
        [SwissGame(2, 4, 1, 0, 2), SwissGame(2, 3, 2, 0, 2)],
        [SwissGame(3, 1, 2, 2, 0), SwissGame(3, 3, 4, 1, 1)],
    ]
    assert run_cli(tmp_path, tournament_to_trf(entrants(4), round_robin, 4)) == 1
    assert "No valid pairing exists: no legal pairing" in capsys.readouterr().err


def test_pair_strict_refuses_what_the_service_relaxes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    people = [SwissEntrant(i, 2000 - 100 * i, f"P{i}") for i in range(1, 6)]
    busy = ResultKind.BUSY_FORFEIT
    history = [
        [SwissBye(1, 1), SwissGame(1, 2, 3, 2, 0, busy), SwissGame(1, 4, 5, 2, 0, busy)],
        [SwissBye(2, 3), SwissGame(2, 2, 4, 1, 1), SwissGame(2, 1, 5, 0, 2, busy)],
    ]
    text = tournament_to_trf(people, history, 4)
    assert run_cli(tmp_path, text, "--strict") == 1
    assert run_cli(tmp_path, text) == 0
    captured = capsys.readouterr()
    assert "warning: C.04.1 d waived" in captured.err


@pytest.mark.parametrize("seed", range(6))
def test_pair_matches_stock_py4swiss_on_ordinary_tournaments(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Drop-in: on single-game rounds the output is py4swiss's own CLI output, line for line.
    from py4swiss.engines import DutchEngine
    from py4swiss.trf import TrfParser

    rng = random.Random(seed)
    people = [SwissEntrant(i, rng.randint(1200, 2200), f"P{i}") for i in range(1, rng.randint(7, 24))]
    history: list = []
    for r in range(1, 4):
        pairing = pair_swiss_round(people, history, r, 5)
        history.append(
            [SwissGame(r, w, b, *rng.choice([(2, 0), (1, 1), (0, 2)])) for w, b in pairing.pairs]
            + ([SwissBye(r, pairing.bye)] if pairing.bye else [])
        )
    text = tournament_to_trf(people, history, 5)
    assert run_cli(tmp_path, text) == 0
    ours = capsys.readouterr().out
    stock = DutchEngine.generate_pairings(TrfParser.parse(tmp_path / "t.trf"))
    lines = [p.to_string() for p in stock]
    assert ours == f"{len(lines)}\n" + "".join(line + "\n" for line in lines)
