"""Arena points, streaks, boosts, leaderboard key and recomputed leaderboard (AR-4, AR-5, AR-6)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.competition.arena import (
    MAX_LEADERBOARD_POINTS,
    MAX_LEADERBOARD_WINS,
    ArenaError,
    ArenaGame,
    ArenaPlayerRecord,
    game_points,
    leaderboard_points_and_wins,
    leaderboard_score,
    recompute_leaderboard,
    recompute_records,
    score_game,
)
from arbiter.vocabulary import GameResult, Score, Side

# Sequence notation: W/D/L for a game, lower case for a boosted one ("WWw").
_OUTCOME = {"W": Score.WIN, "D": Score.DRAW, "L": Score.LOSS}


def play(sequence: str) -> tuple[list[int], ArenaPlayerRecord]:
    """Points of each game of `sequence` and the record after the last one."""
    record = ArenaPlayerRecord()
    points: list[int] = []
    for symbol in sequence:
        earned, record = score_game(record, _OUTCOME[symbol.upper()], boosted=symbol.islower())
        points.append(earned)
    return points, record


def game(white: str, black: str, result: str, boosted: str = "") -> ArenaGame:
    """A finished game; `boosted` holds "w", "b" or both for the sides that boosted."""
    return ArenaGame(white, black, GameResult.from_pdn(result), "w" in boosted, "b" in boosted)


# --- AR-4 / AR-5: one game at a time -------------------------------------------------------------


@pytest.mark.parametrize(
    ("sequence", "points"),
    [
        ("", []),
        ("W", [2]),
        ("D", [1]),
        ("L", [0]),
        ("WW", [2, 2]),
        # AR-4: the third consecutive win is the first worth 3.
        ("WWW", [2, 2, 3]),
        ("WWWWWW", [2, 2, 3, 3, 3, 3]),
        # AR-4: a draw or a loss ends the streak; the count starts again.
        ("WWDW", [2, 2, 1, 2]),
        ("WWDWWW", [2, 2, 1, 2, 2, 3]),
        ("WWWLWWW", [2, 2, 3, 0, 2, 2, 3]),
        ("WWWDW", [2, 2, 3, 1, 2]),
        ("LWLWLW", [0, 2, 0, 2, 0, 2]),
        ("DDDDWW", [1, 1, 1, 1, 2, 2]),
        # AR-5: a boost doubles a win: 4, or 6 on a streak.
        ("w", [4]),
        ("ww", [4, 4]),
        ("www", [4, 4, 6]),
        ("WWw", [2, 2, 6]),
        ("wWW", [4, 2, 3]),
        ("WwWw", [2, 4, 3, 6]),
        # AR-5: a boosted draw or loss is not doubled, and it ends the streak (AR-4).
        ("d", [1]),
        ("l", [0]),
        ("WWdW", [2, 2, 1, 2]),
        ("WWWlw", [2, 2, 3, 0, 4]),
    ],
)
def test_points_of_a_sequence(sequence: str, points: list[int]) -> None:
    assert play(sequence)[0] == points


@pytest.mark.parametrize(
    ("sequence", "record"),
    [
        ("", ArenaPlayerRecord()),
        ("WWW", ArenaPlayerRecord(points=7, wins=3, streak=3)),
        ("WWWD", ArenaPlayerRecord(points=8, wins=3, draws=1, streak=0)),
        ("WWWL", ArenaPlayerRecord(points=7, wins=3, losses=1, streak=0)),
        ("LDW", ArenaPlayerRecord(points=3, wins=1, draws=1, losses=1, streak=1)),
        ("wwwl", ArenaPlayerRecord(points=14, wins=3, losses=1, streak=0)),
    ],
)
def test_record_after_a_sequence(sequence: str, record: ArenaPlayerRecord) -> None:
    assert play(sequence)[1] == record
    assert play(sequence)[1].games == len(sequence)


@pytest.mark.parametrize(
    ("outcome", "streak", "plain", "boosted"),
    [
        (Score.WIN, 0, 2, 4),
        (Score.WIN, 1, 2, 4),
        (Score.WIN, 2, 3, 6),
        (Score.WIN, 50, 3, 6),
        (Score.DRAW, 0, 1, 1),
        (Score.DRAW, 5, 1, 1),
        (Score.LOSS, 0, 0, 0),
        (Score.LOSS, 5, 0, 0),
    ],
)
def test_game_points_table(outcome: Score, streak: int, plain: int, boosted: int) -> None:
    assert game_points(outcome, streak) == plain
    assert game_points(outcome, streak, boosted=True) == boosted


def test_negative_streak_is_refused() -> None:
    with pytest.raises(ArenaError, match="negative"):
        game_points(Score.WIN, -1)


def test_on_streak_from_two_wins() -> None:
    assert [play(s)[1].is_on_streak() for s in ("", "W", "WW", "WWW", "WWWD")] == [
        False,
        False,
        True,
        True,
        False,
    ]


def _reference_points(sequence: str) -> list[int]:
    """AR-4/AR-5 restated independently: count the wins that immediately precede each game."""
    points = []
    for index, symbol in enumerate(sequence):
        before = sequence[:index].upper()
        run = len(before) - len(before.rstrip("W"))
        if symbol.upper() == "W":
            base = 3 if run >= 2 else 2
            points.append(base * 2 if symbol.islower() else base)
        else:
            points.append(1 if symbol.upper() == "D" else 0)
    return points


def test_every_sequence_up_to_six_games_matches_the_rule_restated() -> None:
    for length in range(7):
        for symbols in itertools.product("WDLwdl", repeat=length):
            sequence = "".join(symbols)
            points, record = play(sequence)
            assert points == _reference_points(sequence), sequence
            assert record.points == sum(points)
            plain = sequence.upper()
            assert record.streak == len(plain) - len(plain.rstrip("W"))
            assert (record.wins, record.draws, record.losses) == tuple(plain.count(c) for c in "WDL")


# --- AR-6: the leaderboard key ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("points", "wins", "score"),
    [(0, 0, 0), (0, 1, 1), (1, 0, 1_000_000), (2, 1, 2_000_001), (17, 6, 17_000_006)],
)
def test_leaderboard_score_table(points: int, wins: int, score: int) -> None:
    assert leaderboard_score(points, wins) == score
    assert leaderboard_points_and_wins(score) == (points, wins)
    # Redis hands scores back as floats.
    assert leaderboard_points_and_wins(float(score)) == (points, wins)


def test_more_points_beat_any_number_of_wins() -> None:
    assert leaderboard_score(3, 0) > leaderboard_score(2, MAX_LEADERBOARD_WINS)


def test_largest_score_is_exact_as_a_double() -> None:
    top = leaderboard_score(MAX_LEADERBOARD_POINTS, MAX_LEADERBOARD_WINS)
    assert top < 2**53
    assert int(float(top)) == top
    assert leaderboard_points_and_wins(float(top)) == (MAX_LEADERBOARD_POINTS, MAX_LEADERBOARD_WINS)


@pytest.mark.parametrize(
    ("points", "wins"),
    [(-1, 0), (0, -1), (0, MAX_LEADERBOARD_WINS + 1), (MAX_LEADERBOARD_POINTS + 1, 0)],
)
def test_leaderboard_score_out_of_bounds(points: int, wins: int) -> None:
    with pytest.raises(ArenaError, match="within"):
        leaderboard_score(points, wins)


@pytest.mark.parametrize("score", [-1, 0.5, 1e17, float("nan"), float("inf")])
def test_not_a_leaderboard_score(score: float) -> None:
    with pytest.raises(ArenaError, match="not an arena leaderboard score"):
        leaderboard_points_and_wins(score)


_points = st.integers(0, MAX_LEADERBOARD_POINTS)
_wins = st.integers(0, MAX_LEADERBOARD_WINS)


@given(_points, _wins, _points, _wins)
def test_leaderboard_score_orders_by_points_then_wins(p1: int, w1: int, p2: int, w2: int) -> None:
    s1, s2 = leaderboard_score(p1, w1), leaderboard_score(p2, w2)
    assert (s1 < s2) == ((p1, w1) < (p2, w2))
    assert (s1 == s2) == ((p1, w1) == (p2, w2))
    # The float Redis stores keeps that order and inverts exactly.
    assert (float(s1) < float(s2)) == ((p1, w1) < (p2, w2))
    assert leaderboard_points_and_wins(float(s1)) == (p1, w1)


# --- The recomputed leaderboard -----------------------------------------------------------------


def test_score_of_each_side() -> None:
    table = {
        GameResult.WHITE_WINS: (Score.WIN, Score.LOSS),
        GameResult.BLACK_WINS: (Score.LOSS, Score.WIN),
        GameResult.DRAW: (Score.DRAW, Score.DRAW),
        GameResult.BOTH_LOSE: (Score.LOSS, Score.LOSS),
    }
    for result, (white, black) in table.items():
        assert (result.score_of(Side.WHITE), result.score_of(Side.BLACK)) == (white, black)


def test_recompute_leaderboard_example() -> None:
    games = [
        game("a", "b", "1/2-1/2"),  # a 1, b 1
        game("c", "d", "1-0"),  # c 2
        game("a", "d", "1/2-1/2"),  # a 2, d 1
        game("b", "c", "0-1"),  # c 4 (second win)
        game("e", "d", "0-1", boosted="b"),  # d +4 -> 5
    ]
    rows = recompute_leaderboard(games, players=["f"])
    assert [(r.rank, r.player_id, r.points, r.wins, r.games, r.streak) for r in rows] == [
        (1, "d", 5, 1, 3, 1),
        (2, "c", 4, 2, 2, 2),
        (3, "a", 2, 0, 2, 0),
        (4, "b", 1, 0, 2, 0),
        (5, "e", 0, 0, 1, 0),
        (5, "f", 0, 0, 0, 0),
    ]


def test_ties_on_points_go_to_more_wins_and_full_ties_share_a_rank() -> None:
    # AR-6: x has 2 points from one win, y 2 points from two draws.
    games = [
        game("x", "p", "1-0"),
        game("y", "q", "1/2-1/2"),
        game("y", "r", "1/2-1/2"),
        game("z", "s", "0-1"),
    ]
    rows = recompute_leaderboard(games)
    ranks = {row.player_id: row.rank for row in rows}
    assert ranks["x"] < ranks["y"]
    assert ranks["s"] == ranks["x"]  # both 2 points, 1 win: shared rank
    assert [row.player_id for row in rows][:2] == ["s", "x"]  # ties listed by id
    assert [row.rank for row in rows] == [1, 1, 3, 4, 4, 6, 6]


def test_streak_carries_across_games_in_finish_order() -> None:
    games = [game("a", f"o{i}", "1-0", boosted="w" if i == 2 else "") for i in range(4)]
    (row,) = (r for r in recompute_leaderboard(games) if r.player_id == "a")
    # 2 + 2 + 6 (boosted third win) + 3
    assert (row.points, row.wins, row.streak) == (13, 4, 4)


def test_never_sat_is_a_plain_loss_and_a_plain_win() -> None:
    # The player who never sat lost on time: the opponent's boosted streak win counts in full.
    games = [game("a", "o1", "1-0"), game("a", "o2", "1-0"), game("a", "ghost", "1-0", boosted="w")]
    records = recompute_records(games)
    assert records["a"] == ArenaPlayerRecord(points=10, wins=3, streak=3)
    assert records["ghost"] == ArenaPlayerRecord(losses=1)


def test_both_lost_gives_nothing_and_ends_both_streaks() -> None:
    games = [game("a", "x", "1-0"), game("b", "y", "1-0"), game("a", "b", "0-0", boosted="wb")]
    records = recompute_records(games)
    assert records["a"] == records["b"] == ArenaPlayerRecord(points=2, wins=1, losses=1, streak=0)


def test_a_player_cannot_meet_themselves() -> None:
    with pytest.raises(ArenaError, match="themselves"):
        game("a", "a", "1-0")


_result = st.sampled_from(list(GameResult))


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 5), _result, st.booleans(), st.booleans()).filter(
            lambda t: t[0] != t[1]
        ),
        max_size=40,
    )
)
def test_recomputed_leaderboard_agrees_with_live_scoring(
    raw: list[tuple[int, int, GameResult, bool, bool]],
) -> None:
    games = [ArenaGame(f"p{w}", f"p{b}", result, wb, bb) for w, b, result, wb, bb in raw]
    # The live path: score_game per side as each game finishes.
    live: dict[str, ArenaPlayerRecord] = {}
    for g in games:
        for side, player, boosted in (
            (Side.WHITE, g.white, g.white_boosted),
            (Side.BLACK, g.black, g.black_boosted),
        ):
            outcome = g.result.score_of(side)
            _, live[player] = score_game(live.get(player, ArenaPlayerRecord()), outcome, boosted)
    rows = recompute_leaderboard(games)
    assert {r.player_id: (r.points, r.wins, r.games, r.streak) for r in rows} == {
        p: (r.points, r.wins, r.games, r.streak) for p, r in live.items()
    }
    # Ordered by the AR-6 key, with a rank equal to 1 + the number strictly better.
    keys = [leaderboard_score(r.points, r.wins) for r in rows]
    assert keys == sorted(keys, reverse=True)
    for row, key in zip(rows, keys, strict=True):
        assert row.rank == 1 + sum(other > key for other in keys)
