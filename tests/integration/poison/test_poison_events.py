"""Poison events on every consumed topic, against the five running services: every consumer moves on.

Before poison handling, one GameFinished with a NUL character published straight to Kafka
(gRPC refuses NUL, Kafka does not) stopped consumers for good: PostgreSQL refused it, and the
batch came again every half second. Rating never rated another game, even after a restart;
both clock consumers stalled; arena, pairing and openings never advanced their offsets.

Here every kind of poison record (arbiter_tools.poison) lands on every topic a service consumes,
then valid events follow: each must take effect, every consumer group must commit to the end of
its topics, and each service's set-aside table must hold exactly the poison records of its own
topics, with the reason. Rating is restarted and must go on rating.
"""

from __future__ import annotations

import asyncio
import urllib.request
import uuid
from collections.abc import Awaitable

import asyncpg
import grpc
import pytest
from aiokafka import AIOKafkaProducer
from google.protobuf.message import Message

from arbiter.contracts import clock_pb2, clock_pb2_grpc, openings_pb2, openings_pb2_grpc, rating_pb2, rating_pb2_grpc
from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.events import topic_of
from arbiter.kit.poison import REASONS
from arbiter_tools.chaos import wait_caught_up
from arbiter_tools.devstack.stack import SERVICE_GROUPS, SERVICE_NAMES, SystemStack
from arbiter_tools.poison import PoisonRecord, publish_poison
from tests.support.polling import eventually

# What each kind of poison record is set aside as.
REASON_OF_KIND = {"undecodable": "undecodable", "nul": "invalid", "huge_id": "invalid", "unknown_enum": "invalid",
                  "bad_timestamp": "invalid"}


def stamped(event: Message, tag: str) -> Message:
    event.meta.event_id = f"{tag}-{uuid.uuid4().hex[:8]}"  # type: ignore[attr-defined]
    event.meta.occurred_at.GetCurrentTime()  # type: ignore[attr-defined]
    return event


async def publish(bootstrap: str, *messages: Message) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for message in messages:
            topic = topic_of(message)
            await producer.send_and_wait(topic.name, message.SerializeToString(), key=topic.key_of(message).encode())
    finally:
        await producer.stop()


def finished_game(tag: str, game_id: str, white: str, black: str) -> ev.GameFinished:
    event = ev.GameFinished(
        game_id=game_id, competition=cm.CompetitionRef(kind=cm.COMPETITION_KIND_CASUAL, id=f"{tag}-casual"),
        variant="international", speed=cm.SPEED_BLITZ, white_id=white, black_id=black,
        result=cm.GAME_RESULT_WHITE_WINS, termination=cm.TERMINATION_RESIGNATION, white_sat=True, black_sat=True,
        rated=True, plies=2,
    )
    event.finished_at.GetCurrentTime()
    return stamped(event, tag)


async def poison_topics_of(bootstrap: str, tag: str, services: tuple[str, ...]) -> dict[str, list[PoisonRecord]]:
    """Every kind of poison record on every topic `services` consume."""
    topics = sorted({topic for service in services for topics in SERVICE_GROUPS[service].values() for topic in topics})
    return {topic: await publish_poison(bootstrap, topic, tag=f"{tag}-{topic}") for topic in topics}


async def rated_games(stub: rating_pb2_grpc.RatingServiceStub, player: str) -> int:
    answer = await stub.GetRating(rating_pb2.GetRatingRequest(player_id=player, variant="international",
                                                               speed=cm.SPEED_BLITZ))
    return answer.rating.games


async def caught_up(stack: SystemStack, names: tuple[str, ...] = SERVICE_NAMES) -> None:
    """Every consumer group of `names` has committed every record of its topics."""
    await asyncio.gather(*(wait_caught_up(stack.kafka_bootstrap, name, timeout=180,
                                          prefix=stack.consumer_group("")) for name in names))


Rows = dict[str, list[tuple[str, str, str]]]


async def set_aside_rows(stack: SystemStack, tag: str, services: tuple[str, ...]) -> Rows:
    """Per service: (consumer group, topic, reason) of each row of this test's records (`tag` in key or value)."""
    connection = await asyncpg.connect(stack.database_url)
    try:
        found = {}
        for service in services:
            rows = await connection.fetch(
                f"SELECT consumer_group, topic, reason FROM {service}.consumer_set_aside"
                " WHERE position($1::bytea in coalesce(key, '')) > 0 OR position($1::bytea in coalesce(value, '')) > 0",
                tag.encode())
            found[service] = sorted((r["consumer_group"], r["topic"], r["reason"]) for r in rows)
        return found
    finally:
        await connection.close()


def expected_rows(stack: SystemStack, published: dict[str, list[PoisonRecord]],
                  services: tuple[str, ...]) -> Rows:
    """Every consumer group of `services` sets aside each poison record of each of its topics, once."""
    return {service: sorted((group, topic, REASON_OF_KIND[record.kind]) for group, topics in groups.items()
                            for topic in topics for record in published[topic])
            for service, groups in stack.consumer_groups().items() if service in services}


def set_aside_metric(url: str, topic: str, reason: str) -> float:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith("arbiter_events_set_aside_total{") and f'topic="{topic}"' in line \
                and f'reason="{reason}"' in line:
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"arbiter_events_set_aside_total{{topic={topic}, reason={reason}}} is not exported")


async def start(start_system, services: tuple[str, ...], tag: str) -> SystemStack:
    # Groups of this test's own: tansu can leave a group all of whose members left wedged for the next joiner.
    return await asyncio.to_thread(start_system, services, extra_env={"KAFKA_GROUP_PREFIX": f"{tag}-"})


