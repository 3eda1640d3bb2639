"""StateCache alone: a pool's kept states are answered only at the next version, and the oldest go first."""

from __future__ import annotations

from datetime import UTC, datetime

from arbiter.rating import Rating
from arbiter.rating.ledger import PlayerState
from services.rating.cache import StateCache
from services.rating.games import Pool

BLITZ = Pool("international", 3)
RAPID = Pool("international", 4)


def state(rating: float) -> PlayerState:
    return PlayerState(Rating(rating, 100.0, 0.06), 3, datetime(2026, 11, 30, tzinfo=UTC))


def test_states_are_answered_only_when_the_pool_is_one_version_on() -> None:
    cache = StateCache(10)
    cache.committed(BLITZ, 5, {"a": state(1500), "b": None})
    assert cache.known(BLITZ, 6, ["a", "b", "c"]) == {"a": state(1500), "b": None}
    # Another writer's version in between: nothing is answered and the pool is forgotten.
    assert cache.known(BLITZ, 8, ["a"]) == {}
    assert cache.players(BLITZ) == 0
    assert cache.known(RAPID, 1, ["a"]) == {}


def test_a_commit_one_version_on_keeps_the_earlier_states_and_a_later_one_starts_again() -> None:
    cache = StateCache(10)
    cache.committed(BLITZ, 1, {"a": state(1500)})
    cache.committed(BLITZ, 2, {"b": state(1600), "a": state(1510)})
    assert cache.known(BLITZ, 3, ["a", "b"]) == {"a": state(1510), "b": state(1600)}
    cache.committed(BLITZ, 7, {"c": state(1400)})
    assert cache.known(BLITZ, 8, ["a", "b", "c"]) == {"c": state(1400)}


def test_a_full_pool_forgets_the_players_written_longest_ago() -> None:
    cache = StateCache(3)
    cache.committed(BLITZ, 1, {"a": state(1), "b": state(2), "c": state(3)})
    cache.committed(BLITZ, 2, {"a": state(4), "d": state(5)})
    assert cache.players(BLITZ) == 3
    assert set(cache.known(BLITZ, 3, ["a", "b", "c", "d"])) == {"a", "c", "d"}


def test_no_capacity_keeps_nothing() -> None:
    cache = StateCache(0)
    cache.committed(BLITZ, 1, {"a": state(1)})
    assert cache.known(BLITZ, 2, ["a"]) == {}
