"""The ledger alone (pure, no infrastructure): any arrival order and batching gives the canonical sequential result.

Lives beside the service's integration tests because it tests services/rating/ledger.py, the
rating service's ordering policy; it needs no broker or database.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import event, given
from hypothesis import strategies as st

from arbiter.rating.ledger import (
    AppliedGame,
    GameToRate,
    Meeting,
    PlayerState,
    may_change_stored,
    merge,
    reach,
    replay_in_order,
)

START = datetime(2026, 3, 1, tzinfo=UTC)


class MemoryPool:
    """What the service stores for one pool, kept in memory: rated games and current states.

    `reads` is how much of the later games a batch reads: "all" of them, those of the players
    `reach` finds ("reach"), or, as the service, none when `may_change_stored` says no stored
    game can change and else those `reach` finds ("service").
    """

    def __init__(self, reads: str) -> None:
        self.reads = reads
        self.games: dict[str, AppliedGame] = {}
        self.states: dict[str, PlayerState] = {}

    def deliver(self, batch: list[GameToRate]) -> None:
        new = {g.game_id: g for g in batch if g.game_id not in self.games}
        if not new:
            return
        earliest = min(g.key for g in new.values())
        later = [a for a in self.games.values() if a.game.key > earliest]
        players = {p for g in new.values() for p in (g.white_id, g.black_id)}
        current = {p: s for p, s in self.states.items() if p in players}
        if self.reads == "service" and later and not may_change_stored(
                new.values(), current, max(a.game.key for a in self.games.values())):
            later = []
        if self.reads != "all":
            # What the service does: only the later games of the players the new ones reach.
            reached = reach(new.values(), [(a.game.key, a.game.white_id, a.game.black_id) for a in later])
            later = [a for a in later if a.game.white_id in reached or a.game.black_id in reached]
        after = sorted(later, key=lambda a: a.game.key)
        result = merge(new.values(), after, current)
        for applied in result.applied:
            self.games[applied.game.game_id] = applied
        self.states.update(result.final_states)


def game(i: int, minutes: int, white: int, black: int, score: float) -> GameToRate:
    return GameToRate(f"g{i:04d}", START + timedelta(minutes=minutes), f"p{white}", f"p{black}", score)


games_strategy = st.lists(
    st.tuples(
        st.integers(0, 3000),  # finish minute: collisions exercise the game-id tie-break
        st.integers(0, 7), st.integers(0, 7), st.sampled_from([0.0, 0.5, 1.0]),
    ).filter(lambda t: t[1] != t[2]),
    min_size=1, max_size=60,
).map(lambda rows: [game(i, *row) for i, row in enumerate(rows)])


@given(games=games_strategy, data=st.data(), reads=st.sampled_from(["all", "reach", "service"]))
def test_any_arrival_order_and_batching_gives_the_sequential_result(
    games: list[GameToRate], data: st.DataObject, reads: str
) -> None:
    arrivals = data.draw(st.permutations(games + data.draw(st.lists(st.sampled_from(games), max_size=10))))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(arrivals)), max_size=8)))
    pool = MemoryPool(reads)
    for start, end in zip([0, *cuts], [*cuts, len(arrivals)], strict=True):
        pool.deliver(arrivals[start:end])
    # Exact equality: the replay runs the same float operations in the same order.
    assert pool.states == replay_in_order(games)
    reference: dict[str, AppliedGame] = {}
    state: dict[str, PlayerState] = {}
    for g in sorted(games, key=lambda g: g.key):
        applied = merge([g], [], state).applied[0]
        state.update({g.white_id: applied.white_after, g.black_id: applied.black_after})
        reference[g.game_id] = applied
    assert pool.games == reference


def test_a_late_game_replays_only_the_games_it_reaches() -> None:
    early = [game(1, 10, 1, 2, 1.0), game(2, 20, 3, 4, 0.5), game(3, 30, 1, 3, 0.0), game(4, 40, 5, 6, 1.0)]
    pool = MemoryPool("reach")
    pool.deliver(early)
    late = game(5, 15, 1, 7, 0.5)
    later = [a for a in pool.games.values() if a.game.key > late.key]
    # p1 reaches p3 at minute 30; p3-p4 at 20 came before p3 was touched, p5-p6 never meet them.
    meetings = [Meeting(a.game.key, a.game.white_id, a.game.black_id) for a in later]
    assert reach([late], meetings) == {"p1", "p3", "p7"}
    # Plain (key, white, black) tuples in any order, as the service may pass them: same answer.
    assert reach([late], [tuple(m) for m in reversed(meetings)]) == {"p1", "p3", "p7"}
    stored_after = sorted(later, key=lambda a: a.game.key)
    result = merge([late], stored_after, {p: pool.states[p] for p in ("p1",)})
    # p1's game at minute 30 moves, and with it p3's rating; the others keep their stored results.
    assert [a.game.game_id for a in result.applied] == ["g0005", "g0003"]
    assert [a.game.game_id for a in result.revised] == ["g0003"]
    assert set(result.final_states) == {"p1", "p3", "p7"}


def test_inactivity_grows_the_deviation_in_game_time() -> None:
    first = game(1, 0, 1, 2, 1.0)
    soon = GameToRate("g2", first.finished_at + timedelta(minutes=5), "p1", "p2", 1.0)
    later = GameToRate("g2", first.finished_at + timedelta(days=200), "p1", "p2", 1.0)
    after_soon = replay_in_order([first, soon])["p1"]
    after_later = replay_in_order([first, later])["p1"]
    assert after_later.rating.rd > after_soon.rating.rd
    assert after_later.games == after_soon.games == 2
    assert after_later.last_rated_at == later.finished_at


@given(stored=games_strategy, data=st.data())
def test_when_no_late_player_has_a_later_game_no_stored_game_changes(
    stored: list[GameToRate], data: st.DataObject
) -> None:
    pool = MemoryPool("all")
    pool.deliver(stored)
    latest = max(g.key for g in stored)
    rows = data.draw(st.lists(st.tuples(
        # Players 8 to 15 never played: late games of theirs change no stored game.
        st.integers(0, 3000), st.integers(0, 15), st.integers(0, 15), st.sampled_from([0.0, 0.5, 1.0]),
    ).filter(lambda t: t[1] != t[2]), min_size=1, max_size=4))
    new = [game(1000 + i, *row) for i, row in enumerate(rows)]
    late = any(g.key < latest for g in new)
    changes = may_change_stored(new, pool.states, latest)
    event("late, no stored game changes" if late and not changes else "late, may change" if late else "not late")
    if changes:
        return
    later = sorted((a for a in pool.games.values() if a.game.key > min(g.key for g in new)), key=lambda a: a.game.key)
    players = {p for g in new for p in (g.white_id, g.black_id)}
    # reach marks no stored player beyond the new games' own, so no stored game is read for it.
    assert reach(new, [(a.game.key, a.game.white_id, a.game.black_id) for a in later]) == players
    full = merge(new, later, pool.states)
    without = merge(new, [], pool.states)
    assert full.revised == ()
    assert without.applied == full.applied
    assert without.final_states == full.final_states


def test_a_late_game_whose_player_played_since_may_change_stored_games() -> None:
    pool = MemoryPool("all")
    pool.deliver([game(1, 10, 1, 2, 1.0), game(2, 30, 3, 4, 0.5)])
    latest = max(a.game.key for a in pool.games.values())
    # p1 last played at minute 10, p3 at 30: a game at 20 with p3 comes before one of p3's games.
    assert may_change_stored([game(3, 20, 1, 5, 1.0)], pool.states, latest) is False
    assert may_change_stored([game(3, 20, 3, 5, 1.0)], pool.states, latest) is True
    # At the very minute of a player's last game the game ids decide: counted as possibly before.
    assert may_change_stored([game(3, 10, 1, 5, 1.0)], pool.states, latest) is True
    # After the pool's latest game nothing stored comes after it.
    assert may_change_stored([game(3, 40, 3, 4, 1.0)], pool.states, latest) is False
