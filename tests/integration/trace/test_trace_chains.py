"""One trace id followed through real service processes: the play site's call or event, the events, the log lines.

Pairing and rating run as processes of their own (`start_system`) on the session's broker and
PostgreSQL. The test stands in for the play site: it calls CreateTournament naming its own
`x-trace-id`, publishes GameFinished events naming theirs (one in its meta, one in the
`trace-id` header only, as a play site's gateway might), and reads back the events the services
publish and the JSON lines the rating service writes to its log file in the stack's log dir.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import grpc
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit import events
from arbiter.kit.fields import is_trace_id
from arbiter.kit.trace import TRACE_HEADER, TRACE_METADATA
from tests.support.polling import eventually


async def read_until(bootstrap: str, topic: str, wanted: Callable[[Any], bool], count: int,
                     timeout: float = 60.0) -> list[Any]:
    """The first `count` records of `topic` (read from its start) that `wanted` keeps."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest")
    await consumer.start()
    found: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(found) < count:
            assert time.monotonic() < deadline, f"{len(found)} of {count} records of {topic} within {timeout:.0f} s"
            for records in (await consumer.getmany(timeout_ms=500)).values():
                found += [record for record in records if wanted(record)]
    finally:
        await consumer.stop()
    return found[:count]


async def log_lines_until(path: Path, wanted: Callable[[list[dict[str, Any]]], bool],
                          timeout: float = 60.0) -> list[dict[str, Any]]:
    """The service's JSON log lines, read again until `wanted` is satisfied by them."""
    def lines() -> list[dict[str, Any]]:
        read = []
        for text in path.read_text(encoding="utf-8").splitlines() if path.exists() else ():
            try:
                read.append(json.loads(text))
            except ValueError:
                continue  # a line the process was still writing, or one not of the kit's logger
        return read

    return await eventually(lines, f"{path.name} holding the lines looked for", timeout=timeout, until=wanted)


def in_chain(line: dict[str, Any], trace: str) -> bool:
    """Whether a log line was written for chain `trace` (alone or in a batch of several)."""
    return line.get("trace_id") == trace or trace in (line.get("trace_ids") or ())


async def test_a_tournament_created_in_the_play_sites_trace_carries_it_to_its_event_and_its_timers(
        start_system, infra_env) -> None:
    bootstrap = infra_env["KAFKA_BOOTSTRAP_SERVERS"]
    tag = uuid.uuid4().hex[:8]
    trace = f"site-create-{tag}"
    stack = await asyncio.to_thread(start_system, ("pairing",), extra_env={"KAFKA_GROUP_PREFIX": f"{tag}-"})
    settings = tp.TournamentSettings(
        name=f"traced {tag}", variant="international", capacity=8, duration_minutes=60,
        time_control=cm.TimeControl(fischer=cm.FischerControl(base_seconds=180, increment_seconds=2)))
    settings.starts_at.FromDatetime(datetime.now(UTC) + timedelta(hours=2))
    actor = cm.Actor(player_id=f"{tag}-creator", kind=cm.ACCOUNT_KIND_REGISTERED)
    async with grpc.aio.insecure_channel(stack.services["pairing"].grpc_address) as channel:
        stub = tournament_pb2_grpc.TournamentServiceStub(channel)
        call = stub.CreateTournament(tp.CreateTournamentRequest(actor=actor, settings=settings),
                                     metadata=((TRACE_METADATA, trace),), timeout=30)
        created = await call
        named_back = dict(await call.trailing_metadata())[TRACE_METADATA]
        # A call naming no trace id gets one of its own, named back the same way.
        other = stub.GetTournament(tp.GetTournamentRequest(tournament_id=created.tournament.id), timeout=30)
        await other
        fresh = dict(await other.trailing_metadata())[TRACE_METADATA]
    tournament_id = created.tournament.id
    assert named_back == trace
    assert is_trace_id(fresh) and fresh != trace

    [record] = await read_until(bootstrap, events.TOURNAMENT_CREATED.name,
                                lambda r: r.key == tournament_id.encode(), 1)
    event = ev.TournamentCreated.FromString(record.value)
    assert (event.tournament_id, event.meta.trace_id, dict(record.headers)[TRACE_HEADER]) == (
        tournament_id, trace, trace.encode())
    # The start and close timers keep the chain: what they do when they fire is part of it.
    connection = await asyncpg.connect(infra_env["DATABASE_URL"])
    try:
        stored = await connection.fetch("SELECT timer_id, trace_id FROM pairing.timers WHERE timer_id LIKE $1",
                                        f"{tournament_id}/%")
    finally:
        await connection.close()
    assert {row["timer_id"]: row["trace_id"] for row in stored} == {
        f"{tournament_id}/start": trace, f"{tournament_id}/close": trace}


def _finished(tag: str, name: str, *, variant: str = "international") -> ev.GameFinished:
    event = ev.GameFinished(
        game_id=f"{tag}-{name}", variant=variant, speed=cm.SPEED_BLITZ, white_id=f"{tag}-{name}-w",
        black_id=f"{tag}-{name}-b", result=cm.GAME_RESULT_WHITE_WINS, termination=cm.TERMINATION_RESIGNATION,
        white_sat=True, black_sat=True, rated=True,
        competition=cm.CompetitionRef(kind=cm.COMPETITION_KIND_TOURNAMENT, id=f"t_{tag}", round=1))
    event.meta.event_id = f"{tag}-{name}/finished"
    event.meta.producer = "play-site-test"
    event.finished_at.FromDatetime(datetime.now(UTC))
    return event


