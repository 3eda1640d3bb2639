"""The kit picks the partition aiokafka's default partitioner would pick for a key."""

from __future__ import annotations

from aiokafka.partitioner import DefaultPartitioner
from hypothesis import given
from hypothesis import strategies as st

from arbiter.kit.kafka import partition_for_key


@given(key=st.binary(min_size=1, max_size=64), count=st.integers(min_value=2, max_value=64))
def test_several_partitions_follow_the_default_partitioner(key: bytes, count: int) -> None:
    partitions = list(range(count))
    assert partition_for_key(key, partitions) == DefaultPartitioner()(key, partitions, partitions)


@given(key=st.binary(max_size=64), only=st.integers(min_value=0, max_value=1000))
def test_one_partition_takes_every_key(key: bytes, only: int) -> None:
    assert partition_for_key(key, [only]) == only
