"""GameFinished -> Glicko-2 -> RatingUpdated: fetch, call the rules and the ledger, save and publish at once."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Sequence

import asyncpg

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.idempotency import first_deliveries
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from arbiter.rating import RatedReason
from services.rating import store
from services.rating.games import INVALID, Pool, Verdict, judge, rating_message
from arbiter.rating.ledger import AppliedGame, GameToRate, merge, reach

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
            " busy_forfeit, both_absent, bye, invalid, redelivered, already_rated)",
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


def rating_updates(pool: Pool, applied: AppliedGame, causation_id: str) -> list[ev.RatingUpdated]:
    """The two RatingUpdated events of a rated (or re-rated) game."""
    events = []
    game = applied.game
    for player, before, after in (
        (game.white_id, applied.white_before, applied.white_after),
        (game.black_id, applied.black_before, applied.black_after),
    ):
        event = ev.RatingUpdated(
            player_id=player, game_id=game.game_id, variant=pool.variant, speed=pool.speed,  # type: ignore[arg-type]
            before=rating_message(before), after=rating_message(after),
        )
        event.meta.causation_id = causation_id
        events.append(event)
    return events


class GameFinishedHandler:
    """Rates a batch of GameFinished events exactly once, in each pool's canonical order (see ledger)."""

    def __init__(self, pool: asyncpg.Pool, outbox: Outbox, metrics: RatingMetrics, time_source: TimeSource) -> None:
        self.pool = pool
        self.outbox = outbox
        self.metrics = metrics
        self.time_source = time_source

    async def __call__(self, events: Sequence[ev.GameFinished]) -> str:
        """Handle one batch: one transaction per pool; raise to have the whole batch delivered again.

        Each transaction records its events as processed with their effects, so after a crash
        between two of them the redelivered batch skips the pools already done.
        """
        verdicts = [judge(event) for event in events]
        for verdict, event in zip(verdicts, events, strict=True):
            if verdict.reason == INVALID:
                log.warning(
                    "unratable GameFinished ignored", extra={"game_id": event.game_id, "problem": verdict.problem}
                )
        by_pool: dict[Pool | None, list[Verdict]] = defaultdict(list)
        for verdict in verdicts:
            if verdict.event_id:
                by_pool[verdict.pool].append(verdict)
        # An event without an id cannot be deduplicated; rating it could count it twice.
        without_id = len(verdicts) - sum(len(group) for group in by_pool.values())
        if without_id:
            log.warning("GameFinished without an event id ignored", extra={"count": without_id})
            self.metrics.count("ignored", INVALID, without_id)
        outcomes: Counter[str] = Counter()
        for pool in sorted(by_pool, key=lambda p: (p is not None, p)):
            counts: Counter[tuple[str, str]] = Counter()
            rated: list[GameToRate] = []
            revised = 0
            async with self.pool.acquire() as connection, connection.transaction():
                if pool is None:
                    await self._ignore(connection, by_pool[pool], counts)
                else:
                    # One writer per pool across replicas; one pool per transaction, so no lock order.
                    await store.lock_pool(connection, pool)
                    rated, revised = await self._rate_pool(connection, pool, by_pool[pool], counts)
            counts[("rated", RatedReason.RATED.value)] += len(rated)
            self._record(counts, revised, rated)
            for (outcome, _reason), amount in counts.items():
                outcomes[outcome] += amount
        if outcomes["rated"]:
            return "handled"
        return "duplicate" if outcomes["duplicate"] == len(verdicts) else "ignored"

    async def _fresh(
        self, connection: asyncpg.Connection, verdicts: list[Verdict], counts: Counter[tuple[str, str]]
    ) -> list[Verdict]:
        """The verdicts whose event is delivered for the first time (recorded in this transaction)."""
        fresh = await first_deliveries(connection, CONSUMER, [v.event_id for v in verdicts])
        first = []
        for verdict in verdicts:
            if verdict.event_id in fresh:
                fresh.discard(verdict.event_id)  # the same event twice in one batch counts once
                first.append(verdict)
            else:
                counts[("duplicate", "redelivered")] += 1
        return first

    async def _ignore(
        self, connection: asyncpg.Connection, verdicts: list[Verdict], counts: Counter[tuple[str, str]]
    ) -> None:
        for verdict in await self._fresh(connection, verdicts, counts):
            counts[("ignored", verdict.reason)] += 1

    async def _rate_pool(
        self, connection: asyncpg.Connection, pool: Pool, verdicts: list[Verdict], counts: Counter[tuple[str, str]]
    ) -> tuple[list[GameToRate], int]:
        """Rate the pool's first-time games in canonical order; save them, the replayed ones and the events."""
        to_rate: dict[str, Verdict] = {}
        for verdict in await self._fresh(connection, verdicts, counts):
            assert verdict.game is not None  # a verdict has a pool only when it has a game
            if verdict.game.game_id in to_rate:
                counts[("duplicate", "already_rated")] += 1
            else:
                to_rate[verdict.game.game_id] = verdict
        # The same game under another event id (a play site retrying) is rated once.
        already = await store.rated_game_ids(connection, list(to_rate))
        counts[("duplicate", "already_rated")] += len(already)
        games = sorted((v.game for v in to_rate.values() if v.game and v.game.game_id not in already),
                       key=lambda g: g.key)
        if not games:
            return [], 0
        causation = {game_id: v.event_id for game_id, v in to_rate.items()}
        # A late game replays only the later games of the players it reaches (see ledger).
        later = await store.games_after(connection, pool, games[0].key)
        reached = reach(games, later)
        stored_after = await store.applied_games(
            connection, [g.game_id for g in later if g.white_id in reached or g.black_id in reached]
        )
        players = {p for g in games for p in (g.white_id, g.black_id)}
        current = await store.player_states(connection, pool, players)
        result = merge(games, stored_after, current)
        new = [a for a in result.applied if a.game.game_id in result.new_game_ids]
        revised = result.revised
        await store.insert_games(connection, pool, new)
        await store.rewrite_games(connection, revised, self.time_source.now())
        await store.save_states(connection, pool, result.final_states)
        # Canonical order, so the last RatingUpdated of a player always carries their current rating;
        # a revised game is published again (same game id, new event id) and replaces the earlier one.
        earliest = causation[games[0].game_id]
        outgoing: list[ev.RatingUpdated] = []
        for applied in result.applied:
            outgoing += rating_updates(pool, applied, causation.get(applied.game.game_id, earliest))
        await self.outbox.add(connection, *outgoing)
        if revised:
            log.info("late game replayed", extra={
                "pool": pool.lock_name, "earliest": games[0].game_id, "revised": len(revised),
            })
        return games, len(revised)

    def _record(self, counts: Counter[tuple[str, str]], revised: int, rated: list[GameToRate]) -> None:
        for (outcome, reason), amount in counts.items():
            self.metrics.count(outcome, reason, amount)
        if revised:
            self.metrics.revised.labels(self.metrics.service).inc(revised)
        now = self.time_source.now()
        latency = self.metrics.update_latency.labels(self.metrics.service)
        for game in rated:
            latency.observe(max(0.0, (now - game.finished_at).total_seconds()))
