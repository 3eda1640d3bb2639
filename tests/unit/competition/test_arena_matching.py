"""Rematch cooldowns (AR-3) and the matching of waiting arena players (AR-2)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Collection, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.competition.arena import (
    ArenaError,
    ArenaGame,
    ArenaPairing,
    Meetings,
    WaitingPlayer,
    assign_colours,
    cooldowns,
    match_waiting,
    may_meet_again,
    meetings,
    next_allowed_meeting,
    rematch_cooldown,
)
from arbiter.competition.arena_matching import (
    COLOUR_CLASH_WEIGHT,
    DEFAULT_REACH,
    EXACT_UP_TO,
    MAX_REACH,
    NEAR_REACH,
    RANK_WEIGHT_BOTTOM,
    RANK_WEIGHT_TOP,
    WAIT_CAP_SECONDS,
    WAIT_WEIGHT,
    _augment_all,
)
from arbiter.vocabulary import GameResult, Side

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
W, B = Side.WHITE, Side.BLACK
# A waiting list and the pairs in cooldown.
Field = tuple[list[WaitingPlayer], frozenset[frozenset[str]]]


def player(
    pid: str,
    rank: int = 1,
    rating: int = 1500,
    colours: str = "",
    waited: int = 0,
) -> WaitingPlayer:
    """A waiting player; `colours` is their colour history in this arena, e.g. "WBW"."""
    return WaitingPlayer(
        player_id=pid,
        rank=rank,
        rating=rating,
        colour_balance=colours.count("W") - colours.count("B"),
        last_colour={"W": W, "B": B}[colours[-1]] if colours else None,
        waiting_since=NOW - timedelta(seconds=waited),
    )


def pairs_of(pairings: list[ArenaPairing]) -> set[frozenset[str]]:
    """The pairings without their colours."""
    return {frozenset((p.white, p.black)) for p in pairings}


def pair(a: str, b: str) -> frozenset[str]:
    return frozenset((a, b))


# --- AR-3: cooldowns ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("games", "minutes"),
    [(0, 0), (1, 5), (2, 10), (3, 15), (4, 20), (10, 50), (12, 60), (1000, 5000)],
)
def test_rematch_cooldown_table(games: int, minutes: int) -> None:
    assert rematch_cooldown(games) == timedelta(minutes=minutes)


def test_rematch_cooldown_of_negative_games_is_refused() -> None:
    with pytest.raises(ArenaError, match="negative"):
        rematch_cooldown(-1)


@pytest.mark.parametrize(
    ("games", "ended", "allowed"),
    [
        (1, "12:00", "12:05"),
        (2, "12:00", "12:10"),
        (3, "11:58", "12:13"),
        (13, "23:00", "00:05"),
    ],
)
def test_next_allowed_meeting_table(games: int, ended: str, allowed: str) -> None:
    day = datetime(2026, 6, 1, tzinfo=UTC)

    def at(clock: str) -> datetime:
        hours, minutes = map(int, clock.split(":"))
        return day + timedelta(hours=hours, minutes=minutes)

    expected = at(allowed) + (timedelta(days=1) if allowed < ended else timedelta())
    assert next_allowed_meeting(games, at(ended)) == expected


def test_may_meet_again_from_the_exact_end_of_the_cooldown() -> None:
    ended = NOW - timedelta(minutes=10)
    assert may_meet_again(2, ended, NOW)
    assert not may_meet_again(2, ended, NOW - timedelta(microseconds=1))
    assert not may_meet_again(3, ended, NOW)
    assert may_meet_again(0, None, NOW)
    assert may_meet_again(0, NOW, NOW)


def test_cooldowns_rebuilt_from_recorded_games() -> None:
    def ended(minutes_ago: int) -> datetime:
        return NOW - timedelta(minutes=minutes_ago)

    games = [
        # a-b met twice, last 9 minutes ago: 10 minutes of cooldown, still on.
        ArenaGame("a", "b", GameResult.WHITE_WINS, ended_at=ended(30)),
        ArenaGame("b", "a", GameResult.DRAW, ended_at=ended(9)),
        # c-d met once 5 minutes ago: the cooldown just ended.
        ArenaGame("c", "d", GameResult.BLACK_WINS, ended_at=ended(5)),
        # e-f met once 4 minutes ago, one side never sat: still a meeting.
        ArenaGame("e", "f", GameResult.WHITE_WINS, ended_at=ended(4)),
        # a-c met three times, the last 12 minutes ago (listed out of order): 15 minutes.
        ArenaGame("a", "c", GameResult.DRAW, ended_at=ended(12)),
        ArenaGame("a", "c", GameResult.DRAW, ended_at=ended(40)),
        ArenaGame("c", "a", GameResult.DRAW, ended_at=ended(20)),
    ]
    assert cooldowns(games, NOW) == {
        pair("a", "b"): NOW + timedelta(minutes=1), pair("e", "f"): NOW + timedelta(minutes=1),
        pair("a", "c"): NOW + timedelta(minutes=3),
    }
    all_three = {pair("a", "b"), pair("e", "f"), pair("a", "c")}
    assert set(cooldowns(games, NOW + timedelta(seconds=59))) == all_three
    assert set(cooldowns(games, NOW + timedelta(minutes=1))) == {pair("a", "c")}
    assert cooldowns(games, NOW + timedelta(minutes=3)) == {}
    assert cooldowns([], NOW) == {}
    assert meetings(games)[pair("a", "c")] == Meetings(3, ended(12))


def test_meetings_need_end_times() -> None:
    with pytest.raises(ArenaError, match="no end time"):
        meetings([ArenaGame("a", "b", GameResult.DRAW)])


# --- Colours ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a_colours", "b_colours", "white"),
    [
        # More blacks so far gets white.
        ("B", "W", "a"),
        ("W", "B", "b"),
        ("WBB", "", "a"),
        ("", "WBB", "b"),
        ("WW", "W", "b"),
        ("BB", "B", "a"),
        # Equal balance: whoever last had black gets white.
        ("WB", "BW", "a"),
        ("BW", "WB", "b"),
        ("WB", "", "a"),
        ("", "BW", "a"),
    ],
)
def test_colour_table(a_colours: str, b_colours: str, white: str) -> None:
    a, b = player("a", colours=a_colours), player("b", colours=b_colours)
    expected = ArenaPairing("a", "b") if white == "a" else ArenaPairing("b", "a")
    assert assign_colours(a, b) == expected
    assert assign_colours(b, a) == expected


def test_colour_coin_is_seeded_symmetric_and_fair() -> None:
    whites_for_lower_id = 0
    for index in range(400):
        a, b = player(f"x{index}"), player(f"y{index}")
        assert assign_colours(a, b, seed=7) == assign_colours(b, a, seed=7)
        whites_for_lower_id += assign_colours(a, b, seed=7).white == a.player_id
    assert 140 < whites_for_lower_id < 260
    flips = sum(
        assign_colours(player(f"x{i}"), player(f"y{i}"), seed=1)
        != assign_colours(player(f"x{i}"), player(f"y{i}"), seed=2)
        for i in range(400)
    )
    assert 140 < flips < 260


# --- Matching: examples -------------------------------------------------------------------------


def test_nobody_or_one_player_waiting() -> None:
    assert match_waiting([], frozenset(), NOW) == []
    assert match_waiting([player("a")], frozenset(), NOW) == []


def test_two_players_get_one_game_with_colours_balanced() -> None:
    got = match_waiting([player("a", colours="W"), player("b", colours="B")], frozenset(), NOW)
    assert got == [ArenaPairing("b", "a")]


def test_two_players_in_cooldown_wait() -> None:
    assert match_waiting([player("a"), player("b")], {pair("a", "b")}, NOW) == []


def test_neighbours_in_rank_meet() -> None:
    players = [player(p, rank=r) for p, r in (("d", 4), ("a", 1), ("c", 3), ("b", 2))]
    assert pairs_of(match_waiting(players, frozenset(), NOW)) == {pair("a", "b"), pair("c", "d")}


def test_leaders_meet_leaders_and_the_best_pair_comes_first() -> None:
    players = [player(f"r{r:02d}", rank=r) for r in range(1, 21)]
    got = match_waiting(players, frozenset(), NOW)
    assert pairs_of(got[:1]) == {pair("r01", "r02")}
    assert pairs_of(got) == {pair(f"r{r:02d}", f"r{r + 1:02d}") for r in range(1, 21, 2)}


def test_same_rank_pairs_by_rating() -> None:
    players = [player(pid, rating=r) for pid, r in (("a", 1500), ("b", 2000), ("c", 1510), ("d", 1990))]
    assert pairs_of(match_waiting(players, frozenset(), NOW)) == {pair("a", "c"), pair("b", "d")}


def test_the_pair_who_just_played_is_split() -> None:
    # a and b finished their game together and came back at once (AR-3).
    players = [player(p, rank=r) for p, r in (("a", 1), ("b", 2), ("c", 3), ("d", 4))]
    got = match_waiting(players, {pair("a", "b")}, NOW)
    assert pairs_of(got) == {pair("a", "c"), pair("b", "d")}


def test_a_blocked_player_finds_a_far_partner() -> None:
    # x's whole neighbourhood is in cooldown with x; only z, far down, is free.
    players = [player("x", rank=1)] + [player(f"n{i}", rank=2 + i) for i in range(8)] + [player("z", rank=50)]
    blocked = {pair("x", f"n{i}") for i in range(8)}
    got = match_waiting(players, blocked, NOW)
    assert len(got) == 5
    assert pair("x", "z") in pairs_of(got)


def test_in_a_large_field_a_blocked_neighbour_widens_the_band() -> None:
    # Beyond EXACT_UP_TO players pass 1 offers the NEAR_REACH next players only, unless a
    # cooldown cuts one of them off: then the full reach (AR-3 never costs the game).
    players = [player(f"p{i:02d}", rank=1 + i) for i in range(EXACT_UP_TO + 4)]
    blocked = {pair("p00", "p01"), pair("p00", "p02")}
    got = match_waiting(players, blocked, NOW)
    assert len(got) == len(players) // 2
    assert pair("p00", "p03") in pairs_of(got)
    assert not pairs_of(got) & blocked


def test_the_most_recent_arrival_is_left_over() -> None:
    players = [player("a", waited=30), player("b", waited=2), player("c", waited=45)]
    got = match_waiting(players, frozenset(), NOW)
    assert pairs_of(got) == {pair("a", "c")}


def test_a_colour_clash_is_avoided_when_it_costs_little() -> None:
    # a and b both had two blacks; c and d both had two whites.
    players = [
        player("a", rating=1500, colours="BB"),
        player("b", rating=1501, colours="BB"),
        player("c", rating=1502, colours="WW"),
        player("d", rating=1503, colours="WW"),
    ]
    got = match_waiting(players, frozenset(), NOW)
    assert not pairs_of(got) & {pair("a", "b"), pair("c", "d")}
    assert {p.white for p in got} == {"a", "b"}


def test_cooldown_forms_agree() -> None:
    players = [player(p, rank=r) for r, p in enumerate("abcdef", start=1)]
    blocked = {pair("a", "b"), pair("c", "d"), pair("a", "c")}
    as_set = match_waiting(players, blocked, NOW)
    as_map = match_waiting(players, {"a": {"b", "c"}, "d": ["c"]}, NOW)
    as_predicate = match_waiting(players, lambda x, y: pair(x, y) in blocked, NOW)
    assert as_set == as_map == as_predicate
    assert not pairs_of(as_set) & blocked


@pytest.mark.parametrize(
    ("players", "message"),
    [
        ([player("a"), player("b"), player("a")], "waiting twice"),
        ([player("a", rank=0), player("b")], "ranks start at 1"),
    ],
)
def test_bad_waiting_lists_are_refused(players: list[WaitingPlayer], message: str) -> None:
    with pytest.raises(ArenaError, match=message):
        match_waiting(players, frozenset(), NOW)


@pytest.mark.parametrize("reach", [0, MAX_REACH + 1])
def test_reach_out_of_bounds_is_refused(reach: int) -> None:
    with pytest.raises(ArenaError, match="reach"):
        match_waiting([player("a"), player("b")], frozenset(), NOW, reach=reach)


# --- Matching: properties -----------------------------------------------------------------------


@st.composite
def waiting_fields(draw: st.DrawFn, max_players: int = 24, cooldowns: bool = True) -> Field:
    """A random waiting list and a random set of pairs in cooldown."""
    n = draw(st.integers(0, max_players))
    players = [
        WaitingPlayer(
            player_id=f"p{i:02d}",
            rank=draw(st.integers(1, 12)),
            rating=draw(st.integers(1000, 2200)),
            colour_balance=draw(st.integers(-3, 3)),
            last_colour=draw(st.sampled_from([None, W, B])),
            waiting_since=NOW - timedelta(seconds=draw(st.integers(0, 2 * WAIT_CAP_SECONDS))),
        )
        for i in range(n)
    ]
    players = draw(st.permutations(players))
    all_pairs = [pair(a.player_id, b.player_id) for a, b in itertools.combinations(players, 2)]
    if not cooldowns or not all_pairs:
        return players, frozenset()
    # From a few pairs in cooldown (a big arena) to nearly all (a small, long one).
    density = draw(st.sampled_from([0.02, 0.1, 0.3, 0.6, 0.9, 1.0]))
    rng = draw(st.randoms(use_true_random=False))
    return players, frozenset(p for p in all_pairs if rng.random() < density)


def _check_valid(
    players: list[WaitingPlayer], blocked: Collection[frozenset[str]], got: list[ArenaPairing]
) -> None:
    ids = [p.player_id for p in players]
    seated = [pid for pairing in got for pid in (pairing.white, pairing.black)]
    # Nobody twice, nobody who is not waiting.
    assert len(seated) == len(set(seated))
    assert set(seated) <= set(ids)
    # Never inside a cooldown (AR-3).
    assert not pairs_of(got) & set(blocked)
    # Colours: more blacks gets white; on equal balance, last black gets white.
    by_id = {p.player_id: p for p in players}
    order = {B: 0, None: 1, W: 2}
    for pairing in got:
        white, black = by_id[pairing.white], by_id[pairing.black]
        assert white.colour_balance <= black.colour_balance
        if white.colour_balance == black.colour_balance:
            assert order[white.last_colour] <= order[black.last_colour]


def _unpaired_could_meet(
    players: list[WaitingPlayer], blocked: Collection[frozenset[str]], got: list[ArenaPairing]
) -> bool:
    seated = {pid for pairing in got for pid in (pairing.white, pairing.black)}
    free = [p.player_id for p in players if p.player_id not in seated]
    return any(pair(a, b) not in blocked for a, b in itertools.combinations(free, 2))


@given(waiting_fields(max_players=40))
def test_matching_is_valid_and_maximal(field: Field) -> None:
    players, blocked = field
    got = match_waiting(players, blocked, NOW)
    _check_valid(players, blocked, got)
    # Maximal: no two players left waiting could have been paired.
    assert not _unpaired_could_meet(players, blocked, got)


@given(waiting_fields(max_players=40))
def test_no_three_edge_augmentation_is_left(
    field: Field,
) -> None:
    # No left-over u, pair v-w, left-over t with u-v and w-t both allowed:
    # otherwise one more game could have been opened.
    players, blocked = field
    got = match_waiting(players, blocked, NOW)
    seated = {pid for pairing in got for pid in (pairing.white, pairing.black)}
    free = [p.player_id for p in players if p.player_id not in seated]
    for u, t in itertools.permutations(free, 2):
        for pairing in got:
            for v, w in ((pairing.white, pairing.black), (pairing.black, pairing.white)):
                assert pair(u, v) in blocked or pair(w, t) in blocked, (u, v, w, t)


@given(waiting_fields(max_players=60))
def test_every_cooldown_form_gives_the_same_pairings(field: Field) -> None:
    # The predicate is asked about every pair; the set and the mapping only about players they
    # name (the rest cannot be blocked). A mapping may list players with nobody (as the service does).
    players, blocked = field
    as_map: dict[str, set[str]] = {p.player_id: set() for p in players}
    for a, b in (tuple(sorted(pair_)) for pair_ in blocked):
        as_map[a].add(b)
    expected = match_waiting(players, lambda x, y: pair(x, y) in blocked, NOW, seed=3)
    assert match_waiting(players, blocked, NOW, seed=3) == expected
    assert match_waiting(players, as_map, NOW, seed=3) == expected


@given(waiting_fields(max_players=80, cooldowns=False))
def test_without_cooldowns_all_but_at_most_one_play(
    field: Field,
) -> None:
    players, _ = field
    got = match_waiting(players, frozenset(), NOW)
    _check_valid(players, frozenset(), got)
    assert len(got) == len(players) // 2


@given(waiting_fields(max_players=80, cooldowns=False))
def test_without_cooldowns_the_near_band_is_the_whole_programme(field: Field) -> None:
    # Nobody in cooldown: pass 1 at the default reach is pass 1 at NEAR_REACH (AR-2).
    players, _ = field
    assert match_waiting(players, frozenset(), NOW) == match_waiting(players, frozenset(), NOW, reach=NEAR_REACH)


@given(waiting_fields(max_players=30), st.randoms(use_true_random=False), st.integers(0, 3))
def test_matching_is_deterministic_whatever_the_input_order(
    field: Field, rng: random.Random, seed: int
) -> None:
    players, blocked = field
    first = match_waiting(players, blocked, NOW, seed=seed)
    assert match_waiting(players, blocked, NOW, seed=seed) == first
    shuffled = list(players)
    rng.shuffle(shuffled)
    assert match_waiting(tuple(shuffled), set(blocked), NOW, seed=seed) == first
    # The three cooldown forms give the same pairing.
    table: dict[str, set[str]] = {}
    for a, b in map(sorted, blocked):
        table.setdefault(a, set()).add(b)
    assert match_waiting(players, table, NOW, seed=seed) == first
    assert match_waiting(players, lambda a, b: pair(a, b) in blocked, NOW, seed=seed) == first


def _cost(a: WaitingPlayer, b: WaitingPlayer, max_rank: int) -> int:
    """The documented pair cost, restated: rank distance (lichess weight), rating, colour clash."""
    better = min(a.rank, b.rank)
    weight = RANK_WEIGHT_BOTTOM + (RANK_WEIGHT_TOP - RANK_WEIGHT_BOTTOM) * (max_rank - better) // max_rank
    value = abs(a.rank - b.rank) * weight + abs(a.rating - b.rating)
    if a.colour_balance * b.colour_balance > 0:
        value += COLOUR_CLASH_WEIGHT * min(abs(a.colour_balance), abs(b.colour_balance))
    return value


def _leave(p: WaitingPlayer) -> int:
    return WAIT_WEIGHT * min(WAIT_CAP_SECONDS, int((NOW - p.waiting_since).total_seconds()))


def _matchings(
    players: list[WaitingPlayer], blocked: Collection[frozenset[str]]
) -> Iterator[tuple[list[tuple[WaitingPlayer, WaitingPlayer]], list[WaitingPlayer]]]:
    """Every matching (pairs, players left over) that respects the cooldowns."""
    if not players:
        yield [], []
        return
    first, rest = players[0], players[1:]
    for pairs, left in _matchings(rest, blocked):
        yield pairs, [first, *left]
    for index, other in enumerate(rest):
        if pair(first.player_id, other.player_id) in blocked:
            continue
        for pairs, left in _matchings(rest[:index] + rest[index + 1 :], blocked):
            yield [(first, other), *pairs], left


def _objective(
    pairs: list[tuple[WaitingPlayer, WaitingPlayer]], left: list[WaitingPlayer], max_rank: int
) -> tuple[int, int]:
    return len(left), sum(_cost(a, b, max_rank) for a, b in pairs) + sum(_leave(p) for p in left)


@pytest.mark.parametrize("reach", [None, 1])
@given(field=waiting_fields(max_players=9))
def test_small_lists_get_the_exact_optimum(
    field: Field, reach: int | None
) -> None:
    # Up to EXACT_UP_TO players the banded programme covers everyone and is
    # exact: fewest left over, then the lowest cost, as brute force finds.
    players, blocked = field
    if not players:
        return
    max_rank = max(p.rank for p in players)
    got = match_waiting(players, blocked, NOW, reach=reach or DEFAULT_REACH)
    by_id = {p.player_id: p for p in players}
    seated = {pid for pairing in got for pid in (pairing.white, pairing.black)}
    ours = _objective(
        [(by_id[x.white], by_id[x.black]) for x in got],
        [p for p in players if p.player_id not in seated],
        max_rank,
    )
    best = min(_objective(pairs, left, max_rank) for pairs, left in _matchings(players, blocked))
    assert ours == best


@given(
    st.integers(EXACT_UP_TO + 1, 20),
    st.sampled_from([0.5, 0.7, 0.8, 0.9, 0.95]),
    st.randoms(use_true_random=False),
)
def test_dense_cooldowns_still_give_as_many_games_as_possible(n: int, density: float, rng: random.Random) -> None:
    # Past EXACT_UP_TO the band alone misses pairs when most pairs are in
    # cooldown; the repairs must still reach the maximum (checked against the
    # exact programme with a reach covering everyone).
    players = [player(f"p{i:02d}", rank=1 + i // 2, rating=1500 + 10 * i) for i in range(n)]
    blocked = frozenset(
        pair(a.player_id, b.player_id)
        for a, b in itertools.combinations(players, 2)
        if rng.random() < density
    )
    got = match_waiting(players, blocked, NOW)
    _check_valid(players, blocked, got)
    assert len(got) == len(match_waiting(players, blocked, NOW, reach=n))


def _maximum_size(n: int, edges: set[tuple[int, int]]) -> int:
    """Brute force: the most disjoint edges."""
    best = 0
    ordered = sorted(edges)

    def grow(start: int, used: frozenset[int], size: int) -> None:
        nonlocal best
        best = max(best, size)
        for index, (a, b) in enumerate(ordered[start:], start=start):
            if a not in used and b not in used:
                grow(index + 1, used | {a, b}, size + 1)

    grow(0, frozenset(), 0)
    return best


@given(st.integers(2, 10), st.data())
def test_augmenting_paths_reach_the_maximum_from_any_start(n: int, data: st.DataObject) -> None:
    # Edmonds' search on its own: random graphs (odd cycles included) and a
    # random valid starting matching.
    all_edges = list(itertools.combinations(range(n), 2))
    edges = set(data.draw(st.lists(st.sampled_from(all_edges), unique=True)))
    start: list[tuple[int, int]] = []
    used: set[int] = set()
    for a, b in data.draw(st.permutations(sorted(edges))):
        if a not in used and b not in used and data.draw(st.booleans()):
            start.append((a, b))
            used |= {a, b}
    ids = [f"p{i}" for i in range(n)]
    index = {pid: i for i, pid in enumerate(ids)}

    def blocked(x: str, y: str) -> bool:
        return (min(index[x], index[y]), max(index[x], index[y])) not in edges

    left = [v for v in range(n) if v not in used]
    result = _augment_all(n, start, left, ids, blocked)
    seated = [v for pr in result for v in pr]
    assert len(seated) == len(set(seated))
    assert all(pr in edges for pr in result)
    assert len(result) == _maximum_size(n, edges)
