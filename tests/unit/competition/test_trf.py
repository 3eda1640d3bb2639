"""TRF export and reading (T-13) and `arbiter pair`, the bbpPairings drop-in.

Every input form of the reference corpus is exercised by test_swiss_corpus.py; these tests
cover what the corpus does not: our export, readable errors, the CLI's options and statuses.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.competition import swiss
from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.swiss import pair_swiss_round, tournament_to_trf
from arbiter.competition.swiss_model import prepare
from arbiter.competition.trf import TrfError, parse_trf, prepared_model
from arbiter.vocabulary import ResultKind
from arbiter_tools.cli.commands import pair as pair_command


def entrants(n: int) -> dict[int, Entrant]:
    """n entrants, rated 2000 down in steps of 100."""
    return {i: Entrant(f"Player {i}", rating=2000 - 100 * i) for i in range(1, n + 1)}


def results(line: str) -> list[str]:
    """The round entries of a 001 line (columns 92 onwards, 10 apart)."""
    return [line[at : at + 8] for at in range(91, len(line), 10)]


def player_lines(text: str) -> dict[int, str]:
    """001 lines by starting number."""
    return {int(line[4:8]): line for line in text.splitlines() if line.startswith("001")}


HISTORY = [
    [
        PlayedGame(1, 1, 3, 2, 0),
        PlayedGame(1, 4, 2, 1, 1, ResultKind.CLOSED_DRAW),
        Bye(1, 5),
    ],
    [
        PlayedGame(2, 2, 1, 0, 2, ResultKind.BUSY_FORFEIT),
        PlayedGame(2, 3, 5, 0, 0, ResultKind.BOTH_ABSENT),
        Bye(2, 4),
    ],
]


def play(people: dict[int, Entrant], rounds: int, total: int, seed: int, *, double: bool = False) -> list:
    """A history of `rounds` rounds paired by the engine, with random results and some forfeits."""
    rng = random.Random(seed)
    history: list = []
    for r in range(1, rounds + 1):
        pairing = pair_swiss_round(people, history, r, total, double=double)
        items: list = []
        for white, black in pairing.pairs:
            for leg in (1, 2) if double else (1,):
                w, b = (white, black) if leg == 1 else (black, white)
                if rng.random() < 0.05:
                    items.append(PlayedGame(r, w, b, 2, 0, ResultKind.BUSY_FORFEIT, leg))
                else:
                    wp = rng.choice((2, 1, 0))
                    items.append(PlayedGame(r, w, b, wp, 2 - wp, ResultKind.NORMAL, leg))
        if pairing.bye is not None:
            items.append(Bye(r, pairing.bye, 4 if double else 2))
        history.append(items)
    return history


# --- export -------------------------------------------------------------------------------


def test_export_writes_trf16_columns_and_our_point_system() -> None:
    text = tournament_to_trf(entrants(5), HISTORY, 4, name="Spring Swiss")
    lines = text.splitlines()
    assert lines[0] == "012 Spring Swiss"
    assert "XXR 4" in lines and "XXC white1" in lines
    assert "XXS W=2.0 D=1.0 PAB=2.0" in lines  # T-7, T-8 for JaVaFo
    assert {"BBW  2.0", "BBD  1.0", "BBU  2.0"} <= set(lines)  # ... and for bbpPairings
    # 2 and 1 met only by forfeit, 3 and 5 by double absence (round 2): forbidden from round 3 on.
    assert "260   3   4    1    2" in lines and "260   3   4    3    5" in lines
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


def test_export_reads_back_as_the_model_the_service_pairs_from() -> None:
    people = entrants(13)
    history = play(people, 4, 6, seed=3)
    text = tournament_to_trf(people, history, 6)
    model = prepared_model(prepare(people, history, double=False), rounds=6)
    read = parse_trf(text)
    assert read.players == model.players and read.forbidden == model.forbidden
    assert (read.rounds, read.played_rounds, read.points, read.first_colour) == (6, 4, model.points, "w")
    # ... so `arbiter pair` on the export answers what the service pairs next.
    ours = pair_swiss_round(people, history, 5, 6)
    start = prepare(people, history, double=False).start_numbers()
    assert swiss.pair_trf(text).pairs == [(start[w], start[b]) for w, b in ours.pairs]


def test_double_rounds_are_two_trf_rounds_with_reversed_colours() -> None:
    history = [
        [
            PlayedGame(1, 1, 3, 2, 0, leg=1),
            PlayedGame(1, 3, 1, 1, 1, leg=2),
            PlayedGame(1, 2, 4, 0, 2, ResultKind.NEVER_SAT, leg=1),
            PlayedGame(1, 4, 2, 2, 0, leg=2),
            Bye(1, 5, 4),
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
    people = {1: Entrant("A\tvery long name that goes on and on and on", rating=0), 2: Entrant("B", rating=12000)}
    lines = player_lines(tournament_to_trf(people, [], 1))
    by_number = {line[14:47].strip()[0]: line for line in lines.values()}
    assert by_number["A"][14:47] == "A very long name that goes on and"
    assert by_number["A"][48:52] == "    "  # no rating
    assert by_number["B"][48:52] == "9999"  # TRF has four digits


# --- reading ------------------------------------------------------------------------------

STANDARD_TRF = """\
012 A club Swiss written by another program
XXR 3
XXC white1
001    1 m    Alpha, Ann                        2100                             1.0    1     3 w 1
001    2 m    Beta, Bob                         2000                             0.5    2     4 b =
001    3 m    Gamma, Gus                        1900                             0.0    4     1 b 0
001    4 m    Delta, Dan                        1800                             0.5    3     2 w =
"""


def test_reading_another_programs_file_with_fide_points() -> None:
    tournament = parse_trf(STANDARD_TRF)
    assert [p.name for p in tournament.players.values()] == ["Alpha, Ann", "Beta, Bob", "Gamma, Gus", "Delta, Dan"]
    assert [p.rating for p in tournament.players.values()] == [2100, 2000, 1900, 1800]
    assert [p.points for p in tournament.players.values()] == [10, 5, 0, 5]  # tenths, FIDE's default points
    assert tournament.played_rounds == 1 and tournament.rounds == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("XXR 3\n001    2      X" + " " * 66 + "0.0\n", r"starting numbers must run 1\.\.2; missing \[1\]"),
        ("XXR 3\n", "no player"),
        ("XXR x\n", "line 1: number of rounds: not a whole number"),
        (STANDARD_TRF.replace("   3 w 1", "   3 q 1"), "line 4: player 1: bad colour 'q'"),
        (STANDARD_TRF.replace("   3 w 1", "   3 w 7"), "line 4: player 1: bad result '7'"),
        (STANDARD_TRF.replace("   3 w 1", "   7 w 1"), "round 1 of player 1 contradicts the entry of player 7"),
        (STANDARD_TRF.replace("XXR 3\n", ""), r"the total number of rounds must be given \(XXR or 142\)"),
        (STANDARD_TRF.replace("2100                             1.0", "2100                             2.0"),
         r"the points of player 1 \(2\.0\) do not match the results \(1\.0\)"),
        (STANDARD_TRF.replace("XXR 3", "XXR 1"), "1 rounds are in the file but the tournament has 1"),
        (STANDARD_TRF + "013 Team\n", "team tournaments are not supported"),
        (STANDARD_TRF + "192 FIDE_DUBOV\n", "unsupported tournament type 'FIDE_DUBOV'"),
    ],
)
def test_reading_errors_say_where_and_why(text: str, message: str) -> None:
    with pytest.raises(TrfError, match=message):
        parse_trf(text)


# --- arbiter pair -------------------------------------------------------------------------


def run_cli(tmp_path: Path, text: str | bytes | None, *extra: str) -> int:
    """Parse `pair FILE [extra]` with the subcommand's own parser and run its handler."""
    parser = argparse.ArgumentParser(prog="arbiter")
    pair_command.register(parser.add_subparsers(dest="command", required=True))
    path = tmp_path / "t.trf"
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    elif text is not None:
        path.write_bytes(text)
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
    assert answer["engine"] == swiss.ENGINE and answer["bye"] is None and answer["round"] == 2
    assert sorted(x for pair in answer["pairs"] for x in pair) == [1, 2, 3, 4]


