"""Asking the broker, over the Kafka protocol, for its topics' ends and its consumer groups' commits."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from arbiter.kit.kafka import kafka_security
from arbiter_tools.lagexporter.settings import LagExporterSettings
from arbiter_tools.lagexporter.view import BrokerView, GroupState, NameFilter, PartitionOffsets

# How long one read of the last record batches waits for them. A batch that is there comes back
# with the first fetch; one that does not (its records deleted or compacted meanwhile) leaves the
# partition's end at its high watermark for this poll.
LAST_BATCH_WAIT_SECONDS = 2.0
# A record batch can be as large as the broker's message.max.bytes (about 1 MiB by default).
FETCH_BYTES = 4 * 1024 * 1024


class BrokerReader:
    """An admin client and a consumer of no group: enough to read every group's lag without joining one."""

    def __init__(self, settings: LagExporterSettings) -> None:
        self.settings = settings
        self.read_last_batch = settings.lag_exporter_read_last_batch
        self.groups = NameFilter(settings.lag_exporter_group_filter, settings.lag_exporter_group_exclude)
        self.topics = NameFilter(settings.lag_exporter_topic_filter, settings.lag_exporter_topic_exclude)
        self._clients: tuple[AIOKafkaAdminClient, AIOKafkaConsumer] | None = None
        self._coordinators: dict[str, int] = {}
        # By partition: the high watermark its last batch was read at, and the end that read found.
        self._last_batch_ends: dict[TopicPartition, tuple[int, int]] = {}
        self._cluster_id: str | None = None

    async def start(self) -> tuple[AIOKafkaAdminClient, AIOKafkaConsumer]:
        """The two clients, connected now if they are not yet (raises while the broker does not answer)."""
        if self._clients is not None:
            return self._clients
        settings = self.settings
        security = kafka_security(settings)
        admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap_servers,
                                    client_id="arbiter-lag-exporter", **security)
        # Reads offsets (ListOffsets) and, for tansu, each partition's last record batch.
        consumer = AIOKafkaConsumer(
            bootstrap_servers=settings.kafka_bootstrap_servers, client_id="arbiter-lag-exporter", group_id=None,
            enable_auto_commit=False, fetch_max_wait_ms=100, max_partition_fetch_bytes=FETCH_BYTES, **security)
        try:
            await admin.start()
            await consumer.start()
        except BaseException:
            await consumer.stop()
            await admin.close()
            raise
        self._clients = (admin, consumer)
        return self._clients

    async def stop(self) -> None:
        """Disconnect (the next read connects again)."""
        if self._clients is None:
            return
        admin, consumer = self._clients
        self._clients = None
        try:
            await consumer.stop()
        finally:
            await admin.close()

    async def forget(self) -> None:
        """After a failed read: disconnect, and drop what earlier reads learnt (group coordinators)."""
        self._coordinators.clear()
        await self.stop()

    async def read(self) -> BrokerView:
        """One look at every served topic's partitions and every served group's commits."""
        admin, consumer = await self.start()
        cluster = await admin.describe_cluster()
        if cluster.get("cluster_id") != self._cluster_id:
            # Another cluster behind the same address (a restarted memory broker): nothing learnt holds.
            self._cluster_id = cluster.get("cluster_id")
            self._last_batch_ends.clear()
            self._coordinators.clear()
        partitions = [
            TopicPartition(topic["topic"], part["partition"])
            for topic in await admin.describe_topics()
            if not topic["error_code"] and not topic["is_internal"] and self.topics.admits(topic["topic"])
            for part in topic["partitions"]
        ]
        offsets: dict[tuple[str, int], PartitionOffsets] = {}
        if partitions:
            high = await consumer.end_offsets(partitions)
            oldest = await consumer.beginning_offsets(partitions)
            ends = await self._true_ends(consumer, high, oldest) if self.read_last_batch else high
            offsets = {(tp.topic, tp.partition): PartitionOffsets(oldest[tp], ends[tp]) for tp in partitions}
        names = sorted({group for group, _protocol in await admin.list_consumer_groups()
                        if self.groups.admits(group)})
        groups = await self._groups(admin, names, partitions)
        return BrokerView(len(cluster.get("brokers", ())), offsets, tuple(groups))

    async def _groups(self, admin: AIOKafkaAdminClient, names: list[str], partitions: list[TopicPartition]
                      ) -> list[GroupState]:
        for name in names:
            if name not in self._coordinators:
                self._coordinators[name] = await admin.find_coordinator(name)
        # One group per DescribeGroups: aiokafka reads a version 3 answer (which brokers since Kafka 2.3
        # give, and tansu) as a version 2 one, four bytes short per group, which garbles every group
        # after the first and makes it drop the connection.
        described = await asyncio.gather(*(admin.describe_consumer_groups([name], self._coordinators[name])
                                           for name in names))
        members = {group["group"]: len(group["members"])
                   for responses in described for response in responses for group in response.to_object()["groups"]}
        commits = await asyncio.gather(*(self._committed(admin, name, partitions) for name in names))
        return [GroupState(name, members.get(name, 0), committed) for name, committed in zip(names, commits,
                                                                                           strict=True)]

    async def _committed(self, admin: AIOKafkaAdminClient, group: str, partitions: list[TopicPartition]
                         ) -> dict[tuple[str, int], int]:
        if not partitions:
            return {}
        # Every partition named, as kafka-exporter does: the form that asks for "all of the group's"
        # comes back from tansu as an answer aiokafka cannot decode.
        answer = await admin.list_consumer_group_offsets(group, self._coordinators[group], partitions)
        return {(tp.topic, tp.partition): meta.offset for tp, meta in answer.items()}

    async def _true_ends(self, consumer: AIOKafkaConsumer, high: dict[TopicPartition, int],
                         oldest: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Each partition's end, reading its last record batch once per high watermark (see the settings)."""
        ends = dict(high)
        to_read = []
        for tp, mark in high.items():
            known = self._last_batch_ends.get(tp)
            if known is not None and known[0] == mark:
                ends[tp] = known[1]
            elif mark > oldest[tp]:
                to_read.append(tp)
        if not to_read:
            return ends
        # Assigned only while read, then paused: the consumer fetches nothing between two polls.
        consumer.assign(to_read)
        for tp in to_read:
            consumer.seek(tp, high[tp] - 1)
        last: dict[TopicPartition, int] = {}
        deadline = time.monotonic() + LAST_BATCH_WAIT_SECONDS
        try:
            while len(last) < len(to_read) and time.monotonic() < deadline:
                waiting = [tp for tp in to_read if tp not in last]
                found: dict[TopicPartition, list[Any]] = await consumer.getmany(*waiting, timeout_ms=200)
                for tp, records in found.items():
                    if records:
                        last[tp] = max(record.offset for record in records)
        finally:
            consumer.pause(*to_read)
        for tp, offset in last.items():
            ends[tp] = max(high[tp], offset + 1)
            self._last_batch_ends[tp] = (high[tp], ends[tp])
        return ends