async def test_a_game_finished_in_the_play_sites_trace_is_rated_in_it_and_the_rating_services_lines_name_it(
        start_system, infra_env) -> None:
    bootstrap = infra_env["KAFKA_BOOTSTRAP_SERVERS"]
    tag = uuid.uuid4().hex[:8]
    rated_trace, header_trace = f"site-game-{tag}-1", f"site-game-{tag}-2"
    rated = _finished(tag, "rated")
    rated.meta.trace_id = rated_trace
    # Says rated but cannot be (a variant nobody plays): the service ignores it with a warning line.
    unratable = _finished(tag, "unratable", variant="chess")
    stack = await asyncio.to_thread(start_system, ("rating",),
                                    extra_env={"KAFKA_GROUP_PREFIX": f"{tag}-", "LOG_LEVEL": "DEBUG"})
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(events.GAME_FINISHED.name, rated.SerializeToString(),
                                     key=rated.game_id.encode(), headers=[("event-id", rated.meta.event_id.encode())])
        # Only the header names this one's chain: the consumer takes it from there.
        await producer.send_and_wait(events.GAME_FINISHED.name, unratable.SerializeToString(),
                                     key=unratable.game_id.encode(),
                                     headers=[("event-id", unratable.meta.event_id.encode()),
                                              (TRACE_HEADER, header_trace.encode())])
    finally:
        await producer.stop()

    updates = await read_until(bootstrap, events.RATING_UPDATED.name,
                               lambda r: ev.RatingUpdated.FromString(r.value).game_id == rated.game_id, 2)
    for record in updates:
        update = ev.RatingUpdated.FromString(record.value)
        assert (update.meta.trace_id, update.meta.causation_id) == (rated_trace, rated.meta.event_id)
        assert dict(record.headers)[TRACE_HEADER] == rated_trace.encode()
    assert {ev.RatingUpdated.FromString(r.value).player_id for r in updates} == {rated.white_id, rated.black_id}

    log_file = stack.log_dir / "rating.log"

    def found_both(lines: list[dict[str, Any]]) -> bool:
        return (any(line.get("msg") == "events handled" and in_chain(line, rated_trace) for line in lines)
                and any(line.get("game_id") == unratable.game_id for line in lines))

    lines = await log_lines_until(log_file, found_both)
    handled = [line for line in lines if line.get("msg") == "events handled" and in_chain(line, rated_trace)]
    assert handled and all(line["service"] == "rating" and line["topic"] == "game.finished" for line in handled)
    [ignored] = [line for line in lines if line.get("game_id") == unratable.game_id]
    assert (ignored["msg"], ignored["level"], ignored["trace_id"]) == (
        "unratable GameFinished ignored", "warning", header_trace)


async def test_each_games_clock_states_follow_the_chain_of_its_moves(infra_env, tmp_path) -> None:
    from tests.integration.clock.conftest import control, launch

    bootstrap = infra_env["KAFKA_BOOTSTRAP_SERVERS"]
    tag = uuid.uuid4().hex[:8]
    games = {f"{tag}-a": f"site-game-{tag}-a", f"{tag}-b": f"site-game-{tag}-b"}
    stack = await asyncio.to_thread(launch, infra_env, tmp_path / "clock", 1.0)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
    await producer.start()
    try:
        def traced(event: Any, trace: str, name: str) -> tuple[str, Any]:
            event.meta.event_id, event.meta.trace_id = f"{event.game_id}/{name}", trace
            return events.topic_of(event).name, event

        begun = datetime.now(UTC) - timedelta(seconds=10)
        opening, moves = [], []
        for game_id, trace in games.items():
            requested = ev.GameRequested(game_id=game_id, white_id=f"{game_id}-w", black_id=f"{game_id}-b",
                                         variant="international", time_control=control(300, 2, None),
                                         competition=cm.CompetitionRef(kind=cm.COMPETITION_KIND_TOURNAMENT, id="t"))
            started = ev.GameStarted(game_id=game_id, white_id=f"{game_id}-w", black_id=f"{game_id}-b",
                                     variant="international")
            started.started_at.FromDatetime(begun)
            opening += [traced(requested, trace, "requested"), traced(started, trace, "started")]
            for ply, player in ((1, f"{game_id}-w"), (2, f"{game_id}-b")):
                move = ev.MoveMade(game_id=game_id, player_id=player, ply=ply, move="32-28")
                move.played_at.FromDatetime(begun + timedelta(seconds=ply))
                moves.append(traced(move, trace, f"m{ply}"))
        for topic, event in opening:
            await producer.send_and_wait(topic, event.SerializeToString(), key=event.game_id.encode())
        # The moves of both games together: most likely one batch of two chains for the clock.
        sent = [await producer.send(topic, event.SerializeToString(), key=event.game_id.encode())
                for topic, event in moves]
        await asyncio.gather(*sent)
        # A state per move applied, or one for both when the moves came before the start was handled.
        latest = await read_until(bootstrap, events.CLOCK_STATE.name,
                                  lambda r: r.key.decode() in games and ev.ClockState.FromString(r.value).ply == 2, 2)
        states = await read_until(bootstrap, events.CLOCK_STATE.name, lambda r: r.key.decode() in games, 2)
    finally:
        await producer.stop()
        await asyncio.to_thread(stack.stop)
    assert {record.key.decode() for record in latest} == set(games)
    for record in [*latest, *states]:
        state = ev.ClockState.FromString(record.value)
        assert state.meta.trace_id == games[state.game_id]
        assert dict(record.headers)[TRACE_HEADER] == games[state.game_id].encode()