def test_pair_exit_statuses_and_never_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(tmp_path, None) == 5  # the file cannot be opened
    assert run_cli(tmp_path, "XXR 3\n001 garbage\n") == 3  # not TRF
    assert "Error parsing file" in capsys.readouterr().err
    assert run_cli(tmp_path, b"XXR 3\n\xff\xfe\n") == 3  # not UTF-8
    assert "not legal UTF-8" in capsys.readouterr().err
    assert run_cli(tmp_path, STANDARD_TRF.replace("XXC white1\n", "").replace("   3 w 1", "   3 - +")) == 3
    # 4 entrants after a complete round robin: a fourth round would need a rematch (T-13).
    round_robin = [
        [PlayedGame(1, 1, 3, 2, 0), PlayedGame(1, 2, 4, 1, 1)],
        [PlayedGame(2, 4, 1, 0, 2), PlayedGame(2, 3, 2, 0, 2)],
        [PlayedGame(3, 1, 2, 2, 0), PlayedGame(3, 3, 4, 1, 1)],
    ]
    assert run_cli(tmp_path, tournament_to_trf(entrants(4), round_robin, 4)) == 1
    assert "No valid pairing exists" in capsys.readouterr().err


def test_pair_reports_an_engine_fault_with_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(text: str) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(pair_command, "pair_trf", broken)
    assert run_cli(tmp_path, STANDARD_TRF) == 2
    assert "unexpected RuntimeError: boom" in capsys.readouterr().err


