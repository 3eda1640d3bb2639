"""A batch consumer's poll (kit): an idle consumer waits in the poll itself, never in a sleep after an empty one.

What this checks is the loop's shape on the real broker: every poll asks getmany to wait the whole poll
time, and an empty poll is followed by the next poll, not by a sleep. How soon a record is
handled and how often an idle consumer polls are figures: tests/bench/bench_batch_poll.py prints them.
"""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

import arbiter.kit.kafka as kit_kafka
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.kafka import make_broker, subscribe_many
from arbiter.kit.metrics import Metrics
from arbiter.kit.poison import LoggedSetAside
from arbiter.kit.settings import KitSettings
from tests.support.polling import eventually


def poll_settings(infra_env: dict[str, str], poll_ms: int) -> KitSettings:
    """Kit settings on the session's infrastructure with a batch poll of `poll_ms`."""
    return KitSettings(
        kafka_bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], redis_url=infra_env["REDIS_URL"],
        database_url=infra_env["DATABASE_URL"], grpc_port=0, metrics_port=0, kafka_heartbeat_interval_ms=500,
        kafka_fetch_max_wait_ms=20, kafka_batch_poll_ms=poll_ms,
    )


async def caught_up(subscriber: Any) -> None:
    """Wait until the consumer has its partitions and has read what earlier tests left on them."""
    consumer = subscriber.consumer
    await eventually(consumer.assignment, "a partition for the consumer")
    ends = await consumer.end_offsets(list(consumer.assignment()))
    for partition, end in ends.items():
        await eventually(lambda partition=partition, end=end: _read_to(consumer, partition, end),
                         f"the history of {partition} read")


async def _read_to(consumer: Any, partition: Any, end: int) -> bool:
    return await consumer.position(partition) >= end


class PollLog:
    """What the consumer loop did, in order: ("poll", timeout_ms, records) per getmany, ("sleep", s) per sleep."""

    def __init__(self) -> None:
        self.steps: list[tuple[Any, ...]] = []

    def watch(self, consumer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        """Log `consumer`'s polls and the kit loop's sleeps (its module's asyncio, nobody else's)."""
        getmany = consumer.getmany

        async def logged_poll(*args: Any, **kwargs: Any) -> Any:
            batches = await getmany(*args, **kwargs)
            self.steps.append(("poll", kwargs.get("timeout_ms"), sum(len(r) for r in batches.values())))
            return batches

        async def logged_sleep(seconds: float) -> None:
            self.steps.append(("sleep", seconds))
            await asyncio.sleep(seconds)

        monkeypatch.setattr(consumer, "getmany", logged_poll)
        monkeypatch.setattr(kit_kafka, "asyncio", SimpleNamespace(**{**vars(asyncio), "sleep": logged_sleep}))

    def polls(self) -> list[tuple[Any, ...]]:
        """The polls logged so far."""
        return [step for step in self.steps if step[0] == "poll"]


async def test_an_idle_consumer_waits_in_each_poll_and_a_record_after_a_quiet_spell_is_taken_by_a_poll(
        infra_env, monkeypatch) -> None:
    """FastStream slept a whole poll after each empty one (a record landing then waited for the sleep)."""
    settings = poll_settings(infra_env, poll_ms=200)
    tag = uuid.uuid4().hex[:8]
    broker = make_broker(settings, "kit_poll")
    handled: list[str] = []

    async def on_finished(batch: list[ev.GameFinished]) -> str:
        handled.extend(event.game_id for event in batch if event.game_id.startswith(tag))
        return "handled"

    metrics = Metrics("kit_poll")
    subscriber = subscribe_many(broker, settings, metrics, {events.GAME_FINISHED: on_finished},
                                f"kit-poll-{tag}", set_aside=LoggedSetAside(metrics))
    await broker.start()
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers)
    await producer.start()
    try:
        await caught_up(subscriber)
        log = PollLog()
        log.watch(subscriber.consumer, monkeypatch)
        await eventually(lambda: len(log.polls()) >= 5, "five idle polls")
        for number in range(3):
            game_id = f"{tag}-{number}"
            await producer.send_and_wait("game.finished", ev.GameFinished(game_id=game_id).SerializeToString(),
                                         key=game_id.encode())
            await eventually(lambda game_id=game_id: game_id in handled, f"{game_id} handled")
            polled = len(log.polls())
            await eventually(lambda polled=polled: len(log.polls()) >= polled + 3, "idle again")
        assert handled == [f"{tag}-{number}" for number in range(3)]
        polls = log.polls()
        assert all(timeout_ms == 200 for _, timeout_ms, _ in polls), "each poll waits the poll time itself"
        assert sum(records for *_, records in polls) >= 3
        # An empty poll that waited its whole time is followed by the next poll; only one that came back
        # early (a rebalance, say) sleeps the rest. A sleep after each empty poll was FastStream's loop.
        empty = sum(1 for *_, records in polls if records == 0)
        sleeps = [step for step in log.steps if step[0] == "sleep"]
        assert len(sleeps) * 2 < empty, log.steps
    finally:
        await producer.stop()
        await broker.stop()
