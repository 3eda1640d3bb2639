"""Every TournamentService RPC with bad input, against the running services: a clear code and message, no change."""

from __future__ import annotations

import base64
import uuid
from datetime import datetime, timedelta

import asyncpg
import grpc
import pytest

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit.events import timestamp
from arbiter.kit.timesource import TimeSource
from tests.support.polling import eventually

INVALID, NOT_FOUND = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND
PRECONDITION, DENIED = grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.PERMISSION_DENIED

# A forged page token: base64 of 5,000 nested JSON lists (under the 64 KB message limit), deeper
# than the JSON parser can recurse.
DEEP_JSON_TOKEN = base64.urlsafe_b64encode(b"[" * 5_000).decode()


def player(prefix: str = "bad") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def actor(player_id: str, kind: int = common.ACCOUNT_KIND_REGISTERED) -> common.Actor:
    return common.Actor(player_id=player_id, kind=kind)


@pytest.fixture(scope="module")
async def service(pairing_system):
    channel = grpc.aio.insecure_channel(pairing_system.services["pairing"].grpc_address)
    db = await asyncpg.create_pool(pairing_system.database_url, min_size=1, max_size=2,
                                   server_settings={"search_path": "pairing"})
    clock = TimeSource(pairing_system.time_scale, datetime.fromisoformat(pairing_system.time_origin))
    yield tournament_pb2_grpc.TournamentServiceStub(channel), db, clock
    await db.close()
    await channel.close()


def good_settings(clock: TimeSource, **overrides) -> tp.TournamentSettings:
    values = {
        "name": "Valid", "variant": "international", "capacity": 8, "duration_minutes": 60,
        "time_control": common.TimeControl(fischer=common.FischerControl(base_seconds=60, increment_seconds=1)),
        # An hour (30 real seconds): the tournaments made here must not start while the cases run.
        "starts_at": timestamp(clock.now() + timedelta(minutes=60)),
    }
    values.update(overrides)
    return tp.TournamentSettings(**values)


async def fingerprint(db: asyncpg.Pool, creators: list[str], tournament_ids: list[str]) -> tuple:
    """Everything a refused call could have touched."""
    tournaments = await db.fetch(
        "SELECT id, state, rated, settings, cancel_reason, current_round FROM tournaments"
        " WHERE creator_id = ANY($1::text[]) OR id = ANY($2::text[]) ORDER BY id", creators, tournament_ids)
    entrants = await db.fetch(
        "SELECT tournament_id, player_id FROM entrants WHERE tournament_id = ANY($1::text[])"
        " ORDER BY tournament_id, player_id", tournament_ids)
    slots = await db.fetch(
        "SELECT creator_id, competition_id FROM registry.live_competitions WHERE creator_id = ANY($1::text[])"
        " ORDER BY creator_id", creators)
    return tuple(map(tuple, tournaments)), tuple(map(tuple, entrants)), tuple(map(tuple, slots))


