"""A batch of arena results scored: records, cooldowns, who plays again, and the boost a player takes (AR-1..AR-5)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.competition.arena import (
    ArenaPlayerRecord,
    ArenaSeat,
    BoostableGame,
    BoostRefusal,
    BoostRefused,
    FinishedGame,
    boost_counts,
    pairs_players,
    recompute_records,
    score_results,
    take_boost,
)
from arbiter.vocabulary import GameResult, Side

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
W, B, D = GameResult.WHITE_WINS, GameResult.BLACK_WINS, GameResult.DRAW


def finished(white: str, black: str, result: GameResult, minutes_ago: int = 0, boosts: str = "",
             played: str | None = None) -> FinishedGame:
    """A finished game; `boosts` names the sides that took a boost ("w", "b"), `played` those played with it."""
    played = boosts if played is None else played
    return FinishedGame(f"{white}-{black}-{minutes_ago}", white, black, result, NOW - timedelta(minutes=minutes_ago),
                        "w" in boosts, "b" in boosts, "w" in played, "b" in played)


def pair(a: str, b: str) -> frozenset[str]:
    return frozenset((a, b))


# --- AR-5: the boost ------------------------------------------------------------------------------


@pytest.mark.parametrize(("taken", "played", "counts"),
                         [(True, True, True), (True, False, False), (False, True, False), (False, False, False)])
def test_a_boost_counts_only_when_taken_and_played_with(taken: bool, played: bool, counts: bool) -> None:
    assert boost_counts(taken, played) is counts


def test_a_win_with_a_boost_taken_but_not_played_is_a_plain_win() -> None:
    scored = score_results([finished("a", "b", W, boosts="w", played="")], {}, pairing=True)
    assert scored.records["a"].points == 2 and not scored.scored[0].white_boosted
    doubled = score_results([finished("a", "b", W, boosts="w")], {}, pairing=True)
    assert doubled.records["a"].points == 4 and doubled.scored[0].white_boosted


def test_a_player_takes_the_boost_of_their_side_before_their_first_move() -> None:
    game = BoostableGame("g", "alice", "bob")
    assert take_boost(game, "alice") is Side.WHITE
    assert take_boost(game, "bob") is Side.BLACK
    # The opponent having moved or boosted changes nothing for the other side.
    assert take_boost(BoostableGame("g", "alice", "bob", white_moved=True, white_boosted=True), "bob") is Side.BLACK


@pytest.mark.parametrize(("game", "player", "refusal", "message"), [
    (BoostableGame("g", "a", "b"), "c", BoostRefusal.NOT_A_PLAYER,
     "c does not play game g; only its players may boost"),
    (BoostableGame("g", "a", "b", result=GameResult.DRAW), "a", BoostRefusal.GAME_OVER,
     "game g is over (1/2-1/2); boosting is too late"),
    (BoostableGame("g", "a", "b", black_boosted=True), "b", BoostRefusal.ALREADY_BOOSTED,
     "b already boosted game g (AR-5)"),
    (BoostableGame("g", "a", "b", white_moved=True), "a", BoostRefusal.ALREADY_MOVED,
     "a already moved in game g; a boost is taken before one's own first move (AR-5)"),
])
def test_a_boost_the_rules_refuse_says_which_rule(game: BoostableGame, player: str, refusal: BoostRefusal,
                                                   message: str) -> None:
    with pytest.raises(BoostRefused) as refused:
        take_boost(game, player)
    assert refused.value.refusal is refusal and str(refused.value) == message


# --- AR-1, AR-2: who plays again ------------------------------------------------------------------


def test_an_arena_pairs_while_it_runs_and_its_end_has_not_come() -> None:
    assert pairs_players(True, NOW + timedelta(seconds=1), NOW)
    assert not pairs_players(True, NOW, NOW)
    assert not pairs_players(False, NOW + timedelta(hours=1), NOW)


def test_players_go_back_in_the_queue_unless_they_left_or_still_play() -> None:
    seats = {"a": ArenaSeat(), "b": ArenaSeat(active=False), "c": ArenaSeat(), "d": ArenaSeat()}
    games = [finished("a", "b", W), finished("c", "d", D)]
    assert score_results(games, seats, playing={"d"}, pairing=True).requeue == {"a", "c"}
    assert score_results(games, seats, pairing=False).requeue == frozenset()


# --- AR-3, AR-4: records and cooldowns ------------------------------------------------------------


def test_streaks_run_through_the_batch_in_its_order_from_the_stored_records() -> None:
    stored = ArenaPlayerRecord(points=4, wins=2, streak=2)
    scored = score_results([finished("a", "b", W, 3), finished("a", "c", W, 1)], {"a": ArenaSeat(stored)},
                           pairing=True)
    # AR-4: the third and fourth wins in a row are worth 3 each.
    assert scored.records["a"] == ArenaPlayerRecord(points=10, wins=4, streak=4)
    assert scored.records["b"] == scored.records["c"] == ArenaPlayerRecord(losses=1)


def test_a_seat_without_a_game_keeps_its_record() -> None:
    record = ArenaPlayerRecord(points=7, wins=3, draws=1, losses=2)
    assert score_results([], {"z": ArenaSeat(record)}, pairing=True).records == {"z": record}


def test_the_next_meeting_counts_the_earlier_games_and_these() -> None:
    earlier = [finished("b", "a", D, 30).counted(), finished("a", "c", W, 25).counted()]
    scored = score_results([finished("a", "b", W, 2)], {}, earlier, pairing=True)
    # AR-3: a-b met twice, the last 2 minutes ago: 10 minutes after it; a-c once, 25 minutes ago.
    assert scored.next_meetings == {
        pair("a", "b"): NOW - timedelta(minutes=2) + timedelta(minutes=10),
        pair("a", "c"): NOW - timedelta(minutes=25) + timedelta(minutes=5),
    }


# --- one computation for the results and the rebuild ------------------------------------------------

_players = st.sampled_from("abcdef")
_games = st.lists(
    st.tuples(_players, _players, st.sampled_from(list(GameResult)), st.sampled_from(["", "w", "b", "wb"]),
              st.sampled_from(["", "w", "b", "wb"])).filter(lambda g: g[0] != g[1]),
    max_size=30,
)


@given(_games, st.lists(st.integers(1, 5), max_size=10), st.sets(_players), st.sets(_players))
def test_scoring_batch_by_batch_equals_scoring_everything_at_once(
    raw: list[tuple[str, str, GameResult, str, str]], cuts: list[int], left: set[str], playing: set[str]
) -> None:
    games = [finished(w, b, result, len(raw) - i, boosts, played) for i, (w, b, result, boosts, played) in
             enumerate(raw)]
    seats = {p: ArenaSeat(active=p not in left) for p in "abcdef"}
    # The results path: batches in order, each from the records and meetings the earlier ones left.
    records = {p: seat.record for p, seat in seats.items()}
    earlier: list = []
    start = 0
    last = None
    for size in [*cuts, len(games)]:
        batch = games[start:start + size]
        start += len(batch)
        last = score_results(batch, {p: ArenaSeat(records[p], seats[p].active) for p in seats}, earlier,
                             playing=playing, pairing=True)
        records = last.records
        earlier.extend(last.scored)
        if start >= len(games):
            break
    # The rebuild path: every game at once, from blank records.
    whole = score_results(games, seats, playing=playing, pairing=True)
    assert records == whole.records == recompute_records([g.counted() for g in games], seats)
    assert last is not None and last.next_meetings == whole.next_meetings
    assert whole.requeue == {p for p in seats if p not in left and p not in playing}
