"""A memory broker lost for real (issue 40): tansu SIGKILLed and started again, empty, on its port.

The rating service runs on a tansu of the test's own. While it is gone, readiness is NOT_SERVING and
the client's failures are written once per kind and window, not ten times a second; once it is
back, the service creates its topics again (they went with the broker), its consumer rejoins and
rates the next game, and `republish_all` sends again what its outbox had published to the lost
broker, which a reader of the new one then finds. On main's code the topics never came back,
readiness stayed SERVING and every failure was logged.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta

import asyncpg
import grpc
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.events import Topic
from arbiter.kit.health import READINESS
from arbiter.kit.logs import DEFAULT_REPEAT_SECONDS
from arbiter_tools.chaos import read_raw
from arbiter_tools.devstack.infra import start_tansu
from arbiter_tools.devstack.processes import free_port
from arbiter_tools.devstack.republish import republish_all
from tests.integration.rating.rating_support import finished
from tests.support.polling import eventually

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


async def readiness(address: str) -> int:
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=READINESS),
                                                                   timeout=2)
        except grpc.aio.AioRpcError:
            return -1
    return reply.status


async def publish(bootstrap: str, event: ev.GameFinished) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(events.GAME_FINISHED.name, event.SerializeToString(), key=event.game_id.encode())
    finally:
        await producer.stop()


async def topics_of(bootstrap: str) -> set[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


async def event_ids_on(bootstrap: str, topic: Topic) -> set[str]:
    """The event ids of every record of `topic`, read from its beginning to its current end."""
    return {dict(headers).get("event-id", b"").decode() for *_, headers in await read_raw(bootstrap, [topic])}


def lines_between(log_path, since: float, until_: float) -> list[dict]:
    """The lines the service wrote between two wall-clock instants, parsed."""
    found = []
    for line in log_path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if since <= datetime.fromisoformat(entry["ts"]).timestamp() <= until_:
            found.append(entry)
    return found


def error_kinds(log_path, since: float, until_: float) -> Counter[str]:
    """Error lines the service wrote between two wall-clock instants, by logger and message."""
    return Counter(f"{entry['logger']}: {entry['msg'][:60]}" for entry in lines_between(log_path, since, until_)
                   if entry.get("level") == "error")


async def test_rating_recovers_from_a_lost_broker_and_republishes_what_it_held(start_system, infra_env, tmp_path):
    port = free_port()
    broker = start_tansu(port, tmp_path / "tansu-0.log")
    bootstrap = f"127.0.0.1:{port}"
    prefix = f"b{uuid.uuid4().hex[:6]}"
    white, black = f"{prefix}-w", f"{prefix}-b"
    try:
        stack = await asyncio.to_thread(start_system, ("rating",), extra_env={
            "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KAFKA_GROUP_PREFIX": f"{prefix}-", "KAFKA_PARTITIONS": "1",
            "READINESS_CHECK_SECONDS": "0.5"})
        address = stack.services["rating"].grpc_address
        database = await asyncpg.connect(infra_env["DATABASE_URL"])

        async def rating_events_published(count: int) -> bool:
            return await database.fetchval("SELECT count(*) FROM rating.outbox_published WHERE key = ANY($1::text[])",
                                           [white, black]) >= count

        # An earlier test on this database may have left events in the outbox, which this relay
        # publishes first: counting starts once they are out, on the database's clock.
        await eventually(lambda: database.fetchval("SELECT count(*) = 0 FROM rating.outbox"),
                         "the outbox emptied of what earlier tests left", timeout=60)
        since = await database.fetchval("SELECT now()")
        at = datetime.now(UTC) - timedelta(days=1)
        await publish(bootstrap, finished(f"{prefix}-g1", white, black, cm.GAME_RESULT_WHITE_WINS, at))
        await eventually(lambda: rating_events_published(2), "game 1 rated and its RatingUpdated published", timeout=60)
        lost = set(await database.fetchval(
            "SELECT array_agg(event_id) FROM rating.outbox_published WHERE key = ANY($1::text[])", [white, black]))

        broker.kill()
        down_at = time.time()
        await eventually(lambda: _is(readiness(address), NOT_SERVING), "NOT_SERVING while the broker is gone",
                         timeout=30)
        # The outage lasts until the service has held repeats back for a whole window (LOG_REPEAT_SECONDS)
        # and written the line that counts them: the log check below is about such an outage.
        await eventually(lambda: [e for e in lines_between(stack.log_dir / "rating.log", down_at, time.time())
                                  if e.get("suppressed")],
                         "an error repeated while the broker is gone, held back and counted", timeout=90)
        broker = start_tansu(port, tmp_path / "tansu-1.log")
        back_at = time.time()
        await eventually(lambda: _is(readiness(address), SERVING), "SERVING once the broker is back", timeout=60)
        assert {events.GAME_FINISHED.name, events.RATING_UPDATED.name} <= await topics_of(bootstrap)

        # The consumer rejoined its group on the new topic: the next game is rated.
        await publish(bootstrap, finished(f"{prefix}-g2", white, black, cm.GAME_RESULT_DRAW, at + timedelta(hours=1)))
        await eventually(lambda: rating_events_published(4), "game 2 rated after the broker came back", timeout=90)

        counts = await republish_all(infra_env["DATABASE_URL"], since, ("rating",))
        assert counts["rating"][events.RATING_UPDATED.name] == 4
        await eventually(lambda: event_ids_on(bootstrap, events.RATING_UPDATED), "the lost events on the new broker",
                         timeout=60, until=lambda seen: lost <= seen)
        await eventually(lambda: rating_events_published(4), "the republished events published again", timeout=60)
        await database.close()

        # At most one line per kind and repeat window while it was gone, the later ones counting the rest.
        outage = error_kinds(stack.log_dir / "rating.log", down_at, back_at)
        assert outage, "the outage went unlogged"
        limit = int((back_at - down_at) / DEFAULT_REPEAT_SECONDS) + 2
        assert max(outage.values()) <= limit, outage
    finally:
        broker.kill()


async def _is(answer, wanted: int) -> bool:
    return await answer == wanted
