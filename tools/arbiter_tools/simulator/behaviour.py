"""How simulated people behave: one seeded profile per player."""

from __future__ import annotations

import enum
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


class Behaviour(enum.StrEnum):
    """What a simulated player does in their games."""

    NORMAL = "normal"
    NEVER_SHOWS = "never_shows"  # never moves: the clock flags them (T-16)
    BUSY = "busy"  # in a casual game when a round is paired (T-18)
    DISCONNECTS_SHORT = "disconnects_10s"  # drops after the first move, back after 10 s (T-17)
    DISCONNECTS_LONG = "disconnects_40s"  # drops after the first move, back after 40 s: too late (T-17)
    RESIGNS = "resigns"
    OFFERS_DRAWS = "offers_draws"
    BOOSTS = "boosts"  # AR-5, before the own first move
    REFUELS = "refuels"  # TB-3, Triple Block games


# The share of each behaviour in a default population.
DEFAULT_MIX: Mapping[Behaviour, float] = {
    Behaviour.NORMAL: 0.55,
    Behaviour.NEVER_SHOWS: 0.04,
    Behaviour.BUSY: 0.03,
    Behaviour.DISCONNECTS_SHORT: 0.05,
    Behaviour.DISCONNECTS_LONG: 0.03,
    Behaviour.RESIGNS: 0.10,
    Behaviour.OFFERS_DRAWS: 0.10,
    Behaviour.BOOSTS: 0.05,
    Behaviour.REFUELS: 0.05,
}
# Behaviours that need the clock service to end a game (without it the game would hang).
NEEDS_CLOCK = frozenset({Behaviour.NEVER_SHOWS, Behaviour.DISCONNECTS_LONG})


@dataclass
class Profiles:
    """Behaviour per player: explicit assignments, else a seeded draw from `mix`."""

    seed: int = 1
    mix: Mapping[Behaviour, float] = field(default_factory=lambda: dict(DEFAULT_MIX))
    assigned: dict[str, Behaviour] = field(default_factory=dict)

    def of(self, player_id: str) -> Behaviour:
        """The behaviour of `player_id` (stable for a given seed)."""
        found = self.assigned.get(player_id)
        if found is None:
            found = draw_behaviour(random.Random(f"{self.seed}/profile/{player_id}"), self.mix)
            self.assigned[player_id] = found
        return found

    def assign(self, players: Iterable[str]) -> None:
        """Draw the behaviour of each player now, in order (deterministic for the seed)."""
        for player in players:
            self.of(player)

    def without(self, behaviours: Iterable[Behaviour]) -> Profiles:
        """The same profiles with `behaviours` removed from the mix and replaced by NORMAL."""
        removed = set(behaviours)
        mix = {b: w for b, w in self.mix.items() if b not in removed}
        mix[Behaviour.NORMAL] = mix.get(Behaviour.NORMAL, 0.0) + sum(self.mix.get(b, 0.0) for b in removed)
        assigned = {p: (Behaviour.NORMAL if b in removed else b) for p, b in self.assigned.items()}
        return Profiles(self.seed, mix, assigned)


def draw_behaviour(rng: random.Random, mix: Mapping[Behaviour, float]) -> Behaviour:
    """One behaviour drawn with the weights of `mix`."""
    behaviours = list(mix)
    return rng.choices(behaviours, weights=[mix[b] for b in behaviours], k=1)[0]
