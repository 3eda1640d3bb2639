"""Pairing arenas: one owner per arena (a Redis lease), a pass whenever someone starts waiting (AR-2, AR-3).

A pass reads the waiting queue, ranks, colours and cooldowns from Redis and the ratings from
the rating service (cached); then, in one transaction, PostgreSQL checks who of them is free
while the pure `match_waiting` runs, the games and their GameRequested events are saved, and
the paired players leave the queue (Redis, at the same time as the save).
PostgreSQL has the last word: under the arena's pairing lock (joins and leaves take it too)
the save drops any pairing of a player who left or is still in a game, so two replicas
pairing at once (a lease lost in a pause) can never put a player in two games.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import asyncpg
from redis.exceptions import RedisError

from arbiter.clocks.speed import Speed
from arbiter.competition.arena import ArenaPairing, WaitingPlayer, match_waiting
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.events import timestamp
from arbiter.kit.outbox import Outbox
from arbiter.kit.pause import pause
from arbiter.kit.timesource import TimeSource
from arbiter.kit.watch import Foreground
from arbiter.openings.draw import initial_fen
from arbiter.vocabulary import Side
from services.arena import store
from services.arena.clients import RatingCache
from services.arena.convert import SPEED_TO_PROTO
from services.arena.hot import Colours, HotStore, Waiting
from services.arena.lifecycle import Lifecycle, finish_if_done
from services.arena.metrics import ArenaMetrics
from services.arena.rebuild import rebuild_arena
from services.arena.settings import ArenaSettings
from services.arena.watch import WatchHub

log = logging.getLogger(__name__)
_WAKE_CHANNEL = "arena:wake"
# Above this many waiting players the matching runs in a thread, so the loop keeps serving and
# PostgreSQL checks who is free meanwhile; below, it is done before any transaction opens.
_THREAD_ABOVE = 400


@dataclass(frozen=True, slots=True)
class ArenaInfo:
    """What a pass needs of an arena that never changes after creation."""

    arena_id: str
    variant: str
    speed: common.Speed
    base_seconds: int
    increment_seconds: int
    rated: bool
    ends_at: datetime
    # O-1: arena games start from the initial position (computed once, not per game).
    fen: str


class Matchmaker:
    """Holds the leases of the arenas this replica pairs and runs their passes."""

    def __init__(
        self, pool: asyncpg.Pool, hot: HotStore, outbox: Outbox, time_source: TimeSource, ratings: RatingCache,
        hub: WatchHub, lifecycle: Lifecycle, metrics: ArenaMetrics, settings: ArenaSettings,
        replica: str | None = None, on_paired: Callable[[str, list[tuple[str, str, str]]], None] | None = None,
        foreground: Foreground | None = None,
    ) -> None:
        self.pool = pool
        self.hot = hot
        self.outbox = outbox
        self.time_source = time_source
        self.ratings = ratings
        self.hub = hub
        self.lifecycle = lifecycle
        self.metrics = metrics
        self.settings = settings
        self.replica = replica or settings.replica_id or uuid.uuid4().hex
        # The benchmark's probe: called with (arena id, [(game id, white, black)]) right after a save commits
        # (the GameRequested events are then in the outbox); the queue update may still be in flight.
        self.on_paired = on_paired
        # Passes are work Watch streams give way to (players wait for them).
        self.foreground = foreground or Foreground()
        self._wakes: dict[str, asyncio.Event] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._info: dict[str, ArenaInfo] = {}

    # -- waking -------------------------------------------------------------------------------

    def owns(self, arena_id: str) -> bool:
        """Does this replica pair `arena_id` right now?"""
        return arena_id in self._workers

    async def wake(self, arena_id: str) -> None:
        """Someone started waiting in `arena_id`: pair now, here or on the owning replica (AR-2)."""
        event = self._wakes.get(arena_id)
        if event is not None:
            event.set()
            return
        try:
            await self.hot.redis.publish(_WAKE_CHANNEL, arena_id)
        except (RedisError, OSError) as error:
            # The owner's tick pairs them a moment later anyway.
            log.warning("wake publish failed", extra={"arena_id": arena_id, "error": repr(error)})

    # -- the Redis side, rebuilt on demand ----------------------------------------------------

    async def ensure_hot(self, arena_id: str, hot: HotStore | None = None) -> None:
        """Rebuild the arena's Redis keys from PostgreSQL when its marker is missing (e.g. after a flush).

        The marker is looked at through `hot` when given: a caller's own pool, not the matchmaker's.
        """
        if not await (hot or self.hot).is_ready(arena_id):
            await self.rebuild(arena_id, missing=True)

    async def rebuild(self, arena_id: str, *, missing: bool = False) -> None:
        """Rewrite the arena's Redis keys from PostgreSQL; `missing`: because Redis no longer held them."""
        await rebuild_arena(self.pool, self.hot, arena_id, self.time_source.now())
        self.metrics.rebuilds.labels(self.metrics.service).inc()
        if missing:
            self.metrics.hot_rebuilds.labels(self.metrics.service, "arena").inc()
        log.info("arena rebuilt from PostgreSQL", extra={"arena_id": arena_id, "keys_were_missing": missing})

    # -- one pass -----------------------------------------------------------------------------

    async def _arena_info(self, arena_id: str) -> ArenaInfo | None:
        info = self._info.get(arena_id)
        if info is None:
            row = await store.arena(self.pool, arena_id)
            if row is None:
                return None
            info = ArenaInfo(arena_id, row["variant"], SPEED_TO_PROTO[Speed(row["speed"])], row["base_seconds"],
                             row["increment_seconds"], row["rated"], row["ends_at"], initial_fen(row["variant"]))
            self._info[arena_id] = info
        return info

    async def pair_once(self, arena_id: str) -> int:
        """Pair whoever may meet among the players waiting in `arena_id`; return the games requested."""
        started = time.perf_counter()
        info = await self._arena_info(arena_id)
        now = self.time_source.now()
        if info is None or now >= info.ends_at:
            # AR-1: no new pairings once the duration is over.
            return 0
        waiting = await self.hot.snapshot(arena_id, now.timestamp())
        if waiting is None:
            await self.rebuild(arena_id, missing=True)
            waiting = await self.hot.snapshot(arena_id, now.timestamp()) or []
        service = self.metrics.service
        self.metrics.waiting.labels(service, arena_id).set(len(waiting))
        if len(waiting) < 2:
            return 0
        by_id = {w.player_id: w for w in waiting}
        ratings, complete = await self.ratings.ratings(arena_id, info.variant, info.speed, list(by_id))
        if not complete:
            self.metrics.rating_fallbacks.labels(service).inc()
        refusals = sum(len(w.blocked & by_id.keys()) for w in waiting if w.blocked) // 2
        if refusals:
            self.metrics.cooldown_refusals.labels(service).inc(refusals)
        # Thousands of players often share a waiting instant (a rebuild, a batch of results): convert each once.
        instants: dict[float, datetime] = {}
        players = []
        for w in waiting:
            since = instants.get(w.since)
            if since is None:
                since = instants[w.since] = datetime.fromtimestamp(w.since, UTC)
            players.append(WaitingPlayer(
                player_id=w.player_id, rank=w.rank, rating=round(ratings[w.player_id]),
                colour_balance=w.colours.balance, last_colour=w.colours.last, waiting_since=since,
            ))
        # Only players with a cooldown running: the matching looks up everybody else for nothing.
        blocked = {w.player_id: w.blocked for w in waiting if w.blocked}
        pairings = None
        if len(players) <= _THREAD_ABOVE:
            # A few dozen players match in well under a millisecond: match first, and open no
            # transaction when nobody may meet (their cooldowns run, AR-3).
            pairings = match_waiting(players, blocked, now, seed=int(now.timestamp()))
            if not pairings:
                return 0
        try:
            saved, refused, took = await self._pair_and_save(info, by_id, players, blocked, now, pairings)
        except Exception:
            # Whatever was or was not committed, Redis may now disagree with PostgreSQL.
            await self._resync(arena_id)
            raise
        if refused:
            # Redis said they wait, PostgreSQL says they left or play: PostgreSQL has the last word.
            await self._resync(arena_id)
        if isinstance(took, BaseException):
            # Saved but Redis not updated: the next pass's save refuses the stale entries and resyncs.
            raise took
        if saved:
            self._observe(saved, by_id, now)
            self.metrics.waiting.labels(service, arena_id).set(len(waiting) - 2 * len(saved) - len(refused))
            await self.hub.publish(arena_id, "paired")
        self.metrics.pass_seconds.labels(service).observe(time.perf_counter() - started)
        return len(saved)

    async def _pair_and_save(
        self, info: ArenaInfo, by_id: dict[str, Waiting], players: Sequence[WaitingPlayer],
        blocked: dict[str, frozenset[str]], now: datetime, pairings: list[ArenaPairing] | None,
    ) -> tuple[list[ArenaPairing], list[str], int | BaseException | None]:
        """Save the games and their GameRequested in one transaction; take the players off the queue.

        `pairings` None: many wait, and the matching (AR-2, AR-3) runs in a thread while
        PostgreSQL checks who of them is free. Returns the saved pairings, the paired players
        PostgreSQL refused (they left or still play), and the outcome of the queue update (None
        when there was none). PostgreSQL has the last word: under the arena's pairing lock
        (joins and leaves take it too) the save drops any pairing of a player who left or is
        still in a game.
        """
        arena_id = info.arena_id
        took: asyncio.Task[int] | None = None
        try:
            async with self.pool.acquire() as connection, connection.transaction():
                # The arena's row in share mode, like results, joins and leaves: none of them waits for
                # another, while the end (AR-1) and a rebuild (update mode) wait for all. Pairing saves,
                # joins and leaves of one arena take turns by the advisory lock (store.lock_pairing).
                arena = await connection.fetchrow(
                    "SELECT state, ends_at, pg_advisory_xact_lock(hashtextextended($2, 0)) IS NULL AS locked"
                    " FROM arenas WHERE id = $1 FOR SHARE",
                    arena_id, store.PAIRING_LOCK + arena_id,
                )
                if arena is None or arena["state"] != "running" or now >= arena["ends_at"]:
                    return [], [], None
                # Who is seated, active and in no running game, read after the lock (a new snapshot):
                # one probe of the players' key, one bitmap scan of the two partial indexes on running
                # games. In a burst of thousands PostgreSQL answers while the matching runs (each takes
                # tens of milliseconds). Game numbers continue from the last one (the pairing lock
                # makes this the only writer).
                candidates = list(by_id) if pairings is None else [p for x in pairings for p in (x.white, x.black)]
                check = asyncio.ensure_future(connection.fetch(
                    "SELECT s.player_id, (SELECT coalesce(max(seq), 0) FROM arena_games WHERE arena_id = $1) AS last"
                    " FROM arena_players s WHERE s.arena_id = $1 AND s.player_id = ANY($2::text[]) AND s.active"
                    " AND s.player_id NOT IN (SELECT unnest(ARRAY[g.white_id, g.black_id]) FROM arena_games g"
                    " WHERE g.arena_id = $1 AND g.result IS NULL"
                    " AND (g.white_id = ANY($2::text[]) OR g.black_id = ANY($2::text[])))",
                    arena_id, candidates,
                ))
                if pairings is None:
                    try:
                        pairings = await asyncio.to_thread(
                            match_waiting, players, blocked, now, seed=int(now.timestamp())
                        )
                    finally:
                        # Never leave the connection with a statement in flight.
                        await asyncio.wait([check])
                rows = await check
                if not pairings:
                    return [], [], None
                # Never two games at once, never a player who left: whatever Redis said.
                free = {row["player_id"] for row in rows}
                refused = sorted({p for pairing in pairings for p in (pairing.white, pairing.black)} - free)
                if refused:
                    log.info("players dropped from the queue at save", extra={"arena_id": arena_id, "players": refused})
                kept = [p for p in pairings if p.white in free and p.black in free]
                if not kept:
                    return [], refused, None
                taken: list[tuple[str, float, Colours]] = []
                # The snapshot shares one Colours per distinct value, and few recur across a burst's
                # thousands: compute each next one once (by identity, cheaper than hashing them).
                after: tuple[dict[int, Colours], dict[int, Colours]] = ({}, {})
                for pairing in kept:
                    sides = ((pairing.white, Side.WHITE, after[0]), (pairing.black, Side.BLACK, after[1]))
                    for player, side, known in sides:
                        w = by_id[player]
                        colours = known.get(id(w.colours))
                        if colours is None:
                            colours = known[id(w.colours)] = w.colours.after(side)
                        taken.append((player, w.since, colours))
                # The queue update goes out with the save instead of after it, so Redis and PostgreSQL
                # work at the same time. Nothing reads the paired players' Redis state as playing before
                # their games exist: their results cannot come earlier. Should the transaction not
                # commit, the caller rebuilds Redis from PostgreSQL.
                took = asyncio.ensure_future(self.hot.take(arena_id, taken))
                first = rows[0]["last"] + 1
                ids = [store.game_id(arena_id, first + i) for i in range(len(kept))]
                insert = asyncio.ensure_future(connection.execute(
                    "INSERT INTO arena_games (game_id, arena_id, seq, white_id, black_id, requested_at)"
                    " SELECT g, $1, s, w, b, $6 FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[])"
                    " AS t(g, s, w, b)",
                    arena_id, ids, [first + i for i in range(len(kept))], [p.white for p in kept],
                    [p.black for p in kept], now,
                ))
                # Let the insert go out, then build the events while PostgreSQL writes the games.
                await asyncio.sleep(0)
                try:
                    events = self._requested(info, ids, kept, now)
                finally:
                    await asyncio.wait([insert])
                insert.result()
                await self.outbox.add(connection, *events)
        finally:
            if took is not None:
                await asyncio.wait([took])
        if self.on_paired is not None:
            self.on_paired(arena_id, [(g, p.white, p.black) for g, p in zip(ids, kept, strict=True)])
        return kept, refused, took.exception() or took.result()

    async def _resync(self, arena_id: str) -> None:
        """Redis and PostgreSQL disagree after a pass: rebuild now, or mark the keys for the next reader."""
        try:
            await self.rebuild(arena_id)
        except (TimeoutError, OSError, RedisError, asyncpg.PostgresError):
            log.warning("rebuild after a refused save failed; the next pass rebuilds", extra={"arena_id": arena_id})
            with contextlib.suppress(OSError, RedisError):
                await self.hot.invalidate(arena_id)

    def _observe(self, saved: Sequence[ArenaPairing], by_id: dict[str, Waiting], now: datetime) -> None:
        scale = self.time_source.scale
        for pairing in saved:
            for player in (pairing.white, pairing.black):
                waiting = by_id[player]
                # Only waits that began at a game end (a first join is not a requeue).
                if waiting.record.games:
                    real = max(0.0, now.timestamp() - waiting.since) / scale
                    self.metrics.requeue_to_request.labels(self.metrics.service).observe(real)
        self.metrics.pairings.labels(self.metrics.service).inc(len(saved))

    def _requested(
        self, info: ArenaInfo, game_ids: Sequence[str], pairings: Sequence[ArenaPairing], now: datetime
    ) -> list[ev.GameRequested]:
        """The GameRequested of each new game, copied from one template per pass (a burst opens thousands)."""
        template = ev.GameRequested(
            competition=common.CompetitionRef(kind=common.COMPETITION_KIND_ARENA, id=info.arena_id),
            variant=info.variant, speed=info.speed,
            rated=info.rated, boost_allowed=True, requested_at=timestamp(now),
            opening=common.Opening(variant=info.variant, mode=common.OPENING_MODE_FREE, fen=info.fen),
        )
        template.time_control.fischer.base_seconds = info.base_seconds
        template.time_control.fischer.increment_seconds = info.increment_seconds
        # Stamped here once rather than by the outbox per event: the pairing's instant, this producer.
        template.meta.occurred_at.CopyFrom(template.requested_at)
        template.meta.producer = self.outbox.producer
        events = []
        for game_id, pairing in zip(game_ids, pairings, strict=True):
            event = ev.GameRequested()
            event.CopyFrom(template)
            event.game_id = game_id
            event.white_id = pairing.white
            event.black_id = pairing.black
            # Deterministic: a pass replayed after a crash publishes the same event id.
            event.meta.event_id = f"{game_id}/requested"
            events.append(event)
        return events

    # -- ownership ----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Hold leases on the live arenas, run one worker per owned arena, until `stop`."""
        listener = asyncio.create_task(self._listen(stop), name="arena-wake-listener")
        try:
            while not stop.is_set():
                try:
                    await self._hold_leases()
                    await self._announce_timer_changes()
                except (TimeoutError, OSError, RedisError, asyncpg.PostgresError) as error:
                    log.warning("lease round failed, retrying", extra={"error": repr(error)})
                await pause(stop, self.settings.lease_renew_seconds)
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await listener
            for arena_id in list(self._workers):
                await self._stop_worker(arena_id)
                with contextlib.suppress(RedisError, OSError):
                    # Hand over at once rather than after the lease runs out.
                    await self.hot.release_lease(arena_id, self.replica)

    async def _hold_leases(self) -> None:
        live = await store.live_arena_ids(self.pool)
        lease_ms = int(self.settings.lease_seconds * 1000)
        for arena_id in live:
            if await self.hot.hold_lease(arena_id, self.replica, lease_ms):
                if arena_id not in self._workers:
                    await self._start_worker(arena_id)
            elif arena_id in self._workers:
                log.warning("arena lease lost to another replica", extra={"arena_id": arena_id})
                await self._stop_worker(arena_id)
        for arena_id in set(self._workers) - set(live):
            await self._stop_worker(arena_id)
            await self.hot.release_lease(arena_id, self.replica)
        service = self.metrics.service
        self.metrics.owned.labels(service).set(len(self._workers))
        self.metrics.live.labels(service).set(len(live))
        now = self.time_source.now()
        for arena_id in self._workers:
            self.metrics.leaderboard_size.labels(service, arena_id).set(await self.hot.board_size(arena_id))
            info = self._info.get(arena_id)
            # AR-1: once its duration is over an arena pairs nobody; those still queued wait for no game.
            closing = info is not None and now >= info.ends_at
            self.metrics.waiting.labels(service, arena_id).set(0 if closing else await self.hot.waiting_count(arena_id))

    async def _start_worker(self, arena_id: str) -> None:
        log.info("pairing arena", extra={"arena_id": arena_id, "replica": self.replica})
        # A new owner does not trust what the previous one left half-written: PostgreSQL decides.
        await self.rebuild(arena_id)
        event = asyncio.Event()
        event.set()
        self._wakes[arena_id] = event
        self._workers[arena_id] = asyncio.create_task(self._work(arena_id, event), name=f"arena-{arena_id}")

    async def _stop_worker(self, arena_id: str) -> None:
        self._wakes.pop(arena_id, None)
        for gauge in (self.metrics.leaderboard_size, self.metrics.waiting):
            # Another replica reports this arena now.
            with contextlib.suppress(KeyError):
                gauge.remove(self.metrics.service, arena_id)
        task = self._workers.pop(arena_id, None)
        self._info.pop(arena_id, None)
        self.ratings.forget(arena_id)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _work(self, arena_id: str, event: asyncio.Event) -> None:
        """Pair on every wake, and at least every tick (cooldowns run out without any event, AR-3)."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), self.settings.tick_seconds)
            event.clear()
            try:
                with self.foreground.at_work():
                    await self.pair_once(arena_id)
                    await self._finish_if_closing(arena_id)
            except asyncio.CancelledError:
                raise
            except Exception:
                # Keep the worker alive: the next tick retries from what PostgreSQL and Redis say.
                self.metrics.pass_failures.inc()
                log.exception("pairing pass failed; retrying at the next tick", extra={"arena_id": arena_id})
                await asyncio.sleep(self.settings.tick_seconds)

    async def _finish_if_closing(self, arena_id: str) -> None:
        """Safety net for AR-1's end: finish a closing arena whose last game ended (normally done by the result)."""
        info = self._info.get(arena_id)
        if info is None or self.time_source.now() < info.ends_at:
            return
        async with self.pool.acquire() as connection, connection.transaction():
            done = await finish_if_done(connection, self.outbox, arena_id, self.time_source.now())
        if done:
            await self.hub.publish(arena_id, "finished")

    async def _announce_timer_changes(self) -> None:
        changed, self.lifecycle.changed[:] = list(self.lifecycle.changed), []
        for arena_id, change in changed:
            await self.hub.publish(arena_id, change)
            await self.wake(arena_id)

    async def _listen(self, stop: asyncio.Event) -> None:
        """Wakes published by other replicas (a result handled there, a join served there)."""
        while not stop.is_set():
            pubsub = self.hot.redis.pubsub()
            try:
                await pubsub.subscribe(_WAKE_CHANNEL)
                while not stop.is_set():
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                    if message is None or message.get("type") != "message":
                        continue
                    event = self._wakes.get(message["data"].decode())
                    if event is not None:
                        event.set()
            except (RedisError, OSError) as error:
                log.warning("wake listener failed, resubscribing", extra={"error": repr(error)})
                await asyncio.sleep(0.5)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
