"""The pure decision of which keys a replica may act on (arbiter.kit.partitions), as the clock's flag poller asks it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from arbiter.kit.partitions import caught_up, co_partitioned, key_settled

LIFECYCLE = ("game.finished", "game.started")
MOVES = ("game.move_made",)


def _group(tokens: list[str], topics: tuple[str, ...], tag: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """One consumer group: a member per token, with member ids of its own (different in every group)."""
    return {f"{tag}-{index}-{token}": (token, topics) for index, token in enumerate(tokens)}


def _holder(layout: dict[str, dict[str, list[int]]], members: dict[str, tuple[str, tuple[str, ...]]],
            topic: str, partition: int) -> str:
    (member,) = [member for member, topics in layout.items() if partition in topics.get(topic, [])]
    return members[member][0]


@given(tokens=st.lists(st.text("abcdef0123456789", min_size=1, max_size=8), min_size=1, max_size=5, unique=True),
       count=st.integers(min_value=1, max_value=12))
def test_every_group_of_the_same_replicas_gives_a_partition_number_to_one_replica(tokens: list[str],
                                                                                    count: int) -> None:
    lifecycle = _group(tokens, LIFECYCLE, "life")
    # The moves group's member ids sort in another order than the lifecycle group's.
    moves = _group(list(reversed(tokens)), MOVES, "zz-move")
    partitions = {topic: range(count) for topic in (*LIFECYCLE, *MOVES)}
    life_layout = co_partitioned(lifecycle, {t: partitions[t] for t in LIFECYCLE})
    move_layout = co_partitioned(moves, {t: partitions[t] for t in MOVES})
    for partition in range(count):
        holders = {_holder(life_layout, lifecycle, topic, partition) for topic in LIFECYCLE}
        holders.add(_holder(move_layout, moves, MOVES[0], partition))
        assert len(holders) == 1, (partition, holders)
    # Every replica gets a share when there are enough partitions.
    if count >= len(tokens):
        assert all(life_layout[member] for member in lifecycle)


def test_a_topic_goes_only_to_members_that_subscribe_to_it() -> None:
    members = {"m1": ("a", {"game.finished"}), "m2": ("b", {"game.finished", "game.started"})}
    layout = co_partitioned(members, {"game.finished": [0, 1], "game.started": [0, 1]})
    assert layout == {"m1": {"game.finished": [0]}, "m2": {"game.finished": [1], "game.started": [0, 1]}}


def test_a_partition_is_read_up_once_the_committed_offset_reaches_its_end_at_the_handover() -> None:
    assert not caught_up(None, 10)  # its end offset is not read yet
    assert caught_up(0, None)  # empty when handed over
    assert not caught_up(5, None)  # never committed: the previous holder's events are unread
    assert not caught_up(5, 4)
    assert caught_up(5, 5)
    assert caught_up(5, 9)


def test_a_key_is_settled_only_where_each_of_its_topics_partitions_is() -> None:
    placed = {"game.finished": 1, "game.move_made": 1}
    assert key_settled(placed, {"game.finished": {0, 1}, "game.move_made": {1}})
    # The moves' partition is held by another replica (or not read up yet): a move may be waiting there.
    assert not key_settled(placed, {"game.finished": {1}, "game.move_made": {0}})
    assert not key_settled(placed, {"game.finished": {1}})
    assert key_settled({}, {})
