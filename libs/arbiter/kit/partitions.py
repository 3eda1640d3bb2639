"""Which keys a replica may act on: the partitions it holds, laid out alike in every group, and read up to date.

A replica that decides on silence (the clock's flags) must have read every event
of the key first; those sit in the partitions of its consumer groups. So it acts on a key only
where it holds the key's partition of every topic it consumes, and has read each of them up to
where it stood when the partition was handed over (the previous holder's events in flight).
Pure: the Kafka side is `arbiter.kit.kafka.PartitionCatchUp` and `SettledKeys`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Set


def co_partitioned(members: Mapping[str, tuple[str, Collection[str]]],
                   partitions: Mapping[str, Collection[int]]) -> dict[str, dict[str, list[int]]]:
    """Partition `p` of every topic to one replica, the same in every group: {member: {topic: partitions}}.

    `members` maps each member id to its replica's token (the same in all groups of one process)
    and its subscribed topics. Partition `p` of a topic goes to the `p mod n`-th of the sorted
    tokens of the members that subscribe to it: groups whose members are the same replicas give
    each replica the same partition numbers, so one replica holds a key's partition of every
    topic (keys land on the same partition number in topics of the same partition count).
    """
    assignment: dict[str, dict[str, list[int]]] = {member: {} for member in members}
    for topic, topic_partitions in sorted(partitions.items()):
        by_token: dict[str, str] = {}
        for member, (token, topics) in sorted(members.items()):
            if topic in topics:
                by_token.setdefault(token, member)
        tokens = sorted(by_token)
        if not tokens:
            continue
        for partition in sorted(topic_partitions):
            member = by_token[tokens[partition % len(tokens)]]
            assignment[member].setdefault(topic, []).append(partition)
    return assignment


def caught_up(mark: int | None, committed: int | None) -> bool:
    """Whether a partition handed over when its end offset was `mark` has been read (and committed) that far."""
    if mark is None:
        return False
    return mark <= 0 or (committed is not None and committed >= mark)


def key_settled(key_partitions: Mapping[str, int], settled: Mapping[str, Set[int]]) -> bool:
    """Whether the key's partition of every topic (`key_partitions`: topic -> partition) is held and read up."""
    return all(partition in settled.get(topic, ()) for topic, partition in key_partitions.items())