async def test_every_rpc_refuses_bad_input_clearly_and_changes_nothing(service) -> None:
    stub, db, clock = service
    creator, stranger, entrant = player("creator"), player("stranger"), player("entrant")
    open_one = (await stub.CreateTournament(tp.CreateTournamentRequest(
        actor=actor(creator), settings=good_settings(clock, private=True, password="pw")))).tournament
    await stub.JoinTournament(tp.JoinTournamentRequest(actor=actor(entrant), tournament_id=open_one.id, password="pw"))
    other_creator = player("creator")
    rated_one = (await stub.CreateTournament(tp.CreateTournamentRequest(
        actor=actor(other_creator), settings=good_settings(clock, minimum_rating=1600)))).tournament
    creators, ids = [creator, other_creator, stranger], [open_one.id, rated_one.id]
    now = clock.now()

    def create(who: str | None = None, kind: int = common.ACCOUNT_KIND_REGISTERED, **overrides):
        # A fresh creator per call: one person's 20-call burst limit would refuse the later cases
        # before their checks; each creator joins the fingerprint, so nothing created goes unseen.
        if who is None:
            who = player("stranger")
            creators.append(who)
        return stub.CreateTournament(tp.CreateTournamentRequest(actor=actor(who, kind),
                                                                settings=good_settings(clock, **overrides)))

    cases = [
        # (what, the call, code, words the message must contain); calls start when made, hence the lambdas
        ("unknown tournament", lambda: stub.GetTournament(tp.GetTournamentRequest(tournament_id="t_nope")), NOT_FOUND,
         ["t_nope"]),
        ("empty id", lambda: stub.GetTournament(tp.GetTournamentRequest()), INVALID, ["tournament_id"]),
        ("join unknown", lambda: stub.JoinTournament(tp.JoinTournamentRequest(actor=actor(stranger),
                                                                             tournament_id="t_x")),
         NOT_FOUND, ["t_x"]),
        ("withdraw unknown", lambda: stub.WithdrawTournament(tp.WithdrawTournamentRequest(actor=actor(entrant),
                                                                                 tournament_id="t_x")),
         NOT_FOUND, ["t_x"]),
        ("cancel unknown", lambda: stub.CancelTournament(tp.CancelTournamentRequest(actor=actor(creator),
                                                                           tournament_id="t_x")), NOT_FOUND, []),
        ("standings unknown", lambda: stub.GetStandings(tp.GetStandingsRequest(tournament_id="t_x")), NOT_FOUND, []),
        ("pairings unknown", lambda: stub.GetPairings(tp.GetPairingsRequest(tournament_id="t_x")), NOT_FOUND, []),
        ("threshold 6", lambda: create(threshold=6), INVALID, ["threshold 6", "T-1"]),
        ("threshold 21", lambda: create(threshold=21), INVALID, ["T-1"]),
        ("capacity 3", lambda: create(capacity=3), INVALID, ["capacity 3", "T-3"]),
        ("capacity 201", lambda: create(capacity=201), INVALID, ["T-3"]),
        ("minimum above capacity", lambda: create(minimum_entrants=9), INVALID, ["minimum 9", "T-3"]),
        ("minimum below 4", lambda: create(minimum_entrants=3), INVALID, ["T-3"]),
        ("minimum rating off-step", lambda: create(minimum_rating=1050), INVALID, ["1050", "R-2"]),
        ("minimum rating too high", lambda: create(minimum_rating=2100), INVALID, ["R-2"]),
        ("minimum rating when friendly", lambda: create(rated=False, minimum_rating=1200), INVALID,
         ["friendly", "R-2"]),
        ("start in 4 minutes", lambda: create(starts_at=timestamp(now + timedelta(minutes=4))), INVALID,
         ["5 minutes and 14 days", "T-4"]),
        ("start in 15 days", lambda: create(starts_at=timestamp(now + timedelta(days=15))), INVALID, ["T-4"]),
        ("start in the past", lambda: create(starts_at=timestamp(now - timedelta(hours=1))), INVALID, ["T-4"]),
        ("no start", lambda: stub.CreateTournament(tp.CreateTournamentRequest(
            actor=actor(stranger), settings=tp.TournamentSettings(
                name="x", variant="international", capacity=8, duration_minutes=60,
                time_control=common.TimeControl(fischer=common.FischerControl(base_seconds=60))))), INVALID,
         ["starts_at", "T-4"]),
        ("no duration", lambda: create(duration_minutes=0), INVALID, ["duration", "T-15"]),
        ("triple block", lambda: create(time_control=common.TimeControl(triple_block=common.TripleBlockControl(
            increment_days=1, bank_days=50))), INVALID, ["Triple Block"]),
        ("negative base", lambda: create(time_control=common.TimeControl(fischer=common.FischerControl(
            base_seconds=-5, increment_seconds=1))), INVALID, ["R-6"]),
        ("unknown variant", lambda: create(variant="chess"), INVALID, ["chess"]),
        ("table without a table", lambda: create(opening_mode=common.OPENING_MODE_TABLE_UP_TO_1), INVALID,
         ["international", "italian and english"]),
        ("thematic without opening", lambda: create(variant="italian", opening_mode=common.OPENING_MODE_THEMATIC),
         INVALID, ["O-9"]),
        ("thematic 175", lambda: create(variant="italian", opening_mode=common.OPENING_MODE_THEMATIC,
                                thematic_opening=175), INVALID, ["175", "O-9"]),
        ("password on a public one", lambda: create(password="pw"), INVALID, ["private", "T-5"]),
        ("no name", lambda: create(name="  "), INVALID, ["name"]),
        ("guest creator", lambda: create(kind=common.ACCOUNT_KIND_GUEST), DENIED, ["guest", "A-1"]),
        ("bot creator", lambda: create(kind=common.ACCOUNT_KIND_BOT), DENIED, ["bot", "A-1"]),
        ("no account kind", lambda: create(kind=common.ACCOUNT_KIND_UNSPECIFIED), INVALID, ["actor.kind"]),
        ("second live competition", lambda: create(who=creator), PRECONDITION, [creator, open_one.id, "A-2"]),
        ("wrong password", lambda: stub.JoinTournament(tp.JoinTournamentRequest(actor=actor(stranger),
                                                                       tournament_id=open_one.id, password="no")),
         DENIED, ["wrong password", "T-5"]),
        ("no credentials", lambda: stub.JoinTournament(tp.JoinTournamentRequest(actor=actor(stranger),
                                                                       tournament_id=open_one.id)),
         DENIED, ["private", "T-5"]),
        ("non-ASCII invite link", lambda: stub.JoinTournament(tp.JoinTournamentRequest(
            actor=actor(stranger), tournament_id=open_one.id, invite_token="é-lien")), DENIED, ["T-5"]),
        ("guest joins", lambda: stub.JoinTournament(tp.JoinTournamentRequest(
            actor=actor(stranger, common.ACCOUNT_KIND_GUEST), tournament_id=rated_one.id)), DENIED, ["A-1"]),
        ("below the minimum rating", lambda: stub.JoinTournament(tp.JoinTournamentRequest(actor=actor(stranger),
                                                                                 tournament_id=rated_one.id)),
         PRECONDITION, ["1500", "1600", "R-2"]),
        ("second seat", lambda: stub.JoinTournament(tp.JoinTournamentRequest(
            actor=actor(entrant), tournament_id=open_one.id, password="pw")),
         grpc.StatusCode.ALREADY_EXISTS, ["one seat"]),
        ("withdraw without a seat", lambda: stub.WithdrawTournament(tp.WithdrawTournamentRequest(
            actor=actor(stranger), tournament_id=open_one.id)), PRECONDITION, ["not entered"]),
        ("non-creator cancel", lambda: stub.CancelTournament(tp.CancelTournamentRequest(actor=actor(entrant),
                                                                               tournament_id=open_one.id)),
         DENIED, ["only the creator", "T-4"]),
        ("negative round", lambda: stub.GetPairings(tp.GetPairingsRequest(tournament_id=open_one.id, round=-1)),
         INVALID, ["round -1"]),
        ("round not paired", lambda: stub.GetPairings(tp.GetPairingsRequest(tournament_id=open_one.id, round=3)),
         NOT_FOUND, ["round 3"]),
        ("negative page size", lambda: stub.ListUpcomingTournaments(tp.ListUpcomingTournamentsRequest(
            page=common.PageRequest(page_size=-1))), INVALID, ["page_size"]),
        ("forged page token", lambda: stub.ListUpcomingTournaments(tp.ListUpcomingTournamentsRequest(
            page=common.PageRequest(page_token="eyJ4IjogMX0="))), INVALID, ["page_token"]),
        ("page token of deep JSON", lambda: stub.ListUpcomingTournaments(tp.ListUpcomingTournamentsRequest(
            page=common.PageRequest(page_token=DEEP_JSON_TOKEN))), INVALID, ["page_token"]),
        ("unknown variant filter",
         lambda: stub.ListUpcomingTournaments(tp.ListUpcomingTournamentsRequest(variant="go")), INVALID, ["go"]),
    ]
    for what, call, code, words in cases:
        before = await fingerprint(db, creators, ids)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await call()
        assert info.value.code() == code, f"{what}: {info.value.code()} {info.value.details()}"
        for word in words:
            assert word in info.value.details(), f"{what}: {info.value.details()!r} lacks {word!r}"
        assert await fingerprint(db, creators, ids) == before, f"{what} changed something"

    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for _ in stub.WatchTournament(tp.WatchTournamentRequest(tournament_id="t_nope")):
            pass
    assert info.value.code() == NOT_FOUND


