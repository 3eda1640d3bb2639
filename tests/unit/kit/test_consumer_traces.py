"""The consumers' boundary runs each handler call in the trace scope of its events (arbiter.kit.poison, .trace).

ConsumerGuard on records made here and a set-aside that only logs: no broker or database is
involved in deciding which chain each handler call, event and log line belongs to.
"""

from __future__ import annotations

import logging

from aiokafka.structs import ConsumerRecord

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.events import CLOCK_STATE, GAME_FINISHED, stamp_meta
from arbiter.kit.metrics import Metrics
from arbiter.kit.poison import ConsumerGuard, LoggedSetAside
from arbiter.kit.trace import TRACE_HEADER, current_scope, current_trace_id


def record(offset: int, game_id: str, *, event_id: str = "", trace: str = "", header: bytes | None = None,
           value: bytes | None = None) -> ConsumerRecord:
    event = ev.GameFinished(game_id=game_id)
    event.meta.event_id = event_id or f"{game_id}/finished"
    event.meta.trace_id = trace
    payload = event.SerializeToString() if value is None else value
    headers = [("event-id", event.meta.event_id.encode())] + ([(TRACE_HEADER, header)] if header is not None else [])
    return ConsumerRecord(topic=GAME_FINISHED.name, partition=0, offset=offset, timestamp=1_700_000_000_000,
                          timestamp_type=0, key=game_id.encode(), value=payload, checksum=None,
                          serialized_key_size=len(game_id), serialized_value_size=len(payload), headers=headers)


def guard(name: str) -> ConsumerGuard:
    metrics = Metrics(name)
    return ConsumerGuard("rating", metrics, LoggedSetAside(metrics), [GAME_FINISHED], max_attempts=1,
                         backoff_seconds=0.0)


async def test_a_handler_call_runs_in_its_events_chains_and_each_event_names_its_own(service_log) -> None:
    records = [record(0, "g-1", trace="t-1"), record(1, "g-2", header=b"t-2"), record(2, "g-3"),
               record(3, "g-4", trace="t-1")]
    seen: list[tuple[tuple[str, ...], str, list[str]]] = []

    async def handler(events: list[ev.GameFinished]) -> str:
        scope = current_scope()
        assert scope is not None
        seen.append((scope.ids, current_trace_id(), [event.meta.trace_id for event in events]))
        logging.getLogger("services.rating.handlers").info("rated a batch")
        return "handled"

    consumer = guard("trace_batch")
    for topic, accepted in (await consumer.intake(records)).items():
        await consumer.run(topic, handler, accepted)

    # The meta first, then the header, then the event's own id: what the handler reads in each meta.
    assert seen == [(("t-1", "t-2", "g-3/finished"), "", ["t-1", "t-2", "g-3/finished", "t-1"])]
    assert current_scope() is None
    handler_line = next(line for line in service_log.lines() if line["msg"] == "rated a batch")
    assert handler_line["trace_ids"] == ["t-1", "t-2", "g-3/finished"]
    handled = next(line for line in service_log.lines() if line["msg"] == "events handled")
    assert handled["trace_ids"] == ["t-1", "t-2", "g-3/finished"] and handled["events"] == 4


async def test_a_batch_of_one_chain_is_that_chain_for_its_handler_and_the_events_it_adds() -> None:
    records = [record(0, "g-1", trace="t-1"), record(1, "g-2", trace="t-1")]
    added: list[str] = []

    async def handler(events: list[ev.GameFinished]) -> str:
        added.append(stamp_meta(ev.RatingUpdated(player_id="p"), "rating", events[0].finished_at).meta.trace_id)
        return "handled"

    consumer = guard("trace_single")
    for topic, accepted in (await consumer.intake(records)).items():
        await consumer.run(topic, handler, accepted)
    assert added == ["t-1"]


async def test_in_a_batch_of_several_chains_an_event_added_about_a_batch_events_aggregate_follows_it() -> None:
    records = [record(0, "g-1", trace="t-1"), record(1, "g-2", trace="t-2")]
    added: dict[str, str] = {}

    async def handler(events: list[ev.GameFinished]) -> str:
        for game_id in ("g-2", "g-1", "g-other"):
            state = ev.ClockState(game_id=game_id)
            state.meta.event_id = f"state:{game_id}"
            added[game_id] = stamp_meta(state, "clock", events[0].finished_at).meta.trace_id
        return "handled"

    consumer = guard("trace_keys")
    for topic, accepted in (await consumer.intake(records)).items():
        await consumer.run(topic, handler, accepted)
    assert CLOCK_STATE.key_field == GAME_FINISHED.key_field == "game_id"
    assert added == {"g-2": "t-2", "g-1": "t-1", "g-other": "state:g-other"}


async def test_the_halves_and_the_event_set_aside_each_run_in_their_own_chains(service_log) -> None:
    records = [record(offset, f"g-{offset}", trace=f"t-{offset}") for offset in range(4)]
    scopes: list[tuple[str, ...]] = []

    async def handler(events: list[ev.GameFinished]) -> str:
        scope = current_scope()
        assert scope is not None
        scopes.append(scope.ids)
        if any(event.game_id == "g-2" for event in events):
            raise RuntimeError("a bug on g-2")
        return "handled"

    consumer = guard("trace_halves")
    for topic, accepted in (await consumer.intake(records)).items():
        await consumer.run(topic, handler, accepted)

    assert scopes == [("t-0", "t-1", "t-2", "t-3"), ("t-0", "t-1"), ("t-2", "t-3"), ("t-2",), ("t-3",)]
    lines = service_log.lines()
    halving = next(line for line in lines if str(line["msg"]).startswith("handler failed on every attempt"))
    assert halving["trace_ids"] == ["t-0", "t-1", "t-2", "t-3"]
    [set_aside] = [line for line in lines if str(line["msg"]).startswith("record set aside")]
    assert (set_aside["trace_id"], set_aside["offset"]) == ("t-2", 2)


async def test_a_record_set_aside_at_the_boundary_is_logged_with_the_chain_its_header_names(service_log) -> None:
    consumer = guard("trace_boundary")
    accepted = await consumer.intake([record(0, "g-1", header=b"t-poison", value=b"\xff\xff not an event"),
                                      record(1, "g-2", value=b"\xff\xff not an event either")])
    assert accepted == {}
    set_aside = [line for line in service_log.lines() if str(line["msg"]).startswith("record set aside")]
    assert [(line["offset"], line.get("trace_id")) for line in set_aside] == [(0, "t-poison"), (1, None)]
