"""DrawOpening over gRPC against the real service: modes, idempotency, O-10 no-repeat, races, durability."""

from __future__ import annotations

import asyncio
import time
import urllib.request
import uuid

import grpc
import pytest
from aiokafka import AIOKafkaProducer

from arbiter.contracts import common_pb2, openings_pb2, openings_pb2_grpc
from arbiter.contracts import events_pb2 as ev
from arbiter.draughts import Position
from arbiter.openings import draw_opening, eligible, get_opening, initial_fen, load_table
from arbiter.openings.modes import OpeningMode as M

TOURNAMENT = common_pb2.COMPETITION_KIND_TOURNAMENT
ARENA = common_pb2.COMPETITION_KIND_ARENA
PROTO_MODE = {mode: common_pb2.OpeningMode.Value("OPENING_MODE_" + mode.value.upper()) for mode in M}


def new_id(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def draw(competition_id: str, round_: int, variant: str, mode: M, *, no_repeat: bool = False,
         thematic: int = 0, kind: int = TOURNAMENT) -> openings_pb2.DrawOpeningRequest:
    return openings_pb2.DrawOpeningRequest(
        competition=common_pb2.CompetitionRef(kind=kind, id=competition_id, round=round_),
        variant=variant, mode=PROTO_MODE[mode], thematic_opening=thematic, no_repeat=no_repeat,
    )


def stub(channel: grpc.aio.Channel) -> openings_pb2_grpc.OpeningServiceStub:
    return openings_pb2_grpc.OpeningServiceStub(channel)


def replay(variant: str, moves) -> str:
    """The FEN reached by playing `moves` with our rules engine from the initial position."""
    position = Position.initial(variant)
    for move in moves:
        position = position.play(move)
    return position.to_fen()


def metric(url: str, name: str, **labels: str) -> float:
    """One sample of the service's /metrics (0 when absent)."""
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    wanted = [f'{key}="{value}"' for key, value in labels.items()]
    for line in text.splitlines():
        if line.startswith(name + "{") and all(part in line for part in wanted):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def stored_rows(db, competition_id: str) -> list:
    return await db.fetch(
        "SELECT round, number, moves, fen, mode FROM opening_draws WHERE competition_id = $1 ORDER BY round",
        competition_id,
    )


async def test_every_mode_returns_moves_and_the_fen_they_reach(openings) -> None:
    """O-1..O-9: each mode's opening, checked against the tables and replayed with the engine."""
    stack = openings
    async with grpc.aio.insecure_channel(stack.services["openings"].grpc_address) as channel:
        service = stub(channel)
        # O-1: free play starts from the initial position, any variant.
        free = (await service.DrawOpening(draw(new_id(), 1, "international", M.FREE))).opening
        assert list(free.moves) == [] and free.fen == initial_fen("international") and free.number == 0
        # O-2..O-4: k random legal moves in any variant (replaying them proves they are legal).
        for variant in ("international", "russian", "italian", "english"):
            for plies, mode in ((1, M.RANDOM_1), (2, M.RANDOM_2), (3, M.RANDOM_3)):
                opening = (await service.DrawOpening(draw(new_id(), 1, variant, mode))).opening
                assert len(opening.moves) == plies and opening.number == 0 and opening.class_label == ""
                assert opening.fen == replay(variant, opening.moves) and opening.mode == PROTO_MODE[mode]
        # O-5..O-8: a table opening within the mode's ceiling, italian and english ("checkers" is english).
        for variant in ("italian", "english", "checkers"):
            for mode, ceiling in ((M.TABLE_UP_TO_1, 1), (M.TABLE_UP_TO_2, 2), (M.TABLE_UP_TO_3, 3), (M.TABLE_ALL, 4)):
                opening = (await service.DrawOpening(draw(new_id(), 1, variant, mode))).opening
                official = get_opening(variant, opening.number)
                assert opening.number in {o.number for o in eligible(load_table(variant), mode)}
                assert opening.level <= ceiling and opening.class_label == official.class_label
                assert tuple(opening.moves) == official.moves and opening.fen == official.fen_after
                assert opening.fen == replay(variant, opening.moves) and opening.variant == official.variant
        # O-9: the chosen opening, in every round; O-10 does not apply.
        thematic_id = new_id()
        for round_ in (1, 2, 3):
            opening = (
                await service.DrawOpening(draw(thematic_id, round_, "italian", M.THEMATIC, thematic=131))
            ).opening
            assert opening.number == 131 and tuple(opening.moves) == get_opening("italian", 131).moves
        # Arenas draw with round 0 (or their own counter).
        arena = (await service.DrawOpening(draw(new_id("a"), 0, "english", M.TABLE_UP_TO_2, kind=ARENA))).opening
        assert 1 <= arena.number <= 174


async def test_repeated_draw_returns_the_same_opening_and_other_settings_draw_apart(
    openings, openings_db
) -> None:
    """O-10, O-11: one opening per round; both home-and-away games ask and get the same one.

    A draw of the same round under other settings (someone else's call) is kept apart: it never
    replaces the round's own draw nor makes the competition's own request be refused.
    """
    stack = openings
    tournament = new_id()
    async with grpc.aio.insecure_channel(stack.services["openings"].grpc_address) as channel:
        service = stub(channel)
        foreign = (await service.DrawOpening(draw(tournament, 2, "italian", M.RANDOM_1))).opening
        first = (await service.DrawOpening(draw(tournament, 2, "italian", M.TABLE_ALL))).opening
        # The pure draw seeded with the key is what the service stored.
        assert first.number == draw_opening("italian", M.TABLE_ALL, seed=f"tournament:{tournament}:2").number
        for _game_in_pairing in (1, 2):
            again = (await service.DrawOpening(draw(tournament, 2, "italian", M.TABLE_ALL))).opening
            assert again == first
        # The stored draw is returned whatever no_repeat says now.
        assert (await service.DrawOpening(draw(tournament, 2, "italian", M.TABLE_ALL, no_repeat=True))).opening == first
        assert (await service.DrawOpening(draw(tournament, 2, "italian", M.RANDOM_1))).opening == foreign
        english = (await service.DrawOpening(draw(tournament, 2, "english", M.TABLE_ALL))).opening
        assert english.variant == "english"
        thematic = new_id()
        seven = (await service.DrawOpening(draw(thematic, 1, "english", M.THEMATIC, thematic=7))).opening
        eight = (await service.DrawOpening(draw(thematic, 1, "english", M.THEMATIC, thematic=8))).opening
        assert (seven.number, eight.number) == (7, 8)
        assert (await service.DrawOpening(draw(thematic, 1, "english", M.THEMATIC, thematic=7))).opening == seven
    rows = await openings_db.fetch(
        "SELECT round, variant, mode, number FROM opening_draws WHERE competition_id = $1", tournament)
    assert sorted((row["round"], row["variant"], row["mode"], row["number"] or 0) for row in rows) == [
        (2, "english", "table_all", english.number), (2, "italian", "random_1", 0),
        (2, "italian", "table_all", first.number)]
    metrics_url = stack.services["openings"].metrics_url
    labels = {"service": "openings", "variant": "italian", "mode": "table_all"}
    assert metric(metrics_url, "arbiter_opening_draws_total", outcome="drawn", **labels) >= 1
    assert metric(metrics_url, "arbiter_opening_draws_total", outcome="repeated", **labels) >= 3


def repeating_tournament_id(mode: M, rounds: int) -> str:
    """A tournament id whose unconstrained draws would repeat an opening (so no_repeat is really tested)."""
    for _attempt in range(200):
        candidate = new_id()
        numbers = [draw_opening("italian", mode, seed=f"tournament:{candidate}:{r}").number
                   for r in range(1, rounds + 1)]
        if len(set(numbers)) < rounds:
            return candidate
    raise AssertionError("no repeating seed found")


async def test_a_swiss_never_draws_an_opening_twice_in_eleven_rounds(openings, openings_db) -> None:
    """O-10: 11 rounds (T-9 maximum plus T-11) of a Swiss, one after the other and all at once."""
    stack = openings
    address = stack.services["openings"].grpc_address
    sequential = repeating_tournament_id(M.TABLE_UP_TO_1, 11)
    concurrent = repeating_tournament_id(M.TABLE_UP_TO_1, 11)
    round_robin = new_id()
    async with grpc.aio.insecure_channel(address) as channel:
        service = stub(channel)
        numbers = [(await service.DrawOpening(draw(sequential, r, "italian", M.TABLE_UP_TO_1, no_repeat=True)))
                   .opening.number for r in range(1, 12)]
        assert len(set(numbers)) == 11
        assert all(get_opening("italian", n).level <= 1 for n in numbers)
        # Rounds asked for together (e.g. by two pairing replicas) still exclude each other.
        replies = await asyncio.gather(*(
            service.DrawOpening(draw(concurrent, r, "italian", M.TABLE_UP_TO_1, no_repeat=True)) for r in range(1, 12)
        ))
        assert len({reply.opening.number for reply in replies}) == 11
        # A round robin (no_repeat off) plays the pure seeded draws, repeats included.
        rr = [(await service.DrawOpening(draw(round_robin, r, "italian", M.TABLE_UP_TO_1))).opening.number
              for r in range(1, 12)]
        assert rr == [draw_opening("italian", M.TABLE_UP_TO_1, seed=f"tournament:{round_robin}:{r}").number
                      for r in range(1, 12)]
    assert [row["number"] for row in await stored_rows(openings_db, sequential)] == numbers


async def test_many_clients_on_two_replicas_drawing_the_same_round_agree(
    openings, second_openings, openings_db
) -> None:
    """Two replicas on one database and 24 clients racing each round: one draw, stored once."""
    replicas = [openings, second_openings]
    addresses = [stack.services["openings"].grpc_address for stack in replicas]
    channels = [grpc.aio.insecure_channel(addresses[i % 2]) for i in range(24)]
    try:
        for variant, mode in (("italian", M.TABLE_ALL), ("international", M.RANDOM_3), ("english", M.TABLE_UP_TO_2)):
            tournament = new_id()
            replies = await asyncio.gather(*(
                stub(channel).DrawOpening(draw(tournament, 1, variant, mode, no_repeat=True)) for channel in channels
            ))
            assert len({reply.opening.SerializeToString() for reply in replies}) == 1
            rows = await stored_rows(openings_db, tournament)
            assert len(rows) == 1 and list(rows[0]["moves"]) == list(replies[0].opening.moves)
    finally:
        for channel in channels:
            await channel.close()


async def test_draws_survive_a_killed_service(openings, openings_db) -> None:
    """Durable: after SIGKILL and restart the same rounds return the same openings and O-10 still holds."""
    stack = openings
    address = stack.services["openings"].grpc_address
    tournament = new_id()
    async with grpc.aio.insecure_channel(address) as channel:
        before = [(await stub(channel).DrawOpening(draw(tournament, r, "english", M.TABLE_UP_TO_1, no_repeat=True)))
                  .opening for r in (1, 2, 3)]
    stack.kill_service("openings")
    stack.start_service("openings")
    await asyncio.to_thread(stack.wait_serving, 60, ["openings"])
    async with grpc.aio.insecure_channel(address) as channel:
        after = [(await stub(channel).DrawOpening(draw(tournament, r, "english", M.TABLE_UP_TO_1, no_repeat=True)))
                 .opening for r in (1, 2, 3)]
        fourth = (await stub(channel).DrawOpening(draw(tournament, 4, "english", M.TABLE_UP_TO_1, no_repeat=True)))
    assert after == before
    assert fourth.opening.number not in {opening.number for opening in before}
    assert len(await stored_rows(openings_db, tournament)) == 4


async def test_a_cancelled_tournament_forgets_its_draws_once(openings, openings_db, infra_env) -> None:
    """tournament.cancelled: the draws go, later draws are refused, a redelivered event changes nothing."""
    stack = openings
    service_info = stack.services["openings"]
    cancelled, kept = new_id(), new_id()
    async with grpc.aio.insecure_channel(service_info.grpc_address) as channel:
        for tournament in (cancelled, kept):
            for round_ in (1, 2):
                await stub(channel).DrawOpening(draw(tournament, round_, "italian", M.TABLE_UP_TO_2, no_repeat=True))
        event = ev.TournamentCancelled(tournament_id=cancelled, reason="fewer entrants than the minimum (T-3)")
        event.meta.event_id = uuid.uuid4().hex
        producer = AIOKafkaProducer(bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"])
        await producer.start()
        try:
            for _delivery in (1, 2):  # at-least-once: the same event twice
                await producer.send_and_wait("tournament.cancelled", event.SerializeToString(), key=cancelled.encode())
        finally:
            await producer.stop()
        deadline = time.monotonic() + 30
        labels = {"service": "openings", "topic": "tournament.cancelled"}
        while metric(service_info.metrics_url, "arbiter_events_consumed_total", outcome="duplicate", **labels) < 1:
            assert time.monotonic() < deadline, "the cancellation was not consumed twice in time"
            await asyncio.sleep(0.1)
        assert metric(service_info.metrics_url, "arbiter_events_consumed_total", outcome="handled", **labels) == 1
        assert await stored_rows(openings_db, cancelled) == []
        assert len(await stored_rows(openings_db, kept)) == 2
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub(channel).DrawOpening(draw(cancelled, 3, "italian", M.TABLE_UP_TO_2, no_repeat=True))
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert f"tournament {cancelled} was cancelled (fewer entrants than the minimum (T-3))" in (
            refused.value.details()
        )
    assert await stored_rows(openings_db, cancelled) == []


async def test_a_new_draw_publishes_one_opening_drawn_event(openings, infra_env) -> None:
    """Each new draw is published once as opening.drawn through the outbox; a repeated draw publishes nothing."""
    from aiokafka import AIOKafkaConsumer

    from arbiter.contracts import events_pb2

    competition_id = new_id()
    async with grpc.aio.insecure_channel(openings.services["openings"].grpc_address) as channel:
        service = stub(channel)
        first = (await service.DrawOpening(draw(competition_id, 1, "italian", M.TABLE_UP_TO_1))).opening
        await service.DrawOpening(draw(competition_id, 1, "italian", M.TABLE_UP_TO_1))
    consumer = AIOKafkaConsumer(
        "opening.drawn", bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], auto_offset_reset="earliest",
        group_id=None, enable_auto_commit=False,
    )
    await consumer.start()
    seen: list[events_pb2.OpeningDrawn] = []
    try:
        deadline = asyncio.get_running_loop().time() + 20
        while asyncio.get_running_loop().time() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                for record in records:
                    event = events_pb2.OpeningDrawn.FromString(record.value)
                    if event.competition_id == competition_id:
                        seen.append(event)
            if seen:
                await asyncio.sleep(1)  # a second (wrong) event would arrive right behind the first
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    seen += [e for e in (events_pb2.OpeningDrawn.FromString(r.value) for r in records)
                             if e.competition_id == competition_id]
                break
    finally:
        await consumer.stop()
    assert len(seen) == 1
    assert seen[0].opening.number == first.number and seen[0].competition.round == 1 and seen[0].meta.event_id


async def test_a_cancellation_without_an_event_id_is_applied_not_refused_for_ever(openings, openings_db,
                                                                                    infra_env) -> None:
    """A producer's bug (no event id): deduplicated under pairing's own id for it, and the partition moves on."""
    address = openings.services["openings"].grpc_address
    cancelled = new_id()
    async with grpc.aio.insecure_channel(address) as channel:
        await stub(channel).DrawOpening(draw(cancelled, 1, "italian", M.TABLE_UP_TO_2, no_repeat=True))
        event = ev.TournamentCancelled(tournament_id=cancelled, reason="no event id")
        producer = AIOKafkaProducer(bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"])
        await producer.start()
        try:
            for _delivery in (1, 2):
                await producer.send_and_wait("tournament.cancelled", event.SerializeToString(), key=cancelled.encode())
        finally:
            await producer.stop()
        deadline = time.monotonic() + 30
        while await stored_rows(openings_db, cancelled):
            assert time.monotonic() < deadline, "the cancellation without an event id was never applied"
            await asyncio.sleep(0.1)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub(channel).DrawOpening(draw(cancelled, 2, "italian", M.TABLE_UP_TO_2, no_repeat=True))
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
