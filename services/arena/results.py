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

from arbiter.competition.arena import ArenaPlayerRecord, next_allowed_meeting, score_game
from arbiter.competition.types import Side
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.convert import termination_name
from arbiter.kit.events import datetime_of
from arbiter.kit.idempotency import delivery_id, first_deliveries
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from services.arena import store
from services.arena.convert import RESULT
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

    def __init__(self, pool: asyncpg.Pool, hot: HotStore, outbox: Outbox, clock: TimeSource,
                 matchmaker: Matchmaker, hub: WatchHub) -> None:
        self.pool = pool
        self.hot = hot
        self.outbox = outbox
        self.clock = clock
        self.matchmaker = matchmaker
        self.hub = hub

    async def on_finished(self, batch: list[ev.GameFinished]) -> str:
        """Score a batch of finished games and requeue their players (AR-2, AR-4, AR-5)."""
        ours = [e for e in batch if e.competition.kind == common.COMPETITION_KIND_ARENA and e.game_id]
        if not ours:
            return "ignored"
        # One event per game: a repeated result in the same batch is the same result.
        by_game = {e.game_id: e for e in ours}
        now = self.clock.now()
        async with self.pool.acquire() as connection, connection.transaction():
            fresh = await first_deliveries(connection, CONSUMER, [
                delivery_id(e.meta.event_id, e.game_id, events.GAME_FINISHED.name) for e in ours])
            effects = await self._score_batch(connection, by_game, now)
        await self._apply(effects)
        return "handled" if fresh else "duplicate"

    async def _score_batch(
        self, connection: asyncpg.Connection, by_game: dict[str, ev.GameFinished], now: datetime
    ) -> list[Scored]:
        """Set-based: a handful of statements per batch, whatever its size (500 results/s and more)."""
        arenas = {}
        # Share locks in a fixed order: results go together, pairings and the end wait for them.
        for arena_id in sorted({e.competition.id for e in by_game.values()}):
            row = await store.arena(connection, arena_id, "FOR SHARE")
            if row is not None:
                arenas[arena_id] = row
        games = await connection.fetch(
            "SELECT * FROM arena_games WHERE game_id = ANY($1::text[]) ORDER BY game_id FOR UPDATE", list(by_game)
        )
        games = [g for g in games if g["arena_id"] in arenas and by_game[g["game_id"]].competition.id == g["arena_id"]]
        unknown = set(by_game) - {g["game_id"] for g in games}
        if unknown:
            log.warning("finished games unknown to the arena service", extra={"game_ids": sorted(unknown)[:20]})
        if not games:
            return []
        seats = sorted({(g["arena_id"], p) for g in games for p in (g["white_id"], g["black_id"])})
        rows = {
            (r["arena_id"], r["player_id"]): r for r in await connection.fetch(
                "SELECT p.* FROM arena_players p JOIN unnest($1::text[], $2::text[]) AS s(a, q)"
                " ON p.arena_id = s.a AND p.player_id = s.q ORDER BY p.arena_id, p.player_id FOR UPDATE OF p",
                [a for a, _ in seats], [q for _, q in seats],
            )
        }
        records = {seat: store.record_of(row) for seat, row in rows.items()}
        scored_games: list[tuple[str, str, str, datetime, bool, bool]] = []
        finished_at: dict[str, datetime] = {}
        for game in games:
            event = by_game[game["game_id"]]
            if game["result"] is not None:
                finished_at[game["game_id"]] = game["finished_at"]
                continue
            result = RESULT.get(event.result)
            if result is None:
                log.warning("finished game without a result", extra={"game_id": game["game_id"]})
                continue
            at = _finished_at(event, now)
            finished_at[game["game_id"]] = at
            # AR-5: a boost doubles a win when the arena accepted it (the Boost call) and the game was
            # played with it: the clock applied its cost, which the play site's GameFinished reports.
            # Either alone is not enough: the play site cannot grant one, nor the arena one nobody paid.
            white_boosted = game["white_boosted"] and event.white_boosted
            black_boosted = game["black_boosted"] and event.black_boosted
            for side, boosted in ((Side.WHITE, white_boosted), (Side.BLACK, black_boosted)):
                seat = (game["arena_id"], game["white_id"] if side is Side.WHITE else game["black_id"])
                _, records[seat] = score_game(records[seat], result.outcome_for(side), boosted)
            scored_games.append((game["game_id"], result.value, termination_name(event.termination), at,
                                 white_boosted, black_boosted))
        if scored_games:
            scored_ids = {row[0] for row in scored_games}
            changed = sorted({(g["arena_id"], p) for g in games for p in (g["white_id"], g["black_id"])
                              if g["game_id"] in scored_ids})
            # Records and games in one statement (one round trip per batch). Scoring order (AR-4
            # streaks) is the order of the games list; a player is in one game of it at most.
            await connection.execute(
                "WITH records AS (UPDATE arena_players p SET points = s.points, wins = s.wins, draws = s.draws,"
                " losses = s.losses, streak = s.streak FROM unnest($1::text[], $2::text[], $3::int[], $4::int[],"
                " $5::int[], $6::int[], $7::int[]) AS s(a, q, points, wins, draws, losses, streak)"
                " WHERE p.arena_id = s.a AND p.player_id = s.q)"
                " UPDATE arena_games g SET result = s.result, termination = s.termination, finished_at = s.at,"
                " white_boosted = s.wb, black_boosted = s.bb, scored_seq = nextval('arena_scoring_order')"
                " FROM unnest($8::text[], $9::text[], $10::text[], $11::timestamptz[], $12::bool[], $13::bool[])"
                " AS s(id, result, termination, at, wb, bb)"
                " WHERE g.game_id = s.id",
                [a for a, _ in changed], [q for _, q in changed], *(
                    [getattr(records[seat], field) for seat in changed]
                    for field in ("points", "wins", "draws", "losses", "streak")
                ),
                *([row[i] for row in scored_games] for i in range(6)),
            )
        done = [g for g in games if g["game_id"] in finished_at]
        pairs = sorted({(g["arena_id"], min(g["white_id"], g["black_id"]), max(g["white_id"], g["black_id"]))
                        for g in done})
        met = {
            (r["a"], r["x"], r["y"]): (r["k"], r["last"]) for r in await connection.fetch(
                "SELECT s.a, s.x, s.y, count(*) AS k, max(g.finished_at) AS last"
                " FROM unnest($1::text[], $2::text[], $3::text[]) AS s(a, x, y)"
                " JOIN arena_games g ON g.arena_id = s.a AND g.result IS NOT NULL"
                " AND least(g.white_id, g.black_id) = s.x AND greatest(g.white_id, g.black_id) = s.y"
                " GROUP BY s.a, s.x, s.y",
                [p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs],
            )
        }
        # A player whose game is scored now cannot be in another one (a pairing save refuses players
        # still playing); only a result delivered again may find its players already re-paired.
        again = [g for g in done if g["result"] is not None]
        busy: set[tuple[str, str]] = set()
        if again:
            busy = {
                (r["arena_id"], p) for r in await connection.fetch(
                    "SELECT arena_id, white_id, black_id FROM arena_games WHERE result IS NULL"
                    " AND arena_id = ANY($1::text[]) AND (white_id = ANY($2::text[]) OR black_id = ANY($2::text[]))",
                    sorted({g["arena_id"] for g in again}),
                    sorted({p for g in again for p in (g["white_id"], g["black_id"])}),
                ) for p in (r["white_id"], r["black_id"])
            }
        effects = []
        for game in done:
            arena = arenas[game["arena_id"]]
            white, black = game["white_id"], game["black_id"]
            k, last = met[(arena["id"], min(white, black), max(white, black))]
            # AR-3: after k meetings the pair may meet again 5*k minutes after the last one ended.
            until = next_allowed_meeting(k, last)
            requeue: dict[str, float] = {}
            if arena["state"] == "running" and now < arena["ends_at"]:
                # AR-2: back in the queue at once, unless they left (a leave during a game takes effect now).
                requeue = {p: now.timestamp() for p in (white, black)
                           if rows[(arena["id"], p)]["active"] and (arena["id"], p) not in busy}
            effects.append(Scored(
                arena["id"], game["game_id"], {p: records[(arena["id"], p)] for p in (white, black)},
                (white, black, until.timestamp()), requeue, arena["state"] == "closing",
            ))
        return effects

    async def _apply(self, effects: Sequence[Scored]) -> None:
        """Mirror the committed outcomes in Redis, wake the arenas' pairing, tell the watchers."""
        by_arena: dict[str, list[Scored]] = {}
        for effect in effects:
            by_arena.setdefault(effect.arena_id, []).append(effect)
        now = self.clock.now().timestamp()
        for arena_id, scored in by_arena.items():
            if not await self.hot.scored_many(arena_id, [(e.records, e.cooldown, e.requeue) for e in scored], now):
                # Redis lost the arena (a flush, a new node): everything comes back from PostgreSQL.
                await self.matchmaker.rebuild(arena_id)
            if any(e.requeue for e in scored):
                # AR-2: paired as soon as an allowed partner waits; wake before anything slower.
                await self.matchmaker.wake(arena_id)
        for arena_id, scored in by_arena.items():
            # One change per arena and batch: watchers re-read the board with it.
            await self.hub.publish(arena_id, "result", game_id=scored[0].game_id if len(scored) == 1 else "")
        for arena_id in {e.arena_id for e in effects if e.closing}:
            async with self.pool.acquire() as connection, connection.transaction():
                done = await finish_if_done(connection, self.outbox, arena_id, self.clock.now())
            if done:
                await self.hub.publish(arena_id, "finished")

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