@pytest.mark.parametrize("double", [False, True], ids=["single", "home-and-away"])
def test_check_confirms_every_round_of_a_tournament_paired_by_the_engine(
    double: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    people = entrants(15)
    history = play(people, 6, 6, seed=7, double=double)
    assert run_cli(tmp_path, tournament_to_trf(people, history, 6, double=double), "--check") == 0
    assert "6 " in capsys.readouterr().out
    assert run_cli(tmp_path, tournament_to_trf(people, history, 6, double=double), "--check", "--json") == 0
    assert json.loads(capsys.readouterr().out) == {"rounds": 6, "identical": True, "first_difference": None}


def test_check_names_the_first_round_that_differs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    people = entrants(8)
    history = play(people, 3, 5, seed=1)
    # swap the colours of round 3's first board: a pairing the engine did not make
    white, black = next((g.white, g.black) for g in history[2] if isinstance(g, PlayedGame))
    history[2] = [
        PlayedGame(g.round, g.black, g.white, g.black_points, g.white_points, g.kind)
        if isinstance(g, PlayedGame) and (g.white, g.black) == (white, black) else g
        for g in history[2]
    ]
    start = prepare(people, history, double=False).start_numbers()
    assert run_cli(tmp_path, tournament_to_trf(people, history, 5), "--check", "--json") == 1
    report = json.loads(capsys.readouterr().out)
    assert report["rounds"] == 2 and report["first_difference"]["trf_round"] == 3
    assert [start[black], start[white]] in report["first_difference"]["file"]["pairs"]


@settings(max_examples=60)
@given(
    st.integers(4, 24),
    st.integers(1, 5),
    st.booleans(),
    st.lists(st.text(min_size=0, max_size=45), min_size=24, max_size=24),
    st.lists(st.floats(-50, 12000, allow_nan=False), min_size=24, max_size=24),
    st.integers(0, 2**32 - 1),
)
def test_the_export_reads_back_as_the_model_and_pairs_as_the_service(
    n: int, rounds: int, double: bool, names: list[str], ratings: list[float], seed: int
) -> None:
    # T-13: `arbiter pair` on an exported tournament answers what the service pairs next.
    people = {i + 1: Entrant(names[i], rating=ratings[i]) for i in range(n)}
    total = rounds + 2
    try:
        history = play(people, rounds, total, seed, double=double)
    except swiss.NoValidPairing:
        return  # a small field ran out of opponents: nothing to export
    text = tournament_to_trf(people, history, total, double=double)
    prepared = prepare(people, history, double=double)
    model = prepared_model(prepared, rounds=total * prepared.legs_per_round)
    read = parse_trf(text)
    assert read.players == model.players and read.forbidden == model.forbidden
    if not double:
        start = prepared.start_numbers()
        try:
            ours = pair_swiss_round(people, history, rounds + 1, total)
        except swiss.NoValidPairing:
            with pytest.raises(swiss.NoValidPairing):
                swiss.pair_trf(text)
            return
        assert swiss.pair_trf(text).pairs == [(start[w], start[b]) for w, b in ours.pairs]
