"""Two clock replicas on a real broker: each decides flags only for games whose partitions it holds and has read up.

Each replica is what serve() wires for flags, in-process: a lifecycle consumer and a moves
consumer (two groups, partitions laid out alike by `CoPartitionAssignor`), each followed by a
`PartitionCatchUp`, and a flag poller deciding through `SettledKeys`; both pollers share one Redis
deadline set and one schema. Found by the scale-out chaos run: when a replica died, the other
abandoned (T-19) games whose GameFinished still waited in the dead replica's partitions.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.events import Topic
from arbiter.kit.kafka import CoPartitionAssignor, PartitionCatchUp, SettledKeys, ensure_topics, partition_for_key
from arbiter.kit.timesource import TimeSource
from services.clock.flags import FlagPoller
from tests.integration.clock.conftest import (
    ClockBackend,
    clock_backend,
    flags_saved,
    live_and_poller,
    live_store,
    running_out,
)
from tests.support.kafka import until_polled
from tests.support.polling import eventually


@dataclass
class Replica:
    """One clock replica's consumers and flag poller."""

    lifecycle: AIOKafkaConsumer
    moves: AIOKafkaConsumer
    ownership: SettledKeys
    poller: FlagPoller

    @property
    def consumers(self) -> list[AIOKafkaConsumer]:
        """Both consumers."""
        return [self.lifecycle, self.moves]

    def held(self) -> set[int]:
        """The partition numbers both consumers hold."""
        life, moves = ({tp.partition for tp in c.assignment()} for c in self.consumers)
        return life & moves


async def _replica(backend: ClockBackend, bootstrap: str, token: str, groups: dict[str, str],
                   clock: TimeSource) -> Replica:
    assignor = CoPartitionAssignor(token)
    consumers, catch_ups = [], []
    for topic, group in groups.items():
        # A short session: tansu answers a JoinGroup after half of it.
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                    auto_offset_reset="earliest", session_timeout_ms=2000, heartbeat_interval_ms=400,
                                    partition_assignment_strategy=(assignor, RoundRobinPartitionAssignor))
        catch_up = PartitionCatchUp(assignor)
        catch_up.follow(lambda consumer=consumer: consumer)
        consumer.subscribe([topic], listener=catch_up)
        await consumer.start()
        consumers.append(consumer)
        catch_ups.append(catch_up)
    ownership = SettledKeys(catch_ups)
    _live, poller = await live_and_poller(backend, clock, ownership)
    return Replica(consumers[0], consumers[1], ownership, poller)


def _game_on(partition: int, tag: str) -> str:
    """A game id the default partitioner puts on `partition` of two."""
    while True:
        game_id = f"{tag}-{uuid.uuid4().hex[:8]}"
        if partition_for_key(game_id.encode(), [0, 1]) == partition:
            return game_id


async def test_a_replica_flags_only_games_of_partitions_it_holds_and_has_read_up(infra_env) -> None:
    bootstrap = infra_env["KAFKA_BOOTSTRAP_SERVERS"]
    tag = uuid.uuid4().hex[:8]
    finished, moved = f"clock.parts.finished.{tag}", f"clock.parts.moved.{tag}"
    await ensure_topics(bootstrap, 2, [Topic(finished, ev.GameFinished, "game_id"),
                                       Topic(moved, ev.MoveMade, "game_id")])
    groups = {finished: f"clock-parts-life-{tag}", moved: f"clock-parts-moves-{tag}"}
    clock = TimeSource()
    async with clock_backend(infra_env, "parts") as backend:
        now = clock.now_ms()
        on_first, on_second = _game_on(0, "first"), _game_on(1, "second")
        live = await live_store(backend.pool, backend.redis, backend.prefix)
        # Both clocks ran out a second ago: due for whichever replica may decide them.
        assert all(await live.save_many([running_out(on_first, now, -1000), running_out(on_second, now, -1000)]))
        # Tokens sort "a" then "b": partition 0 of both groups goes to a, partition 1 to b.
        a = await _replica(backend, bootstrap, "a", groups, clock)
        b = await _replica(backend, bootstrap, "b", groups, clock)
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            everyone = [*a.consumers, *b.consumers]
            await until_polled(lambda: a.held() == {0} and b.held() == {1}, everyone,
                               "the two groups never laid partition 0 on a and 1 on b", timeout=60)
            # b holds partition 1 of both topics, read up (empty): it flags that game and only it.
            await b.poller.fire_due()
            assert await flags_saved(backend.pool, on_second) == 1
            assert await flags_saved(backend.pool, on_first) == 0, "b flagged a game of a's partition"
            decidable = await a.ownership.view()
            assert decidable is not None and decidable(on_first) and not decidable(on_second)

            # A move of the first game lands on partition 0; a dies before anyone commits it.
            await producer.send_and_wait(moved, ev.MoveMade(game_id=on_first, ply=1).SerializeToString(),
                                         key=on_first.encode(), partition=0)
            for consumer in a.consumers:
                await consumer.stop()
            await until_polled(lambda: b.held() == {0, 1}, b.consumers, "b never took partition 0 over", timeout=60)
            # b holds partition 0 now but has not read the move the previous holder left: no verdict yet.
            await b.poller.fire_due()
            assert await flags_saved(backend.pool, on_first) == 0, "b flagged before reading the handed-over move"
            assert await b.ownership.view() is not None

            # Read and committed (what the handlers do): b owns everything, read up, and decides the game.
            read = TopicPartition(moved, 0)
            await until_polled(lambda: read in b.moves.assignment(), [b.moves], "b lost partition 0 again", timeout=60)

            async def moved_read() -> bool:
                await b.moves.getmany(read, timeout_ms=200)
                return await b.moves.position(read) >= 1

            await eventually(moved_read, "b read the move left on partition 0", timeout=60)
            await b.moves.commit()
            assert await b.ownership.view() is None, "a lone replica read up decides every game"
            await b.poller.fire_due()
            assert await flags_saved(backend.pool, on_first) == 1
        finally:
            await producer.stop()
            for consumer in [*a.consumers, *b.consumers]:
                await consumer.stop()
