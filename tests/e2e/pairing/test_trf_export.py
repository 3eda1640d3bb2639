"""Swiss tournaments played through the services, exported as TRF, and every round re-paired (T-13).

Two Swiss tournaments run to the end through the pairing service and the play-site stand-in: an
odd field with byes, a player who never sits (T-16, T-19) and one who is busy elsewhere (busy
forfeits, T-18); and a home-and-away one (T-12). `arbiter trf` fetches each through
TournamentService.ExportTrf, and `arbiter pair --check` re-pairs every round of the file from
the rounds before it: each must be the pairing the service made.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import grpc
import pytest

from arbiter.competition.trf import parse_trf
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit.events import timestamp
from arbiter.kit.timesource import TimeSource
from arbiter_tools.cli.main import main
from tests.support.playsite import Behaviour, PlaySite

END_TIMEOUT = 240.0


def player(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def registered(player_id: str) -> common.Actor:
    return common.Actor(player_id=player_id, kind=common.ACCOUNT_KIND_REGISTERED)


@pytest.fixture(scope="module")
async def system(pairing_system, infra_env):
    site = PlaySite(infra_env["KAFKA_BOOTSTRAP_SERVERS"])
    await site.start()
    address = pairing_system.services["pairing"].grpc_address
    channel = grpc.aio.insecure_channel(address)
    clock = TimeSource(pairing_system.time_scale, datetime.fromisoformat(pairing_system.time_origin))
    yield site, tournament_pb2_grpc.TournamentServiceStub(channel), clock, address
    await channel.close()
    await site.stop()


async def play_swiss(system, name: str, entrants: int, *, absent: int = 0, busy: int = 0, **settings) -> str:
    """Create a Swiss, fill it, make some entrants absent or busy, and wait for its end; its id."""
    site, stub, clock, _ = system
    players = [player(name) for _ in range(entrants)]
    values = {"name": name, "variant": "international", "time_control": common.TimeControl(
        fischer=common.FischerControl(base_seconds=60, increment_seconds=1)), "capacity": 40, "duration_minutes": 600,
        "starts_at": timestamp(clock.now() + timedelta(minutes=10))}
    values.update(settings)
    created = await stub.CreateTournament(tp.CreateTournamentRequest(
        actor=registered(player("creator")), settings=tp.TournamentSettings(**values)))
    tournament_id = created.tournament.id
    site.follow(tournament_id, Behaviour(seed=entrants, absent=frozenset(players[:absent])))
    for p in players:
        await stub.JoinTournament(tp.JoinTournamentRequest(actor=registered(p), tournament_id=tournament_id))
    for p in players[absent:absent + busy]:
        await site.occupy(p)  # T-18: in a game elsewhere that never ends, so every round game is forfeited
    log = await site.wait_end(tournament_id, timeout=END_TIMEOUT)
    assert log.started is not None and log.started.format == "swiss", log.started
    return tournament_id


def cli(*argv: str) -> tuple[int, str, str]:
    """`arbiter ARGV` in this process: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


async def export_and_check(system, tournament_id: str, folder: Path) -> tuple[dict, str]:
    """`arbiter trf ID --out FILE`, then `arbiter pair --check --json FILE`: (the check's report, the file)."""
    _, stub, _, address = system
    path = folder / f"{tournament_id}.trf"
    # the CLI runs its own event loop: in a thread of its own
    status, _, err = await asyncio.to_thread(cli, "trf", tournament_id, "--out", str(path), "--pairing-addr", address)
    assert status == 0, err
    exported = await stub.ExportTrf(tp.ExportTrfRequest(tournament_id=tournament_id))
    assert path.read_text(encoding="utf-8") == exported.trf
    status, out, err = cli("pair", str(path), "--check", "--json")
    assert status == 0, (out, err)
    return json.loads(out), exported.trf


async def test_an_odd_swiss_with_absences_and_forfeits_re_pairs_round_for_round(system, tmp_path: Path) -> None:
    tournament_id = await play_swiss(system, "trf-odd", 11, absent=1, busy=1)
    report, text = await export_and_check(system, tournament_id, tmp_path)
    t = await system[1].GetTournament(tp.GetTournamentRequest(tournament_id=tournament_id))
    assert report == {"rounds": t.rounds, "identical": True, "first_difference": None}
    model = parse_trf(text, next_round=False)
    codes = {entry.code for p in model.players.values() for entry in p.entries}
    # byes (T-8), lost without moving (T-16), forfeits (T-18): all written, all re-paired
    assert {"U", "L", "W", "+", "-"} <= codes, codes
    assert "XXR 6" in text.splitlines()


async def test_a_home_and_away_swiss_re_pairs_round_for_round(system, tmp_path: Path) -> None:
    tournament_id = await play_swiss(system, "trf-double", 9, home_and_away=True)
    report, text = await export_and_check(system, tournament_id, tmp_path)
    t = await system[1].GetTournament(tp.GetTournamentRequest(tournament_id=tournament_id))
    assert report == {"rounds": t.rounds, "identical": True, "first_difference": None}
    assert f"XXR {2 * t.rounds}" in text.splitlines()  # two TRF rounds per round (T-12)


async def test_export_refuses_what_is_not_a_played_swiss(system) -> None:
    _, stub, clock, address = system
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await stub.ExportTrf(tp.ExportTrfRequest(tournament_id="t_nothing_here"))
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
    created = await stub.CreateTournament(tp.CreateTournamentRequest(
        actor=registered(player("creator")), settings=tp.TournamentSettings(
            name="not yet", variant="international", capacity=10, duration_minutes=60,
            time_control=common.TimeControl(fischer=common.FischerControl(base_seconds=60, increment_seconds=1)),
            starts_at=timestamp(clock.now() + timedelta(days=1)))))
    with pytest.raises(grpc.aio.AioRpcError) as early:
        await stub.ExportTrf(tp.ExportTrfRequest(tournament_id=created.tournament.id))
    assert early.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "has not started" in early.value.details()
    status, _, err = await asyncio.to_thread(cli, "trf", "t_nothing_here", "--pairing-addr", address)
    assert status == 2 and "NOT_FOUND" in err
