"""ArenaService: what players and the play site ask of arenas (A-1..A-3, AR-1..AR-6).

Every refusal changes nothing and says why, with the rule. Changes take the arena's row
lock in share mode (joins, leaves, boosts) or update mode (pairing saves, the end), so a
leave racing a pairing is decided one after the other.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import asyncpg

from arbiter.clocks import boosted_time_control, speed_of
from arbiter.competition.arena import ArenaPlayerRecord, BoostRefusal, BoostRefused, pairs_players, take_boost
from arbiter.competition.creation import ArenaRequest, competition_variant, validate_arena_settings
from arbiter.competition.tournament_flow import check_live_time_control
from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import arena_pb2_grpc
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.actors import registered_player
from arbiter.kit.auth import PLAYERS, READERS, RpcRoles
from arbiter.kit.creators import claim_creator_slot
from arbiter.kit.db import present
from arbiter.kit.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from arbiter.kit.events import timestamp
from arbiter.kit.fields import (
    COMPETITION_ID,
    GAME_ID,
    PLAYER_ID,
    TOKEN,
    check_id,
    check_optional_id,
    display_name,
)
from arbiter.kit.idempotency import create_once
from arbiter.kit.outbox import Outbox
from arbiter.kit.paging import token_bytes
from arbiter.kit.timers import schedule_timer
from arbiter.kit.timesource import TimeSource
from services.arena import store
from services.arena.convert import SPEED_TO_PROTO, arena_message, board_rows
from services.arena.hot import HotStore
from services.arena.lifecycle import END_TIMER, START_TIMER, end_timer_id, start_timer_id
from services.arena.matchmaker import Matchmaker
from services.arena.settings import ArenaSettings
from services.arena.watch import FINAL_CHANGES, WatchHub

DEFAULT_PAGE_SIZE: Final = 20
MAX_PAGE_SIZE: Final = 100
# Rows of the leaderboard sent with every Watch change.
WATCH_TOP: Final = 10
# States in which nobody may join any more.
_OVER = {"closing": "its duration is over (AR-1)", "finished": "it is finished", "cancelled": "it was cancelled"}


def _when(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def _encode_offset(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def _decode_offset(token: str) -> int:
    try:
        kind, _, value = token_bytes(token).decode().partition(":")
        offset = int(value)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidArgument("page_token is not one this service handed out") from None
    # A leaderboard holds at most an arena's players; Redis refuses offsets past 64 bits.
    if kind != "o" or not 0 <= offset <= _MAX_OFFSET:
        raise InvalidArgument("page_token is not one this service handed out")
    return offset


_MAX_OFFSET = 2**31 - 1
# The answer to each boost the rules refuse (AR-5).
_BOOST_REFUSALS: Final = {
    BoostRefusal.NOT_A_PLAYER: PermissionDenied,
    BoostRefusal.GAME_OVER: FailedPrecondition,
    BoostRefusal.ALREADY_BOOSTED: AlreadyExists,
    BoostRefusal.ALREADY_MOVED: FailedPrecondition,
}


# Who may call what (arbiter.kit.auth): players act through the play site; reads are public.
RPC_ROLES: RpcRoles = {
    "CreateArena": PLAYERS,
    "JoinArena": PLAYERS,
    "LeaveArena": PLAYERS,
    "Boost": PLAYERS,
    "GetArena": READERS,
    "GetLeaderboard": READERS,
    "WatchArena": READERS,
}


class ArenaServicer(arena_pb2_grpc.ArenaServiceServicer):
    """The gRPC face of the arena service."""

    def __init__(self, pool: asyncpg.Pool, outbox: Outbox, time_source: TimeSource, hot: HotStore,
                 matchmaker: Matchmaker, hub: WatchHub, settings: ArenaSettings, *, watch_hot: HotStore) -> None:
        self.pool = pool
        self.outbox = outbox
        self.time_source = time_source
        self.hot = hot
        self.matchmaker = matchmaker
        self.hub = hub
        self.settings = settings
        # The leaderboard sent with Watch changes is read on a pool other than the calls' (`hot`).
        self.watch_hot = watch_hot

    # -- creation --------------------------------------------------------------------------------

    async def CreateArena(self, request: ap.CreateArenaRequest, context: Any) -> ap.Arena:
        """Open an arena: registered creators (A-1), one live competition each (A-2), AR-1 schedule."""
        creator = registered_player(request.actor, "create competitions")
        row = await create_once(
            request.request_id, lambda: store.arena_by_request(self.pool, creator, request.request_id),
            lambda: self._create_arena(creator, request))
        return await self._message(row)

    async def _create_arena(self, creator: str, request: ap.CreateArenaRequest) -> Any:
        """Check the settings, then save the arena, its timers and ArenaCreated at once; its row."""
        settings = request.settings
        name = display_name(settings.name, "an arena")
        variant = competition_variant(settings.variant)
        if not settings.HasField("time_control"):
            raise InvalidArgument("settings.time_control is required: a Fischer base + increment (R-6)")
        base, increment = settings.time_control.base_seconds, settings.time_control.increment_seconds
        check_live_time_control(base, increment)
        now = self.time_source.now()
        starts_at = settings.starts_at.ToDatetime(tzinfo=UTC) if settings.HasField("starts_at") else None
        # A-2 is decided by the creator registry below, in the creating transaction.
        schedule = validate_arena_settings(ArenaRequest(
            created_at=now, duration=timedelta(minutes=settings.duration_minutes), starts_at=starts_at,
        ))
        speed = speed_of(base, increment)
        rated = settings.rated if settings.HasField("rated") else True
        stored = ap.ArenaSettings()
        stored.CopyFrom(settings)
        stored.name, stored.variant, stored.rated = name, variant, rated
        stored.starts_at.CopyFrom(timestamp(schedule.starts_at))
        arena_id = f"a_{secrets.token_hex(6)}"
        state = "running" if schedule.starts_at_once else "scheduled"
        async with self.pool.acquire() as connection, connection.transaction():
            await claim_creator_slot(connection, creator, "arena", arena_id)
            await connection.execute(
                """
                INSERT INTO arenas (id, creator_id, request_id, name, variant, base_seconds, increment_seconds,
                    speed, rated, duration_minutes, starts_at, ends_at, state, settings, created_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
                """,
                arena_id, creator, request.request_id or None, name, variant, base, increment, speed.value,
                rated, settings.duration_minutes, schedule.starts_at, schedule.ends_at, state,
                stored.SerializeToString(), now,
            )
            payload = {"arena_id": arena_id}
            if not schedule.starts_at_once:
                await schedule_timer(connection, start_timer_id(arena_id), START_TIMER, schedule.starts_at, payload)
            await schedule_timer(connection, end_timer_id(arena_id), END_TIMER, schedule.ends_at, payload)
            event = ev.ArenaCreated(
                arena_id=arena_id, creator_id=creator, name=name, variant=variant, speed=SPEED_TO_PROTO[speed],
                starts_at=timestamp(schedule.starts_at), ends_at=timestamp(schedule.ends_at), rated=rated,
            )
            event.meta.event_id = f"{arena_id}/created"
            await self.outbox.add(connection, event)
        return await store.arena(self.pool, arena_id)

    async def _message(self, row: Any) -> ap.Arena:
        players, games = await store.counts(self.pool, row["id"])
        return arena_message(row, players, games)

    # -- reading ---------------------------------------------------------------------------------

    async def _arena(self, arena_id: str) -> Any:
        check_id(arena_id, COMPETITION_ID, "arena_id")
        row = await store.arena(self.pool, arena_id)
        if row is None:
            raise NotFound(f"no arena {arena_id}")
        return row

    async def GetArena(self, request: ap.GetArenaRequest, context: Any) -> ap.Arena:
        """One arena, its settings and where it stands."""
        return await self._message(await self._arena(request.arena_id))

    async def GetLeaderboard(self, request: ap.GetLeaderboardRequest, context: Any) -> ap.GetLeaderboardResponse:
        """Points then wins (AR-6), a page at a time, or the page around one player."""
        check_optional_id(request.around_player_id, PLAYER_ID, "around_player_id")
        check_optional_id(request.page.page_token, TOKEN, "page.page_token")
        row = await self._arena(request.arena_id)
        size = request.page.page_size or DEFAULT_PAGE_SIZE
        if size < 0:
            raise InvalidArgument(f"page_size {size} is negative")
        size = min(size, MAX_PAGE_SIZE)
        if request.around_player_id and request.page.page_token:
            raise InvalidArgument("give either around_player_id or page_token, not both")
        await self.matchmaker.ensure_hot(row["id"], self.hot)
        if request.around_player_id:
            position = await self.hot.position(row["id"], request.around_player_id)
            if position is None:
                raise NotFound(f"{request.around_player_id} never joined arena {row['id']}")
            # The player's own line in the middle of the page, their neighbours around it.
            offset = max(0, position - size // 2)
        else:
            offset = _decode_offset(request.page.page_token) if request.page.page_token else 0
        rows = await self.hot.board_page(row["id"], offset, size)
        total = await self.hot.board_size(row["id"])
        response = ap.GetLeaderboardResponse(rows=board_rows(rows), total_players=total)
        if offset + len(rows) < total and rows:
            response.next_page_token = _encode_offset(offset + len(rows))
        return response

    # -- entering and leaving --------------------------------------------------------------------

    async def JoinArena(self, request: ap.JoinArenaRequest, context: Any) -> ap.JoinArenaResponse:
        """Join before or during the arena (AR-2); registered accounts only (A-1)."""
        player = registered_player(request.actor, "play competitions")
        row = await self._arena(request.arena_id)
        self._open(row, "joining")
        now = self.time_source.now()
        await self.matchmaker.ensure_hot(row["id"], self.hot)
        async with self.pool.acquire() as connection, connection.transaction():
            locked = present(await store.arena(connection, row["id"], "FOR SHARE"), row["id"])
            self._open(locked, "joining")
            # A pairing save must see this join either whole or not at all (see store.lock_pairing).
            await store.lock_pairing(connection, row["id"])
            current = await store.player(connection, row["id"], player, "FOR UPDATE")
            if current is not None and current["active"]:
                raise AlreadyExists(f"{player} is already in arena {row['id']}")
            if current is None:
                await connection.execute(
                    "INSERT INTO arena_players (arena_id, player_id, joined_at) VALUES ($1, $2, $3)",
                    row["id"], player, now,
                )
                record = ArenaPlayerRecord()
            else:
                # AR-2: players come back whenever they want, with the points they had.
                await connection.execute(
                    "UPDATE arena_players SET active = true, left_at = NULL WHERE arena_id = $1 AND player_id = $2",
                    row["id"], player,
                )
                record = store.record_of(current)
            playing = await store.running_game_of(connection, row["id"], player) is not None
            players, _ = await store.counts(connection, row["id"])
            may_play = pairs_players(locked["state"] == "running", locked["ends_at"], now) and not playing
            # Written before the commit so that a pass right after it finds the player; a rolled
            # back join leaves a queue entry the pairing save refuses (PostgreSQL says not active).
            await self.hot.join(row["id"], player, record, now.timestamp() if may_play else None)
        await self.hub.publish(row["id"], "joined", player_id=player)
        if may_play:
            await self.matchmaker.wake(row["id"])
        return ap.JoinArenaResponse(players=players)

    def _open(self, row: Any, verb: str) -> None:
        reason = _OVER.get(row["state"])
        if reason is not None:
            raise FailedPrecondition(f"arena {row['id']} ended at {_when(row['ends_at'])}; {verb} closed: {reason}")
        if self.time_source.now() >= row["ends_at"]:
            raise FailedPrecondition(
                f"arena {row['id']} ended at {_when(row['ends_at'])}; {verb} closed: its duration is over (AR-1)"
            )

    async def LeaveArena(self, request: ap.LeaveArenaRequest, context: Any) -> ap.LeaveArenaResponse:
        """Leave at any time (AR-2); a player in a game leaves when it ends, and keeps their points."""
        player = registered_player(request.actor, "play competitions")
        row = await self._arena(request.arena_id)
        if row["state"] in ("finished", "cancelled"):
            raise FailedPrecondition(f"arena {row['id']} is over; there is nothing to leave")
        async with self.pool.acquire() as connection, connection.transaction():
            await store.arena(connection, row["id"], "FOR SHARE")
            await store.lock_pairing(connection, row["id"])
            current = await store.player(connection, row["id"], player, "FOR UPDATE")
            if current is None or not current["active"]:
                raise FailedPrecondition(f"{player} is not in arena {row['id']}")
            await connection.execute(
                "UPDATE arena_players SET active = false, left_at = $3 WHERE arena_id = $1 AND player_id = $2",
                row["id"], player, self.time_source.now(),
            )
            in_game = await store.running_game_of(connection, row["id"], player) is not None
        await self.hot.leave(row["id"], player)
        await self.hub.publish(row["id"], "left", player_id=player)
        return ap.LeaveArenaResponse(leaves_after_game=in_game)

    # -- boost -----------------------------------------------------------------------------------

    async def Boost(self, request: ap.BoostRequest, context: Any) -> ap.BoostResponse:
        """AR-5: before one's own first move, double a win's points for a shorter clock."""
        player = registered_player(request.actor, "play competitions")
        check_id(request.game_id, GAME_ID, "game_id")
        row = await self._arena(request.arena_id)
        async with self.pool.acquire() as connection, connection.transaction():
            game = await connection.fetchrow(
                "SELECT * FROM arena_games WHERE game_id = $1 AND arena_id = $2 FOR UPDATE", request.game_id, row["id"]
            )
            if game is None:
                raise NotFound(f"no game {request.game_id} in arena {row['id']}")
            try:
                side = take_boost(store.boostable_game(game), player).value
            except BoostRefused as refused:
                raise _BOOST_REFUSALS[refused.refusal](str(refused)) from None
            await connection.execute(
                f"UPDATE arena_games SET {side}_boosted = true WHERE game_id = $1", request.game_id
            )
            event = ev.BoostTaken(game_id=request.game_id, arena_id=row["id"], player_id=player,
                                  at=timestamp(self.time_source.now()))
            event.meta.event_id = f"{request.game_id}/boost/{side}"
            await self.outbox.add(connection, event)
        base, increment = boosted_time_control(row["base_seconds"], row["increment_seconds"])
        return ap.BoostResponse(
            time_control=common.FischerControl(base_seconds=int(base), increment_seconds=int(increment)),
            base_ms=round(base * 1000), increment_ms=round(increment * 1000),
        )

    # -- live ------------------------------------------------------------------------------------

    async def WatchArena(self, request: ap.WatchArenaRequest, context: Any) -> AsyncIterator[ap.ArenaChange]:
        """A snapshot, then every change with the top of the leaderboard, until the arena finishes."""
        row = await self._arena(request.arena_id)
        # Subscribe before reading the snapshot, so no change falls between the two.
        subscription = await self.hub.subscribe(row["id"], self.settings.watch_max_seconds, self._complete_changes)
        try:
            snapshot = ap.ArenaChange(change="snapshot")
            await self._fill(row["id"], [snapshot], self.hot)
            yield snapshot
            if snapshot.arena.state in (ap.ARENA_STATE_FINISHED, ap.ARENA_STATE_CANCELLED):
                return
            while (change := await subscription.next()) is not None:
                yield change
                if change.change in FINAL_CHANGES:
                    return
        finally:
            await subscription.close()

    async def _complete_changes(self, arena_id: str, changes: list[ap.ArenaChange]) -> None:
        """The arena and the top of its leaderboard in each change heard, read once for all its streams here."""
        await self._fill(arena_id, changes, self.watch_hot)

    async def _fill(self, arena_id: str, changes: list[ap.ArenaChange], hot: HotStore) -> None:
        arena = await self._message(await store.arena(self.pool, arena_id))
        await self.matchmaker.ensure_hot(arena_id, hot)
        top = board_rows(await hot.board_page(arena_id, 0, WATCH_TOP))
        for change in changes:
            change.arena.CopyFrom(arena)
            change.top.extend(top)
