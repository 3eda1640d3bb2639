"""An arena's start and end (AR-1): stored timers, then final standings and ArenaFinished."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from datetime import datetime

from redis.exceptions import RedisError

from arbiter.competition.arena import recompute_leaderboard
from arbiter.kit.creators import release_creator_slot
from arbiter.kit.db import Connection
from arbiter.kit.outbox import Outbox
from arbiter.kit.timers import Timer
from arbiter.kit.timesource import TimeSource
from services.arena import store
from services.arena.convert import finished_event
from services.arena.hot import HotStore

log = logging.getLogger(__name__)
START_TIMER = "arena-start"
END_TIMER = "arena-end"


def start_timer_id(arena_id: str) -> str:
    """The stored timer that starts a scheduled arena."""
    return f"{arena_id}/start"


def end_timer_id(arena_id: str) -> str:
    """The stored timer that ends pairing when the duration is over (AR-1)."""
    return f"{arena_id}/end"


async def finish_if_done(connection: Connection, outbox: Outbox, arena_id: str, now: datetime) -> bool:
    """In a transaction: if the arena is closing and no game runs, final standings and ArenaFinished.

    Takes the arena's row lock, so of several results arriving together exactly one finishes it.
    """
    arena = await store.arena(connection, arena_id, "FOR UPDATE")
    if arena is None or arena["state"] != "closing":
        return False
    if await store.running_games(connection, arena_id):
        # AR-1: games already running at the end finish and count.
        return False
    players = await store.players(connection, arena_id)
    games = await store.games(connection, arena_id)
    standings = recompute_leaderboard(store.finished_games_in_scoring_order(games),
                                      [p["player_id"] for p in players])
    await connection.execute("UPDATE arenas SET state = 'finished', finished_at = $2 WHERE id = $1", arena_id, now)
    # Half the broker's limit leaves room for the meta stamped next and the record's framing.
    event = finished_event(arena_id, standings, now, outbox.max_message_bytes // 2)
    event.meta.event_id = f"{arena_id}/finished"
    await outbox.add(connection, event)
    # the creator may open another competition.
    await release_creator_slot(connection, arena["creator_id"], arena_id)
    return True


class Lifecycle:
    """Timer handlers: the start (scheduled arenas) and the end of pairing (AR-1)."""

    def __init__(self, outbox: Outbox, hot: HotStore, time_source: TimeSource) -> None:
        self.outbox = outbox
        self.hot = hot
        self.time_source = time_source
        # Arenas whose state changed in a timer's transaction: the composition root wakes them after.
        self.changed: list[tuple[str, str]] = []

    async def on_timer(self, connection: Connection, timer: Timer) -> None:
        """Run one start or end timer inside the poller's transaction."""
        arena_id = timer.payload["arena_id"]
        arena = await store.arena(connection, arena_id, "FOR UPDATE")
        if arena is None:
            return
        if timer.kind == START_TIMER:
            if arena["state"] == "scheduled":
                await connection.execute("UPDATE arenas SET state = 'running' WHERE id = $1", arena_id)
                # The next reader rebuilds from PostgreSQL, which then queues every present player (AR-2).
                # The replica that starts pairing it rebuilds it too: a Redis that does not answer now
                # does not hold the start back.
                await _unless_redis_fails(self.hot.invalidate(arena_id), arena_id, "start")
                self.changed.append((arena_id, "started"))
            return
        if arena["state"] in ("scheduled", "running"):
            # AR-1: the duration is over; no new pairings, running games finish and count. Nobody is
            # paired once the end has passed, whatever the queue holds: Redis does not hold the end back.
            await connection.execute("UPDATE arenas SET state = 'closing' WHERE id = $1", arena_id)
            await _unless_redis_fails(self.hot.clear_queue(arena_id), arena_id, "end")
            self.changed.append((arena_id, "closing"))
        if await finish_if_done(connection, self.outbox, arena_id, self.time_source.now()):
            self.changed.append((arena_id, "finished"))


async def _unless_redis_fails(change: Awaitable[None], arena_id: str, timer: str) -> None:
    """Make a change to the arena's Redis keys that its timer does not depend on; a failure is logged."""
    try:
        await change
    except (RedisError, OSError) as error:
        log.warning("arena timer went on without its redis change", extra={"arena_id": arena_id, "timer": timer,
                                                                          "error": repr(error)})
