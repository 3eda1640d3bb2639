"""TournamentService: what players and the play site ask of tournaments (A-1..A-3, T-1..T-6, T-21, T-22, R-2, R-4).

Every refusal changes nothing and says why, with the rule. State changes lock the
tournament's row, so a Join racing the start, or two Joins racing for the last seat,
are decided one after the other.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import json
import math
import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import asyncpg

from arbiter.clocks.speed import speed_of
from arbiter.competition.creation import TournamentRequest, competition_variant, validate_tournament_settings
from arbiter.competition.formats import DEFAULT_THRESHOLD
from arbiter.competition.tournament_flow import (
    check_live_time_control,
    closing_deadline,
    meets_minimum_rating,
    swiss_trf,
)
from arbiter.competition.types import Format
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit.actors import registered_player
from arbiter.kit.auth import PLAYERS, READERS, RpcRoles
from arbiter.kit.creators import claim_creator_slot
from arbiter.kit.db import present
from arbiter.kit.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)
from arbiter.kit.events import timestamp
from arbiter.kit.fields import (
    COMPETITION_ID,
    TOKEN,
    check_id,
    check_optional_id,
    check_secret,
    display_name,
)
from arbiter.kit.idempotency import create_once
from arbiter.kit.outbox import Outbox
from arbiter.kit.paging import token_bytes
from arbiter.kit.ratelimit import RateLimiter
from arbiter.kit.ratings import RatingsClient
from arbiter.kit.timers import schedule_timer
from arbiter.kit.timesource import TimeSource
from arbiter.openings.tables import variant_name
from services.pairing import store
from services.pairing.closing import cancel_tournament, standings_now
from services.pairing.convert import (
    OPENING_MODE,
    OPENING_MODE_TO_PROTO,
    SPEED_TO_PROTO,
    game_record,
    tournament_message,
)
from services.pairing.settings import PairingSettings
from services.pairing.timers import CLOSE_TIMER, START_TIMER, close_timer_id, start_timer_id
from services.pairing.watch import FINAL_CHANGES, WatchHub

DEFAULT_PAGE_SIZE: Final = 20
MAX_PAGE_SIZE: Final = 100
_SCRYPT: Final = {"n": 2**14, "r": 8, "p": 1}


def hash_password(password: str) -> str:
    """A salted scrypt hash; the password itself is never stored (T-5)."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, dklen=32, **_SCRYPT)
    return f"scrypt${_SCRYPT['n']}${_SCRYPT['r']}${_SCRYPT['p']}${salt.hex()}${digest.hex()}"


def password_matches(password: str, stored: str) -> bool:
    """Whether `password` is the one `stored` was made from (constant-time comparison)."""
    try:
        _, n, r, p, salt, digest = stored.split("$")
        candidate = hashlib.scrypt(password.encode(), salt=bytes.fromhex(salt), dklen=32, n=int(n), r=int(r), p=int(p))
    except ValueError:
        return False
    return hmac.compare_digest(candidate.hex(), digest)


