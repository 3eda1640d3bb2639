"""GameFinished -> Glicko-2 -> RatingUpdated: fetch, call the rules and the ledger, save and publish at once."""

from __future__ import annotations

import logging
import secrets
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from arbiter.contracts import common_pb2
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.db import Connection
from arbiter.kit.events import timestamp
from arbiter.kit.idempotency import first_deliveries
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from arbiter.rating import PROVISIONAL_RD, RatedReason
from arbiter.rating.ledger import AppliedGame, GameToRate, PlayerState, may_change_stored, merge, reach
from services.rating import store
from services.rating.games import INVALID, Pool, RatingDecision, judge
from services.rating.metrics import RatingMetrics

log = logging.getLogger(__name__)
CONSUMER = "rating"


class _Updates:
    """The RatingUpdated events of one batch, built from a per-pool template and pre-stamped.

    The outbox stamps only what is missing: one random prefix per batch plus a counter keeps
    event ids unique without a uuid4 per event, and every event shares the batch's time.
    Parsing a serialized template and setting the rest costs half of building each message.
    """

    def __init__(self, producer: str, now: datetime) -> None:
        self.prefix = secrets.token_hex(12)
        self.count = 0
        self.producer = producer
        self.occurred_at = timestamp(now)
        self.templates: dict[Pool, bytes] = {}
        self.events: list[ev.RatingUpdated] = []

    def add(self, pool: Pool, applied: AppliedGame, causation_id: str, trace_id: str) -> None:
        """The two RatingUpdated events of a rated (or re-rated) game, in the chain of the event that rated it."""
        template = self.templates.get(pool)
        if template is None:
            template = self.templates[pool] = ev.RatingUpdated(
                meta={"occurred_at": self.occurred_at, "producer": self.producer},
                variant=pool.variant, speed=pool.speed,  # type: ignore[arg-type]  # the stored protobuf Speed number
            ).SerializeToString()
        game = applied.game
        for player, before, after in (
            (game.white_id, applied.white_before, applied.white_after),
            (game.black_id, applied.black_before, applied.black_after),
        ):
            self.count += 1
            event = ev.RatingUpdated.FromString(template)
            meta = event.meta
            meta.event_id = f"{self.prefix}{self.count:08x}"
            meta.causation_id = causation_id
            meta.trace_id = trace_id
            event.player_id = player
            event.game_id = game.game_id
            _set_rating(event.before, before)
            _set_rating(event.after, after)
            self.events.append(event)


def _set_rating(message: common_pb2.Rating, state: PlayerState) -> None:
    # games.rating_message, written into the event's own field instead of copied in.
    rating = state.rating
    message.rating = rating.rating
    message.deviation = rating.rd
    message.volatility = rating.vol
    message.provisional = rating.rd >= PROVISIONAL_RD
    message.games = state.games


@dataclass
class _PoolWork:
    """The games of one pool in this batch, in canonical order, and where each came from."""

    games: list[GameToRate]
    causation: dict[str, str]


