"""A consumer tells whether it keeps up (kit.poison.ConsumerGuard -> ConsumerNews): a batch failing for an
outage stalls it, a batch handled releases it; a batch that is the events' own fault does neither."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from aiokafka.structs import ConsumerRecord

from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.metrics import Metrics
from arbiter.kit.poison import Accepted, ConsumerGuard, Rejected, SetAside


class KeptHere(SetAside):
    """Set-aside records kept in a list (the guard's own bookkeeping is what is under test)."""

    def __init__(self) -> None:
        super().__init__(Metrics("news-test"))
        self.kept: list[Rejected] = []

    async def _keep(self, group: str, rejected: Sequence[Rejected]) -> list[Rejected]:
        self.kept += rejected
        return list(rejected)


class Told:
    def __init__(self) -> None:
        self.said: list[tuple[str, str]] = []

    def stalled(self, consumer: str) -> None:
        self.said.append(("stalled", consumer))

    def handled(self, consumer: str) -> None:
        self.said.append(("handled", consumer))


def _batch() -> Accepted:
    event = ev.MoveMade(game_id="g-1", ply=1)
    record = ConsumerRecord(events.MOVE_MADE.name, 0, 7, 0, 0, b"g-1", event.SerializeToString(), None, 3, 10, ())
    return Accepted(records=[record], events=[event], traces=[""])


@pytest.fixture(autouse=True)
def _no_outage_pause(monkeypatch) -> None:
    monkeypatch.setattr("arbiter.kit.poison.OUTAGE_PAUSE_SECONDS", 0)


async def test_an_outage_stalls_the_consumer_and_the_next_batch_handled_releases_it() -> None:
    told = Told()
    guard = ConsumerGuard("clock.game.move_made", Metrics("news-test"), KeptHere(), [events.MOVE_MADE], 3, 0, told)
    calls = []

    async def handler(batch: list) -> None:
        calls.append(len(batch))
        if len(calls) == 1:
            raise ConnectionError("Redis out of reach")

    with pytest.raises(ConnectionError):
        await guard.run(events.MOVE_MADE.name, handler, _batch())
    assert told.said == [("stalled", "clock.game.move_made")]
    await guard.run(events.MOVE_MADE.name, handler, _batch())
    assert told.said == [("stalled", "clock.game.move_made"), ("handled", "clock.game.move_made")]


async def test_an_event_failing_on_its_own_neither_stalls_nor_counts_as_handled() -> None:
    told, kept = Told(), KeptHere()
    guard = ConsumerGuard("clock.game.move_made", Metrics("news-test"), kept, [events.MOVE_MADE], 2, 0, told)

    async def handler(batch: list) -> None:
        raise ValueError("a move the rules refuse")

    await guard.run(events.MOVE_MADE.name, handler, _batch())
    assert told.said == [] and len(kept.kept) == 1
