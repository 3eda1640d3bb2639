"""What the broker says of its topics and consumer groups, and the series kafka-exporter serves for it.

Pure: no I/O. `series(view)` gives every metric family with its samples, under kafka-exporter's
names and labels and with its conventions: a group is served for a topic only once it has
committed an offset on one of the topic's partitions; on a partition of such a topic where it has
committed nothing, its offset and its lag read -1 (so that a partition nobody reads can be alerted
on), and the lag sums leave those partitions out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

# The offset a group has committed on a partition where it has committed nothing.
NO_OFFSET = -1


@dataclass(frozen=True)
class PartitionOffsets:
    """A partition's oldest offset still stored and its end (one past its last record)."""

    oldest: int
    end: int


@dataclass(frozen=True)
class GroupState:
    """One consumer group: its live members and what it has committed, by (topic, partition)."""

    name: str
    members: int
    committed: Mapping[tuple[str, int], int] = field(default_factory=dict)


@dataclass(frozen=True)
class BrokerView:
    """One look at the broker: how many brokers answer, every partition's offsets, every group's commits."""

    brokers: int
    partitions: Mapping[tuple[str, int], PartitionOffsets]
    groups: tuple[GroupState, ...] = ()


@dataclass(frozen=True)
class Family:
    """One metric family: its name, help, label names and samples (label values, value)."""

    name: str
    help: str
    labels: tuple[str, ...]
    samples: tuple[tuple[tuple[str, ...], float], ...] = ()


@dataclass(frozen=True)
class NameFilter:
    """kafka-exporter's filter of group or topic names: served when it matches `keep` and not `drop`."""

    keep: str = ".*"
    drop: str = "^$"

    def admits(self, name: str) -> bool:
        """Whether `name` is served; like kafka-exporter's, the patterns match anywhere in it unless anchored."""
        return re.search(self.keep, name) is not None and re.search(self.drop, name) is None


def series(view: BrokerView | None) -> list[Family]:
    """Every family kafka-exporter serves for groups and topics, with `view`'s samples (none without a view)."""
    brokers: list[tuple[tuple[str, ...], float]] = []
    partition_counts: dict[str, int] = {}
    ends: list[tuple[tuple[str, ...], float]] = []
    oldest: list[tuple[tuple[str, ...], float]] = []
    members: list[tuple[tuple[str, ...], float]] = []
    current: list[tuple[tuple[str, ...], float]] = []
    current_sums: list[tuple[tuple[str, ...], float]] = []
    lags: list[tuple[tuple[str, ...], float]] = []
    lag_sums: list[tuple[tuple[str, ...], float]] = []
    if view is not None:
        brokers.append(((), float(view.brokers)))
        for (topic, partition), offsets in sorted(view.partitions.items()):
            partition_counts[topic] = partition_counts.get(topic, 0) + 1
            ends.append(((topic, str(partition)), float(offsets.end)))
            oldest.append(((topic, str(partition)), float(offsets.oldest)))
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(view.partitions):
            by_topic.setdefault(topic, []).append(partition)
        for group in sorted(view.groups, key=lambda g: g.name):
            members.append(((group.name,), float(group.members)))
            for topic, partitions in by_topic.items():
                committed = {p: group.committed.get((topic, p), NO_OFFSET) for p in partitions}
                if all(offset == NO_OFFSET for offset in committed.values()):
                    continue  # the group does not read this topic
                offset_sum = lag_sum = 0
                for partition, offset in committed.items():
                    lag = NO_OFFSET if offset == NO_OFFSET else view.partitions[(topic, partition)].end - offset
                    labels = (group.name, topic, str(partition))
                    current.append((labels, float(offset)))
                    lags.append((labels, float(lag)))
                    offset_sum += offset
                    if offset != NO_OFFSET:
                        lag_sum += lag
                current_sums.append(((group.name, topic), float(offset_sum)))
                lag_sums.append(((group.name, topic), float(lag_sum)))
    return [
        Family("kafka_brokers", "Number of brokers in the Kafka cluster.", (), tuple(brokers)),
        Family("kafka_topic_partitions", "Number of partitions of the topic.", ("topic",),
               tuple(((topic,), float(count)) for topic, count in partition_counts.items())),
        Family("kafka_topic_partition_current_offset", "End of the partition: one past its last record.",
               ("topic", "partition"), tuple(ends)),
        Family("kafka_topic_partition_oldest_offset", "Oldest offset still stored in the partition.",
               ("topic", "partition"), tuple(oldest)),
        Family("kafka_consumergroup_members", "Members of the consumer group.", ("consumergroup",), tuple(members)),
        Family("kafka_consumergroup_current_offset",
               "Offset the consumer group has committed on the partition (-1: none yet).",
               ("consumergroup", "topic", "partition"), tuple(current)),
        Family("kafka_consumergroup_current_offset_sum",
               "Offsets the consumer group has committed on the topic, summed over its partitions.",
               ("consumergroup", "topic"), tuple(current_sums)),
        Family("kafka_consumergroup_lag",
               "Records of the partition after the group's committed offset (-1: it has committed none there).",
               ("consumergroup", "topic", "partition"), tuple(lags)),
        Family("kafka_consumergroup_lag_sum",
               "The group's lag on the topic, summed over the partitions where it has committed.",
               ("consumergroup", "topic"), tuple(lag_sums)),
    ]