class GameFinishedHandler:
    """Rates a batch of GameFinished events exactly once, in each pool's canonical order (see ledger)."""

    def __init__(self, pool: asyncpg.Pool, outbox: Outbox, metrics: RatingMetrics, time_source: TimeSource) -> None:
        self.pool = pool
        self.outbox = outbox
        self.metrics = metrics
        self.time_source = time_source

    async def __call__(self, events: Sequence[ev.GameFinished]) -> str:
        """Handle one batch in one transaction; raise to have the whole batch delivered again.

        One transaction for every pool of the batch: the effects (each rated game with the id of
        the event that rated it), the ids of the events that rated nothing and the outgoing events
        commit together, in 6 round trips for the usual batch (a few more for
        a late game or a batch above `store.ONE_STATEMENT_GAMES`). Under load every round trip waits
        for a busy PostgreSQL, so their count, not the work per game, sets a small batch's time.
        """
        decisions = [judge(event) for event in events]
        for decision, event in zip(decisions, events, strict=True):
            if decision.reason == INVALID:
                log.warning("unratable GameFinished ignored", extra={
                    "game_id": event.game_id, "problem": decision.problem, "trace_id": event.meta.trace_id})
        # An event without an id cannot be deduplicated; rating it could count it twice.
        with_id = [decision for decision in decisions if decision.event_id]
        counts: Counter[tuple[str, str]] = Counter()
        without_id = len(decisions) - len(with_id)
        if without_id:
            log.warning("GameFinished without an event id ignored", extra={"count": without_id})
            counts[("ignored", INVALID)] += without_id
        rated: list[GameToRate] = []
        revised: list[AppliedGame] = []
        if with_id:
            # Each RatingUpdated in the chain of the GameFinished that rated its game (the kit gave each one).
            traces = {event.meta.event_id: event.meta.trace_id for event in events}
            async with self.pool.acquire() as connection, connection.transaction():
                rated, revised = await self._handle(connection, with_id, counts, traces)
        counts[("rated", RatedReason.RATED.value)] += len(rated)
        self._record(counts, len(revised), rated)
        if rated:
            return "handled"
        duplicates = sum(amount for (outcome, _reason), amount in counts.items() if outcome == "duplicate")
        return "duplicate" if duplicates == len(decisions) else "ignored"

    async def _handle(
        self, connection: Connection, decisions: list[RatingDecision], counts: Counter[tuple[str, str]],
        traces: Mapping[str, str],
    ) -> tuple[list[GameToRate], list[AppliedGame]]:
        """Rate the batch's first-time games pool by pool; save them, the replayed ones and the events."""
        pools = {decision.pool for decision in decisions if decision.pool is not None}
        # One writer per pool across replicas, taken before anything is read.
        await store.lock_pools(connection, pools)
        to_rate: dict[str, tuple[Pool, RatingDecision]] = {}
        # The batch's other events for a game it already holds: which is a redelivery depends on
        # which event rated the game, known once the stored games are read.
        again: dict[str, list[str]] = defaultdict(list)
        unratable: dict[str, RatingDecision] = {}
        delivered: set[str] = set()
        for decision in decisions:
            if decision.event_id in delivered:
                counts[("duplicate", "redelivered")] += 1  # the same event twice in one batch counts once
                continue
            delivered.add(decision.event_id)
            if decision.pool is None or decision.game is None:
                unratable[decision.event_id] = decision
            elif decision.game.game_id in to_rate:
                again[decision.game.game_id].append(decision.event_id)
            else:
                to_rate[decision.game.game_id] = (decision.pool, decision)
        # A rated game is its own idempotency record, saved with the id of the event that rated it
        # (migration 003): only the events that rate nothing need a processed-event row.
        if unratable:
            fresh = await first_deliveries(connection, CONSUMER, list(unratable))
            for event_id, decision in unratable.items():
                counts[("ignored", decision.reason) if event_id in fresh else ("duplicate", "redelivered")] += 1
        if not to_rate:
            return [], []
        # The same game under another event id (a play site retrying) is rated once. The states are
        # read in the same round trip, for every candidate's players: a game found rated only adds unused ones.
        candidates: dict[Pool, set[str]] = defaultdict(set)
        for pool, decision in to_rate.values():
            assert decision.game is not None
            candidates[pool].update((decision.game.white_id, decision.game.black_id))
        stored = await store.rated_and_states(connection, list(to_rate), candidates)
        already, current = stored.rated, stored.states
        for game_id, (_pool, decision) in to_rate.items():
            if game_id in already:  # every event of the batch for it comes too late; None before migration 003
                late, rated_by = (decision.event_id, *again.get(game_id, ())), already[game_id]
            else:  # the first of them rates it now
                late, rated_by = tuple(again.get(game_id, ())), decision.event_id
            for event_id in late:
                counts[("duplicate", "redelivered" if event_id == rated_by else "already_rated")] += 1
        work: dict[Pool, _PoolWork] = {}
        for game_id, (pool, decision) in to_rate.items():
            if game_id not in already:
                assert decision.game is not None
                entry = work.setdefault(pool, _PoolWork([], {}))
                entry.games.append(decision.game)
                entry.causation[game_id] = decision.event_id
        if not work:
            return [], []
        for entry in work.values():
            entry.games.sort(key=lambda game: game.key)
        # A late game replays only the later games of the players it reaches (see ledger): read only
        # for a pool where a late game's player has a game stored after it.
        later = await store.games_after(connection, {
            pool: entry.games[0].key for pool, entry in work.items()
            if pool in stored.latest and may_change_stored(entry.games, current[pool], stored.latest[pool])})
        pool_of_game: dict[str, Pool] = {}
        for pool, entry in work.items():
            if later.get(pool):
                reached = reach(entry.games, later[pool])
                for (_finished_at, game_id), white, black in later[pool]:
                    if white in reached or black in reached:
                        pool_of_game[game_id] = pool
        stored_after: dict[Pool, list[AppliedGame]] = defaultdict(list)
        for applied in await store.applied_games(connection, list(pool_of_game)):
            stored_after[pool_of_game[applied.game.game_id]].append(applied)
        new: dict[Pool, list[AppliedGame]] = {}
        final: dict[Pool, Mapping[str, PlayerState]] = {}
        revised: list[AppliedGame] = []
        updates = _Updates(self.outbox.producer, self.time_source.now())
        rated: list[GameToRate] = []
        for pool in sorted(work):
            entry = work[pool]
            result = merge(entry.games, stored_after[pool], current[pool])
            new[pool] = [a for a in result.applied if a.game.game_id in result.new_game_ids]
            pool_revised = result.revised
            revised += pool_revised
            final[pool] = result.final_states
            rated += entry.games
            # Canonical order, so the last RatingUpdated of a player always carries their current rating;
            # a revised game is published again (same game id, new event id) and replaces the earlier one.
            earliest = entry.causation[entry.games[0].game_id]
            for applied in result.applied:
                causation_id = entry.causation.get(applied.game.game_id, earliest)
                updates.add(pool, applied, causation_id, traces.get(causation_id, ""))
            if pool_revised:
                log.info("late game replayed", extra={
                    "pool": pool.lock_name, "earliest": entry.games[0].game_id, "revised": len(pool_revised),
                    "trace_id": traces.get(earliest, ""),
                })
        await store.rewrite_games(connection, revised, self.time_source.now())
        await store.save_rated(connection, new, final, {
            game_id: event_id for entry in work.values() for game_id, event_id in entry.causation.items()})
        await self.outbox.add(connection, *updates.events)
        return rated, revised

    def _record(self, counts: Counter[tuple[str, str]], revised: int, rated: list[GameToRate]) -> None:
        for (outcome, reason), amount in counts.items():
            self.metrics.count(outcome, reason, amount)
        if revised:
            self.metrics.revised.labels(self.metrics.service).inc(revised)
        now = self.time_source.now()
        latency = self.metrics.update_latency.labels(self.metrics.service)
        for game in rated:
            latency.observe(self.time_source.real_seconds((now - game.finished_at).total_seconds()))