def _when(instant: datetime) -> str:
    """An instant as people read it: 2026-12-01T10:00Z."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def _encode_cursor(starts_at: datetime, tournament_id: str) -> str:
    raw = json.dumps({"s": starts_at.isoformat(), "i": tournament_id}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_cursor(token: str) -> tuple[datetime, str]:
    try:
        data = json.loads(token_bytes(token))
        return datetime.fromisoformat(data["s"]), str(data["i"])
    except (ValueError, KeyError, TypeError, binascii.Error, RecursionError):
        raise InvalidArgument("page_token is not one this service handed out") from None


# Who may call what (arbiter.kit.auth): players act through the play site; reads are public.
RPC_ROLES: RpcRoles = {
    "CreateTournament": PLAYERS,
    "JoinTournament": PLAYERS,
    "WithdrawTournament": PLAYERS,
    "CancelTournament": PLAYERS,
    "RevokeInvite": PLAYERS,
    "GetTournament": READERS,
    "GetStandings": READERS,
    "GetPairings": READERS,
    "ListUpcomingTournaments": READERS,
    "WatchTournament": READERS,
    "ExportTrf": READERS,
}


class TournamentServicer(tournament_pb2_grpc.TournamentServiceServicer):
    """The gRPC face of the pairing service."""

    def __init__(self, pool: asyncpg.Pool, outbox: Outbox, time_source: TimeSource, ratings: RatingsClient,
                 hub: WatchHub, settings: PairingSettings, password_attempts: RateLimiter) -> None:
        self.pool = pool
        self.outbox = outbox
        self.time_source = time_source
        self.ratings = ratings
        self.hub = hub
        self.settings = settings
        # T-5: guesses at a private tournament's password, counted per tournament whoever makes them.
        self.password_attempts = password_attempts

    # -- creation --------------------------------------------------------------------------------

    async def CreateTournament(
        self, request: tp.CreateTournamentRequest, context: Any
    ) -> tp.CreateTournamentResponse:
        """Create a tournament if every creation rule allows it (A-1..A-3, T-1, T-3..T-5, R-2, R-4)."""
        creator = registered_player(request.actor, "create competitions")
        row = await create_once(
            request.request_id, lambda: store.tournament_by_request(self.pool, creator, request.request_id),
            lambda: self._create_tournament(creator, request))
        return await self._created(row)

    async def _create_tournament(self, creator: str, request: tp.CreateTournamentRequest) -> Any:
        """Check the settings, then save the tournament, its timers and TournamentCreated at once; its row."""
        settings = request.settings
        name = display_name(settings.name, "a tournament")
        check_secret(settings.password, "settings.password")
        variant = competition_variant(settings.variant)
        kind = settings.time_control.WhichOneof("kind")
        if kind != "fischer":
            raise InvalidArgument(
                "tournaments are live: give a Fischer time control (base + increment); Triple Block "
                "correspondence tournaments are not offered (R-6)"
                if kind == "triple_block" else "settings.time_control is required: a Fischer base + increment (R-6)"
            )
        base, increment = settings.time_control.fischer.base_seconds, settings.time_control.fischer.increment_seconds
        check_live_time_control(base, increment)
        if not settings.HasField("starts_at"):
            raise InvalidArgument("settings.starts_at is required: 5 minutes to 14 days from now (T-4)")
        if settings.duration_minutes <= 0:
            raise InvalidArgument(f"duration_minutes must be positive, not {settings.duration_minutes} (T-15)")
        if settings.opening_mode not in OPENING_MODE:
            raise InvalidArgument(f"unknown opening mode {settings.opening_mode} (O-1..O-9)")
        now = self.time_source.now()
        starts_at = settings.starts_at.ToDatetime(tzinfo=UTC)
        rated_requested = settings.rated if settings.HasField("rated") else True  # rated by default
        effective = validate_tournament_settings(TournamentRequest(
            created_at=now, starts_at=starts_at, duration=timedelta(minutes=settings.duration_minutes),
            capacity=settings.capacity,
            threshold=settings.threshold or DEFAULT_THRESHOLD, minimum_entrants=settings.minimum_entrants or 4,
            private=settings.private, password=settings.password or None, rated=rated_requested,
            minimum_rating=settings.minimum_rating or None, opening_mode=OPENING_MODE[settings.opening_mode],
            thematic_opening=settings.thematic_opening or None, variant=variant,
            home_and_away=settings.home_and_away, extra_round=settings.extra_round,
        ))
        speed = speed_of(base, increment)
        password_hash = await asyncio.to_thread(hash_password, effective.password) if effective.password else None
        invite_token = secrets.token_urlsafe(24) if effective.invite_link else None
        tournament_id = f"t_{secrets.token_hex(6)}"

        stored = tp.TournamentSettings()
        stored.CopyFrom(settings)
        stored.ClearField("password")
        stored.name = name
        stored.variant = variant
        stored.threshold = effective.threshold
        stored.minimum_entrants = effective.minimum_entrants
        stored.rated = effective.rated
        stored.minimum_rating = effective.minimum_rating or 0
        stored.opening_mode = OPENING_MODE_TO_PROTO[effective.opening_mode]
        closes_at = effective.closes_at
        async with self.pool.acquire() as connection, connection.transaction():
            # of two concurrent creates by one person exactly one commits.
            await claim_creator_slot(connection, creator, "tournament", tournament_id)
            await connection.execute(
                """
                INSERT INTO tournaments (id, creator_id, request_id, name, variant, base_seconds,
                    increment_seconds, speed, threshold, capacity, minimum_entrants, starts_at, duration_minutes,
                    closes_at, private, password_hash, invite_token, rated, rated_note, minimum_rating,
                    opening_mode, thematic_opening, home_and_away, extra_round, settings, notes, state, created_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
                    $21, $22, $23, $24, $25, $26, 'scheduled', $27)
                """,
                tournament_id, creator, request.request_id or None, name, variant, base, increment, speed.value,
                effective.threshold, effective.capacity, effective.minimum_entrants, starts_at,
                settings.duration_minutes, closes_at, effective.private, password_hash, invite_token,
                effective.rated, effective.rated_note, effective.minimum_rating, effective.opening_mode.value,
                effective.thematic_opening, effective.home_and_away, effective.extra_round,
                stored.SerializeToString(), list(effective.reasons), now,
            )
            payload = {"tournament_id": tournament_id}
            await schedule_timer(connection, start_timer_id(tournament_id), START_TIMER, starts_at, payload)
            await schedule_timer(connection, close_timer_id(tournament_id), CLOSE_TIMER,
                                 closing_deadline(closes_at), payload)
            event = ev.TournamentCreated(
                tournament_id=tournament_id, creator_id=creator, name=name, variant=variant,
                speed=SPEED_TO_PROTO[speed], starts_at=timestamp(starts_at), rated=effective.rated,
                private=effective.private,
            )
            event.meta.event_id = f"{tournament_id}/created"
            await self.outbox.add(connection, event)
        return await store.tournament(self.pool, tournament_id)

    async def _created(self, row: Any) -> tp.CreateTournamentResponse:
        entrants = await store.entrant_count(self.pool, row["id"])
        return tp.CreateTournamentResponse(tournament=tournament_message(row, entrants),
                                           invite_token=row["invite_token"] or "")

    # -- reading ---------------------------------------------------------------------------------

    async def _tournament(self, tournament_id: str) -> Any:
        check_id(tournament_id, COMPETITION_ID, "tournament_id")
        row = await store.tournament(self.pool, tournament_id)
        if row is None:
            raise NotFound(f"no tournament {tournament_id}")
        return row

    async def GetTournament(
        self, request: tp.GetTournamentRequest, context: Any
    ) -> tp.Tournament:
        """One tournament, its settings (never its password) and where it stands."""
        row = await self._tournament(request.tournament_id)
        return tournament_message(row, await store.entrant_count(self.pool, row["id"]))

    async def GetStandings(
        self, request: tp.GetStandingsRequest, context: Any
    ) -> tp.GetStandingsResponse:
        """Points, BH, SB and wins as T-21 (Swiss) and T-22 (round robin) rank them."""
        row = await self._tournament(request.tournament_id)
        rows, explanations = await standings_now(self.pool, row)
        return tp.GetStandingsResponse(
            tournament_id=row["id"], round=row["current_round"], rows=rows, explanations=explanations,
            final=row["state"] == "finished", format=row["format"] or "",
        )

    async def GetPairings(
        self, request: tp.GetPairingsRequest, context: Any
    ) -> tp.GetPairingsResponse:
        """Every round (or one) with its opening, games, results and bye; the entrants' numbers."""
        row = await self._tournament(request.tournament_id)
        if request.round < 0:
            raise InvalidArgument(f"round {request.round}: rounds are numbered from 1 (0 for all)")
        if request.round > row["current_round"]:
            total = f" of {row['rounds']}" if row["rounds"] else ""
            raise NotFound(
                f"round {request.round} of tournament {row['id']} is not paired; "
                f"{row['current_round']}{total} paired so far"
            )
        rounds = await store.rounds(self.pool, row["id"], request.round)
        games = await store.games(self.pool, row["id"], request.round)
        by_round: dict[int, list[tp.GameRecord]] = {}
        for game in games:
            by_round.setdefault(game["round"], []).append(game_record(game))
        response = tp.GetPairingsResponse()
        for stored in rounds:
            opening = common.Opening()
            opening.ParseFromString(stored["opening"])
            response.rounds.append(tp.RoundPairings(
                round=stored["round"], opening=opening, games=by_round.get(stored["round"], []),
                bye_id=stored["bye_id"] or "", bye_points=stored["bye_points"], engine=stored["engine"],
                notes=stored["notes"],
            ))
        for entrant in await store.entrant_rows(self.pool, row["id"]):
            response.entrants.append(tp.EntrantLine(
                player_id=entrant["player_id"], berger_number=entrant["berger_number"] or 0,
                initial_rank=entrant["initial_rank"] or 0, rating=entrant["rating"] or 0.0,
            ))
        return response

    async def ExportTrf(
        self, request: tp.ExportTrfRequest, context: Any
    ) -> tp.ExportTrfResponse:
        """A Swiss tournament's completed rounds as a TRF file (T-13), as any Dutch-system engine reads it."""
        row = await self._tournament(request.tournament_id)
        if row["format"] is None:
            raise FailedPrecondition(
                f"tournament {row['id']} has not started: its format and entrants' numbers are fixed at the start (T-2)"
            )
        if Format(row["format"]) is not Format.SWISS:
            raise FailedPrecondition(
                f"tournament {row['id']} is a round robin, paired by the Berger tables (T-14); TRF exports a Swiss"
            )
        seats, history, byes, open_rows = await asyncio.gather(
            store.seats(self.pool, row["id"]), store.played_games(self.pool, row["id"]),
            store.byes(self.pool, row["id"]), store.open_game_rows(self.pool, row["id"]),
        )
        # A round still being played is left out: its results are not known yet.
        done = min((r["round"] - 1 for r in open_rows), default=row["current_round"])
        text = swiss_trf(seats, history, byes, done, row["rounds"], row["games_per_pairing"], row["name"])
        return tp.ExportTrfResponse(tournament_id=row["id"], trf=text, rounds=done,
                                    home_and_away=row["games_per_pairing"] == 2)

    async def ListUpcomingTournaments(
        self, request: tp.ListUpcomingTournamentsRequest, context: Any
    ) -> tp.ListUpcomingTournamentsResponse:
        """Public tournaments not started yet, soonest first, a page at a time."""
        size = request.page.page_size or DEFAULT_PAGE_SIZE
        if size < 0:
            raise InvalidArgument(f"page_size {size} is negative")
        size = min(size, MAX_PAGE_SIZE)
        after = _decode_cursor(request.page.page_token) if request.page.page_token else None
        variant = variant_name(request.variant) if request.variant else None
        rows = await store.upcoming(self.pool, self.time_source.now(), after, variant, size + 1)
        response = tp.ListUpcomingTournamentsResponse(
            tournaments=[tournament_message(r, r["entrant_count"]) for r in rows[:size]]
        )
        if len(rows) > size:
            last = rows[size - 1]
            response.next_page_token = _encode_cursor(last["starts_at"], last["id"])
        return response

    # -- entering and leaving --------------------------------------------------------------------

    def _registration_open(self, row: Any, verb: str) -> None:
        """T-6: registration and withdrawal are open until the first round starts; T-4 for the rest."""
        state = row["state"]
        if state == "cancelled":
            raise FailedPrecondition(f"tournament {row['id']} was cancelled: {row['cancel_reason']}")
        if state == "finished":
            raise FailedPrecondition(f"tournament {row['id']} is over")
        if state != "scheduled" or self.time_source.now() >= row["starts_at"]:
            raise FailedPrecondition(
                f"tournament {row['id']} started at {_when(row['starts_at'])}; {verb} closed when round 1 started"
                " (T-6)"
            )

    async def JoinTournament(
        self, request: tp.JoinTournamentRequest, context: Any
    ) -> tp.JoinTournamentResponse:
        """Take a seat: registered accounts only (A-1), before the start (T-6), within capacity (T-3),
        with the minimum rating (R-2) and, when private, the password or invite link (T-5)."""
        player = registered_player(request.actor, "play competitions")
        check_secret(request.password, "password")
        check_optional_id(request.invite_token, TOKEN, "invite_token")
        row = await self._tournament(request.tournament_id)
        self._registration_open(row, "joining")
        if row["private"] and player != row["creator_id"]:
            await self._check_private_entry(row, request.password, request.invite_token)
        if await store.is_entered(self.pool, row["id"], player):
            raise AlreadyExists(f"{player} is already entered in tournament {row['id']}: one seat per player")
        if row["minimum_rating"] is not None:
            rating = await self.ratings.rating(player, row["variant"], SPEED_TO_PROTO[row["speed"]])
            if not meets_minimum_rating(rating, row["minimum_rating"]):
                raise FailedPrecondition(
                    f"{player}'s {row['variant']} {row['speed']} rating is {rating:.0f}, below the minimum "
                    f"{row['minimum_rating']} of tournament {row['id']} (R-2)"
                )
        else:
            rating = None
        async with self.pool.acquire() as connection, connection.transaction():
            locked = present(await store.tournament(connection, row["id"], lock=True), row["id"])
            self._registration_open(locked, "joining")
            if await store.is_entered(connection, row["id"], player):
                raise AlreadyExists(f"{player} is already entered in tournament {row['id']}: one seat per player")
            entrants = await store.entrant_count(connection, row["id"])
            if entrants >= locked["capacity"]:
                raise FailedPrecondition(
                    f"tournament {row['id']} is full: {entrants} of {locked['capacity']} seats taken (T-3)"
                )
            await connection.execute(
                "INSERT INTO entrants (tournament_id, player_id, joined_at, rating) VALUES ($1, $2, $3, $4)",
                row["id"], player, self.time_source.now(), rating,
            )
        await self.hub.publish(row["id"], "joined")
        return tp.JoinTournamentResponse(entrants=entrants + 1)

    async def _check_private_entry(self, row: Any, password: str, invite_token: str) -> None:
        """T-5: the creator's password or the invite link's token."""
        # Bytes: compare_digest refuses str holding anything but ASCII, and a token is the caller's text.
        if invite_token and row["invite_token"] and hmac.compare_digest(invite_token.encode(),
                                                                        row["invite_token"].encode()):
            return
        if password and row["password_hash"]:
            # Taken before the check and given back when it matches: concurrent guesses cannot pass the
            # limit, and people who know the password use up nothing.
            wait_ms = await self.password_attempts.take(row["id"], "password")
            if wait_ms:
                retry = max(1, math.ceil(wait_ms / 1000))
                raise ResourceExhausted(
                    f"too many wrong passwords for private tournament {row['id']}; retry in {retry} s, or join with"
                    " its invite link (T-5)", retry_after_ms=wait_ms)
            if await asyncio.to_thread(password_matches, password, row["password_hash"]):
                await self.password_attempts.give_back(row["id"], "password")
                return
            raise PermissionDenied(f"wrong password for private tournament {row['id']} (T-5)")
        if invite_token:
            raise PermissionDenied(f"that invite link is not the one of private tournament {row['id']} (T-5)")
        ways = "its password or invite link" if row["password_hash"] else "its invite link"
        raise PermissionDenied(f"tournament {row['id']} is private: join with {ways} (T-5)")

    async def WithdrawTournament(
        self, request: tp.WithdrawTournamentRequest, context: Any
    ) -> tp.WithdrawTournamentResponse:
        """Give the seat back, until round 1 starts (T-6); the entrant leaves the standings at once."""
        player = registered_player(request.actor, "play competitions")
        row = await self._tournament(request.tournament_id)
        self._registration_open(row, "withdrawal")
        async with self.pool.acquire() as connection, connection.transaction():
            locked = await store.tournament(connection, row["id"], lock=True)
            self._registration_open(locked, "withdrawal")
            removed = await connection.fetchval(
                "DELETE FROM entrants WHERE tournament_id = $1 AND player_id = $2 RETURNING 1", row["id"], player
            )
            if removed is None:
                raise FailedPrecondition(f"{player} is not entered in tournament {row['id']}")
            entrants = await store.entrant_count(connection, row["id"])
        await self.hub.publish(row["id"], "withdrew")
        return tp.WithdrawTournamentResponse(entrants=entrants)

    async def CancelTournament(
        self, request: tp.CancelTournamentRequest, context: Any
    ) -> tp.CancelTournamentResponse:
        """The creator cancels, until the start (T-4); after it nobody can."""
        player = registered_player(request.actor, "organise competitions")
        row = await self._tournament(request.tournament_id)

        def check(current: Any) -> None:
            if current["creator_id"] != player:
                raise PermissionDenied(
                    f"only the creator of tournament {current['id']} can cancel it, not {player} (T-4)"
                )
            if current["state"] == "cancelled":
                raise FailedPrecondition(f"tournament {current['id']} is already cancelled")
            if current["state"] != "scheduled" or self.time_source.now() >= current["starts_at"]:
                raise FailedPrecondition(
                    f"tournament {current['id']} started at {_when(current['starts_at'])}; after the start nobody "
                    "can cancel it (T-4)"
                )

        check(row)
        async with self.pool.acquire() as connection, connection.transaction():
            locked = await store.tournament(connection, row["id"], lock=True)
            check(locked)
            await cancel_tournament(connection, self.outbox, locked, f"cancelled by its creator {player} (T-4)",
                                    self.time_source.now())
        await self.hub.publish(row["id"], "cancelled")
        fresh = present(await store.tournament(self.pool, row["id"]), row["id"])
        return tp.CancelTournamentResponse(
            tournament=tournament_message(fresh, await store.entrant_count(self.pool, row["id"]))
        )

    async def RevokeInvite(
        self, request: tp.RevokeInviteRequest, context: Any
    ) -> tp.RevokeInviteResponse:
        """The creator kills the private tournament's invite link, optionally issuing a new one (T-5)."""
        player = registered_player(request.actor, "organise competitions")
        row = await self._tournament(request.tournament_id)

        def check(current: Any) -> None:
            if current["creator_id"] != player:
                raise PermissionDenied(
                    f"only the creator of tournament {current['id']} can revoke its invite link, not {player}"
                )
            if not current["private"]:
                raise FailedPrecondition(f"tournament {current['id']} is public: it has no invite link (T-5)")
            if current["state"] != "scheduled":
                raise FailedPrecondition(
                    f"tournament {current['id']} is {current['state']}: nobody can join it any more (T-6)"
                )

        check(row)
        new_token = secrets.token_urlsafe(24) if request.issue_new else None
        async with self.pool.acquire() as connection, connection.transaction():
            check(await store.tournament(connection, row["id"], lock=True))
            await connection.execute("UPDATE tournaments SET invite_token = $2 WHERE id = $1", row["id"], new_token)
        return tp.RevokeInviteResponse(invite_token=new_token or "")

    # -- live ------------------------------------------------------------------------------------

    async def WatchTournament(
        self, request: tp.WatchTournamentRequest, context: Any
    ) -> AsyncIterator[tp.TournamentChange]:
        """A snapshot, then every change until the tournament ends (or the stream's time limit)."""
        row = await self._tournament(request.tournament_id)
        # Subscribe before reading the snapshot, so no change falls between the two.
        subscription = await self.hub.subscribe(row["id"], self.settings.watch_max_seconds, self._complete_changes)
        try:
            row = present(await store.tournament(self.pool, row["id"]), row["id"])
            snapshot = tournament_message(row, await store.entrant_count(self.pool, row["id"]))
            yield tp.TournamentChange(tournament=snapshot, change="snapshot", round=row["current_round"])
            if row["state"] in ("finished", "cancelled"):
                return
            while (change := await subscription.next()) is not None:
                yield change
                if change.change in FINAL_CHANGES:
                    return
        finally:
            await subscription.close()

    async def _complete_changes(self, tournament_id: str, changes: list[tp.TournamentChange]) -> None:
        """The tournament as it stands in each change heard, read once for all its streams on this replica."""
        row = present(await store.tournament(self.pool, tournament_id), tournament_id)
        snapshot = tournament_message(row, await store.entrant_count(self.pool, tournament_id))
        for change in changes:
            change.tournament.CopyFrom(snapshot)
