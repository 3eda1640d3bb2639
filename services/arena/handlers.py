"""What the play site tells the arena: first moves (for AR-5 boosts) and finished games (AR-2..AR-6).

A GameFinished of an arena game is scored once (the game row's result is the guard; the
event id is recorded too), and every delivery, first or repeated, then re-applies the
stored outcome to Redis: records, cooldown, and the players back in the queue when they
may play (AR-2). So a replica that crashed after its commit but before its Redis write is
repaired by the redelivery, and a duplicate changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg
from redis.exceptions import RedisError

from arbiter.competition.arena import (
    ArenaGame,
    ArenaPlayerRecord,
    ArenaSeat,
    FinishedGame,
    ScoredResults,
    pairs_players,
    score_results,
)
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.convert import GAME_RESULT, termination_name
from arbiter.kit.db import Connection
from arbiter.kit.events import datetime_of
from arbiter.kit.idempotency import delivery_id, first_deliveries
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from services.arena import store
from services.arena.hot import HotStore
from services.arena.lifecycle import finish_if_done
from services.arena.matchmaker import Matchmaker
from services.arena.watch import WatchHub

log = logging.getLogger(__name__)
CONSUMER = "arena"


@dataclass(frozen=True, slots=True)
class Scored:
    """What one finished game changes in Redis, computed from PostgreSQL in the scoring transaction."""

    arena_id: str
    game_id: str
    records: dict[str, ArenaPlayerRecord]
    cooldown: tuple[str, str, float]
    requeue: dict[str, float]
    closing: bool


class ResultDesk:
    """Consumes game.finished and game.move_made for arena games."""

    def __init__(self, pool: asyncpg.Pool, hot: HotStore, outbox: Outbox, time_source: TimeSource,
                 matchmaker: Matchmaker, hub: WatchHub) -> None:
        self.pool = pool
        self.hot = hot
        self.outbox = outbox
        self.time_source = time_source
        self.matchmaker = matchmaker
        self.hub = hub

    async def on_finished(self, batch: list[ev.GameFinished]) -> str:
        """Score a batch of finished games and requeue their players (AR-2, AR-4, AR-5)."""
        ours = [e for e in batch if e.competition.kind == common.COMPETITION_KIND_ARENA and e.game_id]
        if not ours:
            return "ignored"
        # One event per game: a repeated result in the same batch is the same result.
        by_game = {e.game_id: e for e in ours}
        now = self.time_source.now()
        async with self.pool.acquire() as connection, connection.transaction():
            fresh = await first_deliveries(connection, CONSUMER, [
                delivery_id(e.meta.event_id, e.game_id, events.GAME_FINISHED.name) for e in ours])
            effects = await self._score_batch(connection, by_game, now)
        await self._apply(effects)
        return "handled" if fresh else "duplicate"

    async def _score_batch(
        self, connection: Connection, by_game: dict[str, ev.GameFinished], now: datetime
    ) -> list[Scored]:
        """Set-based: a handful of statements per batch, whatever its size (500 results/s and more)."""
        arenas = {}
        # Share locks in a fixed order: results go together, pairings and the end wait for them.
        for arena_id in sorted({e.competition.id for e in by_game.values()}):
            row = await store.arena(connection, arena_id, "FOR SHARE")
            if row is not None:
                arenas[arena_id] = row
        games = [g for g in await store.games_to_score(connection, list(by_game))
                 if g["arena_id"] in arenas and by_game[g["game_id"]].competition.id == g["arena_id"]]
        unknown = set(by_game) - {g["game_id"] for g in games}
        if unknown:
            log.warning("finished games unknown to the arena service", extra={"game_ids": sorted(unknown)[:20]})
        if not games:
            return []
        rows = await store.seats_to_score(
            connection, sorted({(g["arena_id"], p) for g in games for p in (g["white_id"], g["black_id"])}))
        # Fetch: the results to score, in the order of the games list (AR-4 streaks), and every game
        # now over, also one delivered again (its players are requeued and its cooldown mirrored again).
        game_arena = {g["game_id"]: g["arena_id"] for g in games}
        finished: list[FinishedGame] = []
        terminations: dict[str, str] = {}
        done = []
        for game in games:
            event = by_game[game["game_id"]]
            if game["result"] is not None:
                done.append(game)
                continue
            result = GAME_RESULT.get(event.result)
            if result is None:
                log.warning("finished game without a result", extra={"game_id": game["game_id"]})
                continue
            finished.append(FinishedGame(
                game["game_id"], game["white_id"], game["black_id"], result, _finished_at(event, now),
                white_boost_taken=game["white_boosted"], black_boost_taken=game["black_boosted"],
                white_boost_played=event.white_boosted, black_boost_played=event.black_boosted,
            ))
            terminations[game["game_id"]] = termination_name(event.termination)
            done.append(game)
        pairs = sorted({(g["arena_id"], min(g["white_id"], g["black_id"]), max(g["white_id"], g["black_id"]))
                        for g in done})
        earlier: dict[str, list[ArenaGame]] = {}
        for arena_id, met in await store.meetings_of(connection, pairs):
            earlier.setdefault(arena_id, []).append(met)
        # A player whose game is scored now cannot be in another one (a pairing save refuses players
        # still playing); only a result delivered again may find its players already re-paired.
        again = [g for g in done if g["result"] is not None]
        busy = await store.playing(connection, sorted({(g["arena_id"], p) for g in again
                                                       for p in (g["white_id"], g["black_id"])}))
        # Compute: one arena at a time (AR-2..AR-5).
        outcomes: dict[str, ScoredResults] = {}
        for arena_id in sorted({g["arena_id"] for g in done}):
            arena = arenas[arena_id]
            seated = {p for g in done if g["arena_id"] == arena_id for p in (g["white_id"], g["black_id"])}
            outcomes[arena_id] = score_results(
                [f for f in finished if game_arena[f.game_id] == arena_id],
                {p: ArenaSeat(store.record_of(rows[(arena_id, p)]), rows[(arena_id, p)]["active"]) for p in seated},
                earlier.get(arena_id, ()),
                playing={p for a, p in busy if a == arena_id},
                pairing=pairs_players(arena["state"] == "running", arena["ends_at"], now),
            )
        # Save: the records and the games as scored, in the games list's order (AR-4 streaks).
        if finished:
            changed = sorted({(game_arena[g.game_id], p) for g in finished for p in (g.white, g.black)})
            await store.save_scores(connection, {(a, q): outcomes[a].records[q] for a, q in changed},
                                    [(g.game_id, g.counted(), terminations[g.game_id]) for g in finished])
        effects = []
        for game in done:
            arena = arenas[game["arena_id"]]
            outcome = outcomes[arena["id"]]
            white, black = game["white_id"], game["black_id"]
            # AR-3: after k meetings the pair may meet again 5*k minutes after the last one ended.
            until = outcome.next_meetings[frozenset((white, black))]
            effects.append(Scored(
                arena["id"], game["game_id"], {p: outcome.records[p] for p in (white, black)},
                (white, black, until.timestamp()), {p: now.timestamp() for p in (white, black) if p in outcome.requeue},
                arena["state"] == "closing",
            ))
        return effects

    async def _apply(self, effects: Sequence[Scored]) -> None:
        """Mirror the committed outcomes in Redis, wake the arenas' pairing, tell the watchers; finish closing arenas.

        The end (AR-1) is PostgreSQL's alone: a Redis that does not answer does not hold it back
        (the batch is then delivered again to mirror its outcomes).
        """
        by_arena: dict[str, list[Scored]] = {}
        for effect in effects:
            by_arena.setdefault(effect.arena_id, []).append(effect)
        now = self.time_source.now().timestamp()
        unmirrored: RedisError | OSError | None = None
        try:
            for arena_id, scored in by_arena.items():
                if not await self.hot.scored_many(arena_id, [(e.records, e.cooldown, e.requeue) for e in scored], now):
                    # Redis lost the arena (a flush, a new node): everything comes back from PostgreSQL.
                    await self.matchmaker.rebuild(arena_id, missing=True)
                if any(e.requeue for e in scored):
                    # AR-2: paired as soon as an allowed partner waits; wake before anything slower.
                    await self.matchmaker.wake(arena_id)
            for arena_id, scored in by_arena.items():
                # One change per arena and batch: watchers re-read the board with it.
                await self.hub.publish(arena_id, "result", game_id=scored[0].game_id if len(scored) == 1 else "")
        except (RedisError, OSError) as error:
            unmirrored = error
        for arena_id in {e.arena_id for e in effects if e.closing}:
            async with self.pool.acquire() as connection, connection.transaction():
                done = await finish_if_done(connection, self.outbox, arena_id, self.time_source.now())
            if done and unmirrored is None:
                await self.hub.publish(arena_id, "finished")
        if unmirrored is not None:
            raise unmirrored

    async def on_moves(self, batch: list[ev.MoveMade]) -> str:
        """Record each side's first move: a boost is allowed only before it (AR-5)."""
        # Each side's first move is ply 1 or 2; later plies cannot change "has moved".
        first = [(m.game_id, m.player_id) for m in batch if 0 < m.ply <= 2 and m.game_id and m.player_id]
        if not first:
            return "ignored"
        await self._mark_moved(first)
        return "handled"

    async def _mark_moved(self, moves: Sequence[tuple[str, str]]) -> None:
        # One statement per batch, whatever its size: nearly every first move is another
        # competition's (MoveMade carries no competition) and matches no row. A game's movers are
        # gathered first, as an UPDATE ... FROM applies only one joined row per game.
        async with self.pool.acquire() as connection:
            await connection.execute(
                "UPDATE arena_games g SET white_moved = g.white_moved OR g.white_id = ANY(m.movers),"
                " black_moved = g.black_moved OR g.black_id = ANY(m.movers)"
                " FROM (SELECT id, array_agg(p) AS movers FROM unnest($1::text[], $2::text[]) AS s(id, p)"
                " GROUP BY id) AS m WHERE g.game_id = m.id AND g.result IS NULL",
                [game for game, _ in moves], [player for _, player in moves],
            )


def _finished_at(event: ev.GameFinished, now: datetime) -> datetime:
    """When the game ended; now when the event does not say, or says something no date can be."""
    if not event.HasField("finished_at"):
        return now
    at = datetime_of(event.finished_at)
    if at is None:
        log.warning("finished_at out of range; the arena takes now", extra={"game_id": event.game_id})
        return now
    return at
