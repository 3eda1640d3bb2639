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
from arbiter.kit.events import timestamp
from arbiter.kit.idempotency import first_deliveries
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from arbiter.rating import PROVISIONAL_RD, RatedReason
from arbiter.rating.ledger import AppliedGame, GameToRate, PlayerState, may_change_stored, merge, reach
from services.rating import store
from services.rating.games import INVALID, Pool, Verdict, judge

log = logging.getLogger(__name__)
CONSUMER = "rating"
# Seconds from a game's finish to its rating committed; a backlog after an outage reaches minutes.
UPDATE_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)


class RatingMetrics:
    """The rating service's own series: games by outcome and reason, revisions, update latency."""

    def __init__(self, metrics: Metrics) -> None:
        self.service = metrics.service
        self.games = metrics.counter(
            "arbiter_rating_games_total",
            "GameFinished events by outcome (rated, ignored, duplicate) and reason (rated, friendly, never_sat,"
            " busy_forfeit, both_absent, bye, invalid; redelivered: the event that rated or ignored it came"
            " again; already_rated: its game was rated under another event id)",
            ("outcome", "reason"),
        )
        self.revised = metrics.counter(
            "arbiter_rating_games_revised_total",
            "Rated games whose result was recomputed because a game that finished earlier arrived later",
        )
        self.update_latency = metrics.histogram(
            "arbiter_rating_update_latency_seconds",
            "From a game's finish (competition time) to its rating change committed",
            buckets=UPDATE_LATENCY_BUCKETS,
        )

    def count(self, outcome: str, reason: str, amount: int = 1) -> None:
        """Add `amount` games to one (outcome, reason) series."""
        if amount:
            self.games.labels(self.service, outcome, reason).inc(amount)


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

    def add(self, pool: Pool, applied: AppliedGame, causation_id: str) -> None:
        """The two RatingUpdated events of a rated (or re-rated) game."""
        template = self.templates.get(pool)
        if template is None:
            template = self.templates[pool] = ev.RatingUpdated(
                meta={"occurred_at": self.occurred_at, "producer": self.producer},
                variant=pool.variant, speed=pool.speed,  # type: ignore[arg-type]
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
        verdicts = [judge(event) for event in events]
        for verdict, event in zip(verdicts, events, strict=True):
            if verdict.reason == INVALID:
                log.warning(
                    "unratable GameFinished ignored", extra={"game_id": event.game_id, "problem": verdict.problem}
                )
        # An event without an id cannot be deduplicated; rating it could count it twice.
        with_id = [verdict for verdict in verdicts if verdict.event_id]
        counts: Counter[tuple[str, str]] = Counter()
        without_id = len(verdicts) - len(with_id)
        if without_id:
            log.warning("GameFinished without an event id ignored", extra={"count": without_id})
            counts[("ignored", INVALID)] += without_id
        rated: list[GameToRate] = []
        revised: list[AppliedGame] = []
        if with_id:
            async with self.pool.acquire() as connection, connection.transaction():
                rated, revised = await self._handle(connection, with_id, counts)
        counts[("rated", RatedReason.RATED.value)] += len(rated)
        self._record(counts, len(revised), rated)
        if rated:
            return "handled"
        duplicates = sum(amount for (outcome, _reason), amount in counts.items() if outcome == "duplicate")
        return "duplicate" if duplicates == len(verdicts) else "ignored"

    async def _handle(
        self, connection: asyncpg.Connection, verdicts: list[Verdict], counts: Counter[tuple[str, str]]
    ) -> tuple[list[GameToRate], list[AppliedGame]]:
        """Rate the batch's first-time games pool by pool; save them, the replayed ones and the events."""
        pools = {verdict.pool for verdict in verdicts if verdict.pool is not None}
        # One writer per pool across replicas, taken before anything is read.
        await store.lock_pools(connection, pools)
        to_rate: dict[str, tuple[Pool, Verdict]] = {}
        # The batch's other events for a game it already holds: which is a redelivery depends on
        # which event rated the game, known once the stored games are read.
        again: dict[str, list[str]] = defaultdict(list)
        unratable: dict[str, Verdict] = {}
        delivered: set[str] = set()
        for verdict in verdicts:
            if verdict.event_id in delivered:
                counts[("duplicate", "redelivered")] += 1  # the same event twice in one batch counts once
                continue
            delivered.add(verdict.event_id)
            if verdict.pool is None or verdict.game is None:
                unratable[verdict.event_id] = verdict
            elif verdict.game.game_id in to_rate:
                again[verdict.game.game_id].append(verdict.event_id)
            else:
                to_rate[verdict.game.game_id] = (verdict.pool, verdict)
        # A rated game is its own idempotency record, saved with the id of the event that rated it
        # (migration 003): only the events that rate nothing need a processed-event row.
        if unratable:
            fresh = await first_deliveries(connection, CONSUMER, list(unratable))
            for event_id, verdict in unratable.items():
                counts[("ignored", verdict.reason) if event_id in fresh else ("duplicate", "redelivered")] += 1
        if not to_rate:
            return [], []
        # The same game under another event id (a play site retrying) is rated once. The states are
        # read in the same round trip, for every candidate's players: a game found rated only adds unused ones.
        candidates: dict[Pool, set[str]] = defaultdict(set)
        for pool, verdict in to_rate.values():
            assert verdict.game is not None
            candidates[pool].update((verdict.game.white_id, verdict.game.black_id))
        stored = await store.rated_and_states(connection, list(to_rate), candidates)
        already, current = stored.rated, stored.states
        for game_id, (_pool, verdict) in to_rate.items():
            if game_id in already:  # every event of the batch for it comes too late; None before migration 003
                late, rated_by = (verdict.event_id, *again.get(game_id, ())), already[game_id]
            else:  # the first of them rates it now
                late, rated_by = tuple(again.get(game_id, ())), verdict.event_id
            for event_id in late:
                counts[("duplicate", "redelivered" if event_id == rated_by else "already_rated")] += 1
        work: dict[Pool, _PoolWork] = {}
        for game_id, (pool, verdict) in to_rate.items():
            if game_id not in already:
                assert verdict.game is not None
                entry = work.setdefault(pool, _PoolWork([], {}))
                entry.games.append(verdict.game)
                entry.causation[game_id] = verdict.event_id
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
                updates.add(pool, applied, entry.causation.get(applied.game.game_id, earliest))
            if pool_revised:
                log.info("late game replayed", extra={
                    "pool": pool.lock_name, "earliest": entry.games[0].game_id, "revised": len(pool_revised),
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
            latency.observe(max(0.0, (now - game.finished_at).total_seconds()))
