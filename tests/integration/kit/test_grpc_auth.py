"""Access: tokens are required and carry a role; every RPC refuses the roles it does not name.

Against the five real services: without a valid token UNAUTHENTICATED, with a token whose role an
RPC does not accept PERMISSION_DENIED, for every RPC of every service and every such role, and
nothing in PostgreSQL changes; the same requests in an accepted role do change it.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import grpc
import pytest
from google.protobuf import descriptor_pool, message_factory
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import clock_pb2 as cp
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import openings_pb2 as op
from arbiter.contracts import openings_pb2_grpc, tournament_pb2_grpc
from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit.auth import Role, ServiceKey, TokenSigner, mint_token, parse_keys
from arbiter.kit.events import timestamp
from arbiter.kit.grpcclient import open_channel
from services.arena.servicer import RPC_ROLES as ARENA_ROLES
from services.clock.servicer import RPC_ROLES as CLOCK_ROLES
from services.openings.servicer import RPC_ROLES as OPENINGS_ROLES
from services.pairing.servicer import RPC_ROLES as PAIRING_ROLES
from services.rating.servicer import RPC_ROLES as RATING_ROLES

SERVICES_KEY = "services:services-secret-0123456789:arena+clock+openings+pairing+rating"
OLD_PLAYSITE = "rot1:old-secret-0123456789:play-site"
NEW_PLAYSITE = "rot2:new-secret-0123456789:play-site"
# Signs for every role: lets the test speak as each one.
PROBE_KEY = "probe:probe-secret-0123456789:" + "+".join(role.value for role in Role)

# service name -> (full gRPC service name, its table of roles)
SERVICES = {
    "pairing": ("arbiter.contracts.TournamentService", PAIRING_ROLES),
    "clock": ("arbiter.contracts.ClockService", CLOCK_ROLES),
    "arena": ("arbiter.contracts.ArenaService", ARENA_ROLES),
    "rating": ("arbiter.contracts.RatingService", RATING_ROLES),
    "openings": ("arbiter.contracts.OpeningService", OPENINGS_ROLES),
}
SCHEMAS = ("pairing", "clock", "arena", "rating", "openings", "registry")


def _key(text: str) -> ServiceKey:
    return next(iter(parse_keys(text).values()))


@pytest.fixture(scope="module")
def guarded_system(infra_env, tmp_path_factory):
    """The five services requiring tokens of the services', two play-site keys (a rotation) and the probe's key."""
    import os

    from arbiter_tools.chaos import commit_at_ends
    from arbiter_tools.devstack.stack import SERVICE_NAMES, SystemStack

    stack = SystemStack(
        tmp_path_factory.mktemp("guarded"), free_ports=True, environ={**os.environ, **infra_env},
        extra_env={"AUTH_KEYS": ",".join((SERVICES_KEY, OLD_PLAYSITE, NEW_PLAYSITE, PROBE_KEY)),
                   "AUTH_SIGNING_KEY": SERVICES_KEY, "KAFKA_GROUP_PREFIX": f"auth-{uuid.uuid4().hex[:6]}-"},
        say=lambda _line: None,
    )
    try:
        stack.start_infrastructure()
        # Its consumers read only what comes after this: the session broker's history (other tests'
        # games, their poison records) would otherwise change its tables while the test compares them.
        for groups in stack.consumer_groups().values():
            for group, topics in groups.items():
                asyncio.run(commit_at_ends(stack.kafka_bootstrap, group, topics))
        stack.start_services()
        stack.wait_serving(timeout=90, names=SERVICE_NAMES)
        yield stack
    finally:
        stack.stop()


def _bearer(role: Role, caller: str = "probe") -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {mint_token(_key(PROBE_KEY), role, caller, time.time() + 600)}"),)


async def test_calls_need_a_valid_token_and_refusals_are_counted(guarded_system) -> None:
    address = guarded_system.services["openings"].grpc_address
    request = op.GetOpeningRequest(variant="italian", number=1)
    async with grpc.aio.insecure_channel(address) as bare:
        stub = openings_pb2_grpc.OpeningServiceStub(bare)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.GetOpening(request)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "no service token" in refused.value.details()
        health = await health_pb2_grpc.HealthStub(bare).Check(health_pb2.HealthCheckRequest())
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        expired = mint_token(_key(NEW_PLAYSITE), Role.PLAY_SITE, "web", time.time() - 1)
        with pytest.raises(grpc.aio.AioRpcError) as late:
            await stub.GetOpening(request, metadata=(("authorization", f"Bearer {expired}"),))
        assert late.value.code() == grpc.StatusCode.UNAUTHENTICATED and "expired" in late.value.details()
        # A token of the format before roles (arb1.<key>.<caller>.<expires>.<signature>) is refused, saying why.
        with pytest.raises(grpc.aio.AioRpcError) as roleless:
            await stub.GetOpening(request, metadata=(("authorization", "Bearer arb1.rot2.web.99999999999.c2ln"),))
        assert roleless.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "names no role" in roleless.value.details() and "--role" in roleless.value.details()
    for key in (OLD_PLAYSITE, NEW_PLAYSITE):  # both keys of the rotation are accepted
        async with open_channel(address, TokenSigner(_key(key), Role.PLAY_SITE, "web")) as channel:
            opening = await openings_pb2_grpc.OpeningServiceStub(channel).GetOpening(request)
            assert opening.number == 1
    with urllib.request.urlopen(guarded_system.services["openings"].metrics_url, timeout=5) as reply:
        text = reply.read().decode()
    assert 'arbiter_refused_calls_total{code="UNAUTHENTICATED",method="GetOpening",service="openings"} 3.0' in text
    # The refused calls are calls all the same: the dashboards' failed-call rates read this series.
    assert 'arbiter_grpc_requests_total{code="UNAUTHENTICATED",method="GetOpening",service="openings"} 3.0' in text
    assert 'arbiter_grpc_requests_total{code="OK",method="GetOpening",service="openings"} 2.0' in text


async def _fingerprint(database_url: str) -> dict[str, tuple[int, str]]:
    """Rows and a digest of every table of every service: whatever a refused call could have written."""
    connection = await asyncpg.connect(database_url)
    try:
        tables = await connection.fetch(
            "SELECT table_schema, table_name FROM information_schema.tables"
            " WHERE table_schema = ANY($1::text[]) AND table_type = 'BASE TABLE'", list(SCHEMAS))
        found = {}
        for table in tables:
            if table["table_name"] in ("outbox", "outbox_published"):
                # The relay moves rows from one to the other on its own schedule (the create's events
                # go out meanwhile); a call that changed anything would also have written the tables
                # of what it changed.
                continue
            name = f'"{table["table_schema"]}"."{table["table_name"]}"'
            found[name] = tuple(await connection.fetchrow(
                f"SELECT count(*), md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM {name} t"))
        return found
    finally:
        await connection.close()


FISCHER = common.FischerControl(base_seconds=180, increment_seconds=2)


def _tournament(creator: str) -> tp.CreateTournamentRequest:
    return tp.CreateTournamentRequest(
        actor=common.Actor(player_id=creator, kind=common.ACCOUNT_KIND_REGISTERED),
        settings=tp.TournamentSettings(
            name="Guarded", variant="italian", capacity=8, duration_minutes=60,
            starts_at=timestamp(datetime.now(UTC) + timedelta(hours=2)),
            opening_mode=common.OPENING_MODE_TABLE_ALL, time_control=common.TimeControl(fischer=FISCHER)))


def _requests(tournament_id: str, creator: str) -> dict[str, object]:
    """For the RPCs that change something, a request that would change it in an accepted role."""
    someone = common.Actor(player_id=f"p-{uuid.uuid4().hex[:8]}", kind=common.ACCOUNT_KIND_REGISTERED)
    owner = common.Actor(player_id=creator, kind=common.ACCOUNT_KIND_REGISTERED)
    return {
        "CreateTournament": _tournament(someone.player_id),
        "JoinTournament": tp.JoinTournamentRequest(actor=someone, tournament_id=tournament_id),
        "WithdrawTournament": tp.WithdrawTournamentRequest(actor=owner, tournament_id=tournament_id),
        "CancelTournament": tp.CancelTournamentRequest(actor=owner, tournament_id=tournament_id),
        "RevokeInvite": tp.RevokeInviteRequest(actor=owner, tournament_id=tournament_id, issue_new=True),
        "CreateArena": ap.CreateArenaRequest(actor=someone, settings=ap.ArenaSettings(
            name="Refused", variant="international", duration_minutes=60, time_control=FISCHER)),
        "DrawOpening": op.DrawOpeningRequest(
            competition=common.CompetitionRef(kind=common.COMPETITION_KIND_TOURNAMENT, id=tournament_id, round=1),
            variant="italian", mode=common.OPENING_MODE_TABLE_ALL),
        "Refuel": cp.RefuelRequest(actor=owner, game_id=f"{tournament_id}-r1-b1-g1"),
    }


async def _call(channel: grpc.aio.Channel, full_name: str, method, request, role: Role) -> grpc.aio.AioRpcError:
    """Call one RPC in `role`; the error it ends with (the test fails if it succeeds)."""
    path = f"/{full_name}/{method.name}"
    serialize, keep = (lambda message: message.SerializeToString()), (lambda data: data)
    try:
        if method.server_streaming:
            async for _ in channel.unary_stream(path, request_serializer=serialize, response_deserializer=keep)(
                    request, metadata=_bearer(role), timeout=10):
                pass
        else:
            await channel.unary_unary(path, request_serializer=serialize, response_deserializer=keep)(
                request, metadata=_bearer(role), timeout=10)
    except grpc.aio.AioRpcError as error:
        return error
    raise AssertionError(f"{method.name} answered a token in role {role}")


async def test_every_rpc_refuses_every_role_it_does_not_name_and_changes_nothing(guarded_system) -> None:
    pairing_address = guarded_system.services["pairing"].grpc_address
    creator = f"c-{uuid.uuid4().hex[:8]}"
    async with grpc.aio.insecure_channel(pairing_address) as channel:
        created = await tournament_pb2_grpc.TournamentServiceStub(channel).CreateTournament(
            _tournament(creator), metadata=_bearer(Role.PLAY_SITE))
    tournament_id = created.tournament.id
    requests = _requests(tournament_id, creator)
    before = await _fingerprint(guarded_system.database_url)
    pool = descriptor_pool.Default()
    refused = 0
    for service, (full_name, table) in SERVICES.items():
        async with grpc.aio.insecure_channel(guarded_system.services[service].grpc_address) as channel:
            for method in pool.FindServiceByName(full_name).methods:
                request = requests.get(method.name) or message_factory.GetMessageClass(method.input_type)()
                for role in sorted(set(Role) - table[method.name]):
                    error = await _call(channel, full_name, method, request, role)
                    assert error.code() == grpc.StatusCode.PERMISSION_DENIED, (method.name, role, error.details())
                    assert f"{method.name} is for" in error.details() and f"role {role}" in error.details()
                    refused += 1
    assert refused >= 80
    assert await _fingerprint(guarded_system.database_url) == before, "a refused call changed something"

    # The same requests in an accepted role do change things: the refusals above were not empty calls.
    async with grpc.aio.insecure_channel(pairing_address) as channel:
        made = await tournament_pb2_grpc.TournamentServiceStub(channel).CreateTournament(
            requests["CreateTournament"], metadata=_bearer(Role.PLAY_SITE))
        assert made.tournament.id
    async with grpc.aio.insecure_channel(guarded_system.services["openings"].grpc_address) as channel:
        drawn = await openings_pb2_grpc.OpeningServiceStub(channel).DrawOpening(
            requests["DrawOpening"], metadata=_bearer(Role.PAIRING))
        assert drawn.opening.number
    assert await _fingerprint(guarded_system.database_url) != before


async def test_draw_opening_is_pairings_alone_whatever_key_the_play_site_holds(guarded_system) -> None:
    """The probe's attack: the play site's key signs only play-site tokens, and DrawOpening refuses them."""
    address = guarded_system.services["openings"].grpc_address
    request = op.DrawOpeningRequest(
        competition=common.CompetitionRef(kind=common.COMPETITION_KIND_TOURNAMENT, id=f"t_{uuid.uuid4().hex[:12]}",
                                          round=1),
        variant="italian", mode=common.OPENING_MODE_RANDOM_1)
    async with open_channel(address, TokenSigner(_key(NEW_PLAYSITE), Role.PLAY_SITE, "web")) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await openings_pb2_grpc.OpeningServiceStub(channel).DrawOpening(request)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert refused.value.details() == "DrawOpening is for pairing; this token is web's in role play-site"
    # A pairing token minted with the play site's secret is refused too: the key does not sign for pairing.
    wide = ServiceKey("rot2", b"new-secret-0123456789", frozenset(Role))
    forged = mint_token(wide, Role.PAIRING, "pairing", time.time() + 60)
    async with grpc.aio.insecure_channel(address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await openings_pb2_grpc.OpeningServiceStub(channel).DrawOpening(
                request, metadata=(("authorization", f"Bearer {forged}"),))
    assert denied.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "key rot2 may not sign for role 'pairing'" in denied.value.details()
