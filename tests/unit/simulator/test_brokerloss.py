"""The play site's log of what it published, for a broker that lost its storage (brokerloss.PublishedLog)."""

from __future__ import annotations

from aiokafka import TopicPartition

from arbiter.kit.outbox import OutboxRecord
from arbiter_tools.simulator.playsite.brokerloss import PublishedLog

TP = TopicPartition("game.moved", 0)


def record(n: int) -> OutboxRecord:
    return OutboxRecord(id=0, topic="game.moved", key="g1", payload=b"p%d" % n, event_id=f"g1/m{n}",
                        event_type="GameMoved")


def test_the_first_acknowledged_event_is_the_anchor_until_the_broker_is_found_lost() -> None:
    log = PublishedLog(keep_seconds=60)
    log.acknowledged(record(1), TP, 7, now=10.0)
    log.acknowledged(record(2), TP, 8, now=11.0)
    assert log.anchor is not None and (log.anchor.offset, log.anchor.event_id) == (7, "g1/m1")
    assert [r.event_id for r in log.lost()] == ["g1/m1", "g1/m2"]
    assert log.anchor is None and len(log) == 0
    log.acknowledged(record(3), TP, 0, now=12.0)
    assert log.anchor is not None and log.anchor.event_id == "g1/m3"


def test_what_was_published_before_the_anchor_was_held_by_an_earlier_broker_and_stays() -> None:
    log = PublishedLog(keep_seconds=60)
    log.add([record(1)], now=5.0)  # a batch: no offset, no anchor
    log.acknowledged(record(2), TP, 3, now=6.0)
    log.add([record(3)], now=7.0)
    assert [r.event_id for r in log.lost()] == ["g1/m2", "g1/m3"]
    assert len(log) == 1


def test_events_older_than_the_keeping_time_are_forgotten() -> None:
    log = PublishedLog(keep_seconds=10)
    log.add([record(1)], now=0.0)
    log.add([record(2)], now=5.0)
    log.add([record(3)], now=12.0)
    assert [r.event_id for r in log.lost()] == ["g1/m2", "g1/m3"]
