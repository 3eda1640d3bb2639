"""The lag exporter's series: kafka-exporter's names, labels and conventions, from one look at the broker."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter_tools.lagexporter.settings import LagExporterSettings
from arbiter_tools.lagexporter.view import NO_OFFSET, BrokerView, GroupState, NameFilter, PartitionOffsets, series


def samples(view: BrokerView | None) -> dict[str, dict[tuple[str, ...], float]]:
    return {family.name: dict(family.samples) for family in series(view)}


VIEW = BrokerView(
    brokers=1,
    partitions={("game.finished", 0): PartitionOffsets(0, 40), ("game.finished", 1): PartitionOffsets(5, 12),
                ("tournament.cancelled", 0): PartitionOffsets(0, 3)},
    groups=(
        GroupState("rating", 2, {("game.finished", 0): 31, ("game.finished", 1): 12}),
        # Committed on one partition of the topic only: the other reads -1.
        GroupState("pairing", 1, {("game.finished", 0): 40}),
        # Joined, committed nothing yet: members only.
        GroupState("openings", 1, {}),
    ),
)


def test_every_family_is_served_even_before_the_first_look() -> None:
    families = series(None)
    assert [family.name for family in families] == [family.name for family in series(VIEW)]
    assert all(not family.samples for family in families)


def test_partition_ends_counts_and_oldest_offsets() -> None:
    found = samples(VIEW)
    assert found["kafka_brokers"] == {(): 1.0}
    assert found["kafka_topic_partitions"] == {("game.finished",): 2.0, ("tournament.cancelled",): 1.0}
    assert found["kafka_topic_partition_current_offset"] == {
        ("game.finished", "0"): 40.0, ("game.finished", "1"): 12.0, ("tournament.cancelled", "0"): 3.0}
    assert found["kafka_topic_partition_oldest_offset"][("game.finished", "1")] == 5.0


def test_lag_is_the_end_less_the_committed_offset_per_group_topic_and_partition() -> None:
    found = samples(VIEW)
    assert found["kafka_consumergroup_lag"][("rating", "game.finished", "0")] == 9.0
    assert found["kafka_consumergroup_lag"][("rating", "game.finished", "1")] == 0.0
    assert found["kafka_consumergroup_current_offset"][("rating", "game.finished", "0")] == 31.0
    assert found["kafka_consumergroup_lag_sum"][("rating", "game.finished")] == 9.0
    assert found["kafka_consumergroup_current_offset_sum"][("rating", "game.finished")] == 43.0
    assert found["kafka_consumergroup_members"] == {("openings",): 1.0, ("pairing",): 1.0, ("rating",): 2.0}


def test_a_partition_without_a_commit_reads_minus_one_and_stays_out_of_the_sums() -> None:
    found = samples(VIEW)
    assert found["kafka_consumergroup_lag"][("pairing", "game.finished", "1")] == NO_OFFSET
    assert found["kafka_consumergroup_current_offset"][("pairing", "game.finished", "1")] == NO_OFFSET
    assert found["kafka_consumergroup_lag_sum"][("pairing", "game.finished")] == 0.0
    # kafka-exporter adds the -1 into the offset sum: so do we, for the same numbers.
    assert found["kafka_consumergroup_current_offset_sum"][("pairing", "game.finished")] == 39.0


def test_a_group_is_served_only_on_topics_where_it_has_committed() -> None:
    found = samples(VIEW)
    topics = {(group, topic) for group, topic, _partition in found["kafka_consumergroup_lag"]}
    assert topics == {("rating", "game.finished"), ("pairing", "game.finished")}


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6))
def test_lag_plus_committed_offset_is_the_end(oldest: int, length: int, read: int) -> None:
    end = oldest + length
    committed = min(oldest + read, end)
    view = BrokerView(1, {("t", 0): PartitionOffsets(oldest, end)}, (GroupState("g", 1, {("t", 0): committed}),))
    found = samples(view)
    assert found["kafka_consumergroup_lag"][("g", "t", "0")] + committed == end
    assert found["kafka_consumergroup_lag"][("g", "t", "0")] >= 0


@pytest.mark.parametrize(("keep", "drop", "name", "served"), [
    (".*", "^$", "rating", True),
    (".*", "^__", "__consumer_offsets", False),
    (".*", "^__", "game__finished", True),
    ("rating", "^$", "chaos-1.rating", True),  # unanchored, as kafka-exporter's
    ("^rating$", "^$", "chaos-1.rating", False),
    (".*", "playsite", "dash1-playsite", False),
])
def test_name_filters_mean_what_kafka_exporters_mean(keep: str, drop: str, name: str, served: bool) -> None:
    assert NameFilter(keep, drop).admits(name) is served


def test_settings_refuse_a_filter_that_is_no_regular_expression(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
    monkeypatch.setenv("LAG_EXPORTER_GROUP_FILTER", "rating(")
    with pytest.raises(ValueError, match="not a regular expression"):
        LagExporterSettings()
