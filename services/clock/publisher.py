"""ClockState snapshots straight to Kafka, in batches: the one exception to the outbox rule.

Why not the outbox: a ClockState is not a state change to keep atomic with PostgreSQL but a
snapshot of live clocks, which live in Redis (PostgreSQL keeps a copy written once per batch,
for a Redis loss, while the states go out); each one is latest-wins, keyed by game id, and
carries its own server time. At 20,000 moves/s an outbox row per move, and the relay's pass
before each state goes out, would weigh on the move path, and so would waiting for Kafka's
acknowledgement. Losing snapshots in a crash is harmless: the next move sends a fresh one, and
GetClock answers from the live state at any time. Triple Block states, which are saved in
PostgreSQL, do go through the outbox.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaProducer

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.events import CLOCK_STATE
from arbiter.kit.kafka import partition_for_key
from arbiter.kit.metrics import Metrics
from arbiter.kit.trace import TRACE_HEADER
from services.clock.convert import EncodedState, encoded_state

log = logging.getLogger(__name__)
_HEADER_TYPE = ("event-type", ev.ClockState.DESCRIPTOR.full_name.encode())


class StatePublisher:
    """Publishes ClockState messages with one produce batch per partition."""

    def __init__(self, bootstrap_servers: str, client_id: str, metrics: Metrics,
                 security: Mapping[str, Any] | None = None) -> None:
        # `security`: arbiter.kit.kafka.kafka_security's options, as every Kafka client of ours takes them.
        self.producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap_servers, client_id=client_id, linger_ms=2,
            max_batch_size=512 * 1024, request_timeout_ms=30_000, **(security or {}),
        )
        self.metrics = metrics
        self._partitions: list[int] = []
        # murmur2 in pure Python costs more than the rest of a send: remember each game's partition.
        self._partition_of: dict[bytes, int] = {}
        self._in_flight: set[asyncio.Future[Any]] = set()
        self.max_in_flight = 64

    async def start(self) -> None:
        """Connect and learn the topic's partitions."""
        await self.producer.start()
        self._partitions = sorted(await self.producer.partitions_for(CLOCK_STATE.name))

    async def stop(self) -> None:
        """Flush and disconnect."""
        await self.flush()
        await self.producer.stop()

    async def publish(self, states: Sequence[ev.ClockState]) -> None:
        """Send `states` keyed by game id (the default partitioner's choice), without waiting for acks."""
        await self.publish_encoded([encoded_state(state) for state in states])

    async def publish_encoded(self, states: Sequence[EncodedState]) -> None:
        """Send serialised states (key, value, event id, trace id), in their order within each partition.

        The move consumer does not wait for Kafka's acknowledgement (a round trip per batch):
        at most `max_in_flight` produce batches are pending; a failed one is logged and counted.
        """
        if not states:
            return
        batches: dict[int, list[Any]] = {}
        partitions = self._partitions
        partition_of = self._partition_of
        create_batch = self.producer.create_batch
        for key, value, event_id, trace_id in states:
            partition = partition_of.get(key)
            if partition is None:
                if len(partition_of) > 200_000:
                    partition_of.clear()
                partition = partition_of[key] = partition_for_key(key, partitions)
            builders = batches.get(partition)
            if builders is None:
                builders = batches[partition] = [create_batch()]
            headers = [("event-id", event_id), _HEADER_TYPE, (TRACE_HEADER, trace_id)] if trace_id else [
                ("event-id", event_id), _HEADER_TYPE]
            if builders[-1].append(key=key, value=value, timestamp=None, headers=headers) is None:
                builders.append(create_batch())
                builders[-1].append(key=key, value=value, timestamp=None, headers=headers)
        for partition, builders in batches.items():
            for builder in builders:
                while len(self._in_flight) >= self.max_in_flight:
                    await asyncio.wait(self._in_flight, return_when=asyncio.FIRST_COMPLETED)
                sent = await self.producer.send_batch(builder, CLOCK_STATE.name, partition=partition)
                count = builder.record_count()
                self._in_flight.add(sent)
                sent.add_done_callback(lambda done, n=count: self._acknowledged(done, n))

    def _acknowledged(self, sent: asyncio.Future[Any], count: int) -> None:
        self._in_flight.discard(sent)
        service = self.metrics.service
        if sent.cancelled() or sent.exception() is not None:
            self.metrics.errors.labels(service, "clock_state_publish").inc()
            log.warning("clock states not published", extra={"count": count, "error": repr(
                None if sent.cancelled() else sent.exception())})
            return
        self.metrics.events_published.labels(service, CLOCK_STATE.name).inc(count)

    async def flush(self) -> None:
        """Wait for every pending produce batch."""
        if self._in_flight:
            await asyncio.wait(set(self._in_flight))