async def test_after_the_start_nobody_joins_leaves_or_cancels(service) -> None:
    """T-6 and T-4, against a tournament that really started."""
    stub, db, clock = service
    creator, entrants = player("creator"), [player("early") for _ in range(4)]
    t = (await stub.CreateTournament(tp.CreateTournamentRequest(actor=actor(creator), settings=good_settings(
        clock, starts_at=timestamp(clock.now() + timedelta(minutes=7)), duration_minutes=1)))).tournament
    for p in entrants:
        await stub.JoinTournament(tp.JoinTournamentRequest(actor=actor(p), tournament_id=t.id))
    await eventually(lambda: stub.GetTournament(tp.GetTournamentRequest(tournament_id=t.id)), "the tournament started",
                     until=lambda started: started.state != tp.TOURNAMENT_STATE_SCHEDULED)
    starts = t.settings.starts_at.ToDatetime().strftime("%Y-%m-%dT%H:%MZ")
    for call, code, words in (
        (lambda: stub.JoinTournament(tp.JoinTournamentRequest(actor=actor(player()), tournament_id=t.id)), PRECONDITION,
         [t.id, f"started at {starts}", "joining closed when round 1 started", "T-6"]),
        (lambda: stub.WithdrawTournament(tp.WithdrawTournamentRequest(actor=actor(entrants[0]), tournament_id=t.id)),
         PRECONDITION, ["withdrawal closed", "T-6"]),
        (lambda: stub.CancelTournament(tp.CancelTournamentRequest(actor=actor(creator), tournament_id=t.id)),
         PRECONDITION, ["nobody can cancel", "T-4"]),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await call()
        assert info.value.code() == code and all(w in info.value.details() for w in words), info.value.details()
    seated = await db.fetch("SELECT player_id FROM entrants WHERE tournament_id = $1 ORDER BY player_id", t.id)
    assert [r["player_id"] for r in seated] == sorted(entrants)
    final = await stub.GetTournament(tp.GetTournamentRequest(tournament_id=t.id))
    assert final.state != tp.TOURNAMENT_STATE_CANCELLED
