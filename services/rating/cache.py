"""The players' stored states a rating replica keeps between batches, trusted only while it alone wrote their pool.

Each batch's transaction bumps its pools' versions under their locks (store.lock_pools). A pool
is known here at the version this process committed last; a bump that lands one above it shows
that no other writer came between, and every state kept for the pool is still the stored one.
Any other version drops the pool: its states are read again, as when nothing is kept. A batch
that fails changes nothing here, and a commit whose outcome is unknown leaves the pool a
version behind, so the next batch reads again.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from arbiter.rating.ledger import PlayerState
from services.rating.games import Pool

# None: the player has no rating in the pool (read and found absent).
KnownState = PlayerState | None


@dataclass
class _PoolStates:
    version: int
    # Oldest written first: a full pool forgets the players it has not rated for longest.
    states: dict[str, KnownState] = field(default_factory=dict)


class StateCache:
    """States of up to `capacity` players per pool, each valid at the pool's version it was kept at."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._pools: dict[Pool, _PoolStates] = {}

    def known(self, pool: Pool, version: int, players: Collection[str]) -> dict[str, KnownState]:
        """The kept states of `players` if this process committed `pool` at `version - 1`, else none (and the pool is dropped)."""
        kept = self._pools.get(pool)
        if kept is None or kept.version != version - 1:
            self._pools.pop(pool, None)
            return {}
        states = kept.states
        return {player: states[player] for player in players if player in states}

    def committed(self, pool: Pool, version: int, states: Mapping[str, KnownState]) -> None:
        """Keep `states`, read or written by a transaction that committed `pool` at `version`."""
        if self.capacity <= 0:
            return
        kept = self._pools.get(pool)
        if kept is None or kept.version != version - 1:
            kept = self._pools[pool] = _PoolStates(version)
        kept.version = version
        pool_states = kept.states
        for player, state in states.items():
            pool_states.pop(player, None)
            pool_states[player] = state
        excess = len(pool_states) - self.capacity
        if excess > 0:
            for player in list(itertools.islice(pool_states, excess)):
                del pool_states[player]

    def players(self, pool: Pool) -> int:
        """How many players' states are kept for `pool`."""
        kept = self._pools.get(pool)
        return len(kept.states) if kept is not None else 0