async def test_rating_rates_the_next_valid_game_after_poison_and_after_a_restart(start_system) -> None:
    tag, services = f"pr{uuid.uuid4().hex[:6]}", ("rating",)
    stack = await start(start_system, services, tag)
    bootstrap = stack.kafka_bootstrap
    rating_url = stack.services["rating"].metrics_url
    # Every series exists from the start (at zero in a fresh process: the kit's tests show it), so that
    # an alert sees the first record set aside. The group reads the session's earlier records first.
    await caught_up(stack, services)
    before = {reason: set_aside_metric(rating_url, "game.finished", reason) for reason in REASONS}
    published = await poison_topics_of(bootstrap, tag, services)
    white, black = f"{tag}-white", f"{tag}-black"
    await publish(bootstrap, finished_game(tag, f"{tag}-game-1", white, black))
    async with grpc.aio.insecure_channel(stack.services["rating"].grpc_address) as channel:
        rating = rating_pb2_grpc.RatingServiceStub(channel)
        await eventually(lambda: _equals(rated_games(rating, white), 1), "rating rated the game after the poison",
                         timeout=90)
    await caught_up(stack, services)
    assert await set_aside_rows(stack, tag, services) == expected_rows(stack, published, services)
    assert {reason: set_aside_metric(rating_url, "game.finished", reason) - before[reason] for reason in REASONS} == {
        "undecodable": 1, "invalid": 4, "handler_failed": 0}

    # After a restart rating starts from its committed offsets, past the poison, and rates on.
    await asyncio.to_thread(stack.kill_service, "rating")
    await asyncio.to_thread(stack.start_service, "rating")
    await asyncio.to_thread(stack.wait_serving, 60.0, services)
    await publish_poison(bootstrap, "game.finished", tag=f"{tag}-again")
    await publish(bootstrap, finished_game(tag, f"{tag}-game-2", white, black))
    async with grpc.aio.insecure_channel(stack.services["rating"].grpc_address) as channel:
        rating = rating_pb2_grpc.RatingServiceStub(channel)
        await eventually(lambda: _equals(rated_games(rating, white), 2), "rating rated a game after its restart",
                         timeout=90)
    await caught_up(stack, services)


async def test_both_clock_consumers_go_on_after_poison(start_system) -> None:
    """The lifecycle consumer (requests, starts, ends, presence, boosts) and the moves consumer alike."""
    tag, services = f"pc{uuid.uuid4().hex[:6]}", ("clock",)
    stack = await start(start_system, services, tag)
    bootstrap = stack.kafka_bootstrap
    published = await poison_topics_of(bootstrap, tag, services)
    game, white, black = f"{tag}-game", f"{tag}-white", f"{tag}-black"
    requested = ev.GameRequested(
        game_id=game, competition=cm.CompetitionRef(kind=cm.COMPETITION_KIND_CASUAL, id=f"{tag}-casual"),
        variant="international", white_id=white, black_id=black, speed=cm.SPEED_BLITZ, rated=True,
        time_control=cm.TimeControl(fischer=cm.FischerControl(base_seconds=300, increment_seconds=0)),
    )
    started = ev.GameStarted(game_id=game, white_id=white, black_id=black, variant="international",
                             competition=requested.competition, time_control=requested.time_control)
    started.started_at.GetCurrentTime()
    move = ev.MoveMade(game_id=game, player_id=white, ply=1, move="32-28")
    move.played_at.GetCurrentTime()
    await publish(bootstrap, stamped(requested, tag), stamped(started, tag), stamped(move, tag))
    async with grpc.aio.insecure_channel(stack.services["clock"].grpc_address) as channel:
        clock = clock_pb2_grpc.ClockServiceStub(channel)

        async def clock_of_game() -> clock_pb2.Clock | None:
            try:
                return await clock.GetClock(clock_pb2.GetClockRequest(game_id=game))
            except grpc.aio.AioRpcError as error:
                if error.code() != grpc.StatusCode.NOT_FOUND:
                    raise
                return None

        async def moved() -> bool:
            answer = await clock_of_game()
            return answer is not None and answer.ply == 1

        async def over() -> bool:
            answer = await clock_of_game()
            return answer is not None and answer.finished

        await eventually(moved, "the clock took the game's request (lifecycle) and first move (moves)", timeout=90)
        await publish(bootstrap, finished_game(tag, game, white, black))
        await eventually(over, "the clock took the game's end", timeout=90)
    await caught_up(stack, services)
    assert await set_aside_rows(stack, tag, services) == expected_rows(stack, published, services)


async def test_arena_pairing_and_openings_advance_their_offsets_past_poison(start_system) -> None:
    tag, services = f"pa{uuid.uuid4().hex[:6]}", ("openings", "arena", "pairing")
    stack = await start(start_system, services, tag)
    bootstrap = stack.kafka_bootstrap
    published = await poison_topics_of(bootstrap, tag, services)
    cancelled = ev.TournamentCancelled(tournament_id=f"t_{tag}", reason="poison test")
    await publish(bootstrap, stamped(cancelled, tag))
    await caught_up(stack, services)
    # Openings applied the cancellation that came after its poison.
    async with grpc.aio.insecure_channel(stack.services["openings"].grpc_address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await openings_pb2_grpc.OpeningServiceStub(channel).DrawOpening(openings_pb2.DrawOpeningRequest(
                competition=cm.CompetitionRef(kind=cm.COMPETITION_KIND_TOURNAMENT, id=f"t_{tag}", round=1),
                variant="international", mode=cm.OPENING_MODE_FREE))
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert await set_aside_rows(stack, tag, services) == expected_rows(stack, published, services)


async def _equals(value: Awaitable[int], expected: int) -> bool:
    return await value == expected
