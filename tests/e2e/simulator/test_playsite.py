"""The play site alone on the real broker: it opens, plays and reports games, and yields to the clock."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.draughts import Game
from arbiter.kit import events
from arbiter.kit.kafka import ensure_topics
from arbiter.kit.timesource import TimeSource
from arbiter_tools.chaos import commit_at_ends
from arbiter_tools.simulator.behaviour import Behaviour, Profiles
from arbiter_tools.simulator.playsite.base import PlaySiteConfig
from arbiter_tools.simulator.playsite.router import PlaySite
from tests.support.polling import DEFAULT_TIMEOUT, eventually

pytestmark = pytest.mark.timeout(120)
WATCHED = (events.GAME_STARTED, events.MOVE_MADE, events.PRESENCE_CHANGED, events.GAME_FINISHED)


class Recorder:
    """Every event of the watched topics whose game id starts with `prefix`."""

    def __init__(self, bootstrap: str, prefix: str, topics: tuple[events.Topic, ...] = WATCHED) -> None:
        self.consumer = AIOKafkaConsumer(*(t.name for t in topics), bootstrap_servers=bootstrap,
                                         auto_offset_reset="earliest", group_id=None, enable_auto_commit=False)
        self.prefix = prefix
        self.seen: dict[str, list] = defaultdict(list)
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        await self.consumer.start()
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            for records in (await self.consumer.getmany(timeout_ms=100)).values():
                for record in records:
                    event = events.topic_named(record.topic).decode(record.value)
                    if event.game_id.startswith(self.prefix):
                        self.seen[event.game_id].append(event)

    async def wait_for(self, game_id: str, kind: type, timeout: float = DEFAULT_TIMEOUT) -> list:
        return await eventually(lambda: [e for e in self.seen[game_id] if isinstance(e, kind)],
                                f"a {kind.__name__} of {game_id}", timeout=timeout)

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.consumer.stop()


def _request(game_id: str, white: str, black: str) -> ev.GameRequested:
    request = ev.GameRequested(
        game_id=game_id, variant="international", white_id=white, black_id=black, rated=True,
        speed=common.SPEED_BLITZ, game_in_pairing=1,
        competition=common.CompetitionRef(kind=common.COMPETITION_KIND_TOURNAMENT, id=f"{game_id}-t", round=1),
        time_control=common.TimeControl(fischer=common.FischerControl(base_seconds=180, increment_seconds=2)),
    )
    request.meta.event_id = f"{game_id}/requested"
    return request


async def _send(producer: AIOKafkaProducer, event) -> None:
    topic = events.topic_of(event)
    await producer.send_and_wait(topic.name, event.SerializeToString(), key=topic.key_of(event).encode())


@contextlib.asynccontextmanager
async def _running(playsite: PlaySite, bootstrap: str, prefix: str) -> AsyncIterator[tuple[Recorder, AIOKafkaProducer]]:
    """The play site started with a recorder of its run's events and a producer of requests; all stopped after."""
    recorder = Recorder(bootstrap, prefix)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await recorder.start()
    await producer.start()
    await playsite.start()
    try:
        yield recorder, producer
    finally:
        await playsite.stop()
        await producer.stop()
        await recorder.stop()


async def _backlog_reaches(playsite: PlaySite, count: int, timeout: float = 60.0) -> None:
    """Wait until `count` instant games are queued (requests take a fetch or two to arrive)."""
    await eventually(lambda: playsite.backlog >= count, f"{count} instant games queued", timeout=timeout)


async def _scenario(bootstrap: str) -> None:
    await ensure_topics(bootstrap, 4)
    prefix = f"ps{uuid.uuid4().hex[:6]}-"
    time_source = TimeSource(600.0, datetime.now(UTC))
    profiles = Profiles(seed=3, mix={Behaviour.NORMAL: 1.0}, assigned={
        f"{prefix}absent": Behaviour.NEVER_SHOWS, f"{prefix}late": Behaviour.NEVER_SHOWS})
    playsite = PlaySite(bootstrap, time_source, profiles, PlaySiteConfig(
        seed=3, think_seconds=(1.0, 2.0), group_id=f"{prefix}playsite", player_prefix=prefix))
    async with _running(playsite, bootstrap, prefix) as (recorder, producer):
        played, flagged, closed = f"{prefix}g1", f"{prefix}g2", f"{prefix}g3"
        await _send(producer, _request(played, f"{prefix}w", f"{prefix}b"))
        await _send(producer, _request(flagged, f"{prefix}absent", f"{prefix}b2"))
        await _send(producer, _request(closed, f"{prefix}late", f"{prefix}b3"))

        # A game played to its end by the rules: every ply published in order, replayable.
        finished = (await recorder.wait_for(played, ev.GameFinished))[0]
        moves = [e for e in recorder.seen[played] if isinstance(e, ev.MoveMade)]
        assert [m.ply for m in moves] == list(range(1, len(moves) + 1)) == list(range(1, finished.plies + 1))
        game = Game("international")
        for move in moves:
            game.play(move.move)
            assert game.position.to_fen() == move.fen_after
        if finished.termination == common.TERMINATION_NO_MOVES:
            assert game.outcome() is not None and not game.position.legal_moves()
        assert finished.meta.event_id == f"{played}/finished" and finished.meta.producer == "playsite"
        assert finished.white_sat and finished.black_sat and finished.rated
        assert finished.competition.id == f"{played}-t" and finished.HasField("started_at")

        # The clock flags a player who never came (T-16): the play site reports it, R-3 flags set.
        await recorder.wait_for(flagged, ev.GameStarted)
        presence = await recorder.wait_for(flagged, ev.PlayerPresenceChanged)
        assert {p.player_id for p in presence} == {f"{prefix}b2"}  # only the one who showed up
        flag = ev.ClockFlagged(game_id=flagged, loser_id=f"{prefix}absent", reason=common.TERMINATION_TIME,
                               loser_never_sat=True)
        flag.meta.event_id = f"flag:{flagged}"
        await _send(producer, flag)
        result = (await recorder.wait_for(flagged, ev.GameFinished))[0]
        assert result.result == common.GAME_RESULT_BLACK_WINS
        assert result.termination == common.TERMINATION_NEVER_SAT
        assert not result.white_sat and not result.black_sat and result.plies == 0

        # Someone else closed the game (T-15): the play site stops and publishes nothing.
        await recorder.wait_for(closed, ev.GameStarted)
        close = ev.GameFinished(game_id=closed, result=common.GAME_RESULT_DRAW,
                                termination=common.TERMINATION_CLOSED_AT_DEADLINE,
                                white_id=f"{prefix}late", black_id=f"{prefix}b3")
        close.meta.event_id = f"{closed}/closed"
        close.meta.producer = "pairing"
        await _send(producer, close)
        await eventually(lambda: closed not in playsite.games, f"{closed} closed")
        await asyncio.sleep(0.5)
        assert [e.meta.producer for e in recorder.seen[closed] if isinstance(e, ev.GameFinished)] == ["pairing"]
        assert playsite.stats.errors == 0


def test_play_site_plays_reports_and_yields(kafka_bootstrap: str) -> None:
    asyncio.run(_scenario(kafka_bootstrap))


def _instant_playsite(bootstrap: str, prefix: str, result_rate: float = 0.0) -> PlaySite:
    return PlaySite(bootstrap, TimeSource(600.0, datetime.now(UTC)), Profiles(seed=5), PlaySiteConfig(
        seed=5, group_id=f"{prefix}playsite", player_prefix=prefix, instant_results=True, result_rate=result_rate))


async def _request_games(producer: AIOKafkaProducer, prefix: str, count: int) -> list[str]:
    games = [f"{prefix}g{n}" for n in range(count)]
    for n, game_id in enumerate(games):
        await _send(producer, _request(game_id, f"{prefix}w{n}", f"{prefix}b{n}"))
    return games


async def _instant_scenario(bootstrap: str) -> None:
    await ensure_topics(bootstrap, 4)
    prefix = f"pi{uuid.uuid4().hex[:6]}-"
    playsite = _instant_playsite(bootstrap, prefix, result_rate=200.0)
    reader = AIOKafkaConsumer(events.GAME_STARTED.name, events.GAME_FINISHED.name, bootstrap_servers=bootstrap,
                              auto_offset_reset="earliest", group_id=None, enable_auto_commit=False)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await reader.start()
    await producer.start()
    await playsite.start()
    try:
        games = await _request_games(producer, prefix, 40)
        foreign = f"{prefix}other"
        await _send(producer, _request(foreign, "someone", "else"))  # not of this run's population

        # Every game gets its start and its result, once each, keyed and labelled like any event.
        records: dict[tuple[str, str], list] = defaultdict(list)
        deadline = asyncio.get_running_loop().time() + 60
        while len(records) < 2 * len(games) and asyncio.get_running_loop().time() < deadline:
            for batch in (await reader.getmany(timeout_ms=200)).values():
                for record in batch:
                    event = events.topic_named(record.topic).decode(record.value)
                    if event.game_id.startswith(prefix):
                        records[(event.game_id, record.topic)].append((record, event))
        assert all(len(found) == 1 for found in records.values())
        assert {game_id for game_id, _ in records} == set(games)
        for game_id in games:
            (started_record, started), = records[(game_id, events.GAME_STARTED.name)]
            (finished_record, finished), = records[(game_id, events.GAME_FINISHED.name)]
            for record, event, kind in ((started_record, started, "started"), (finished_record, finished, "finished")):
                assert record.key == game_id.encode()
                # A request naming no trace id starts the chain its game's events stay in (arbiter.kit.trace).
                assert dict(record.headers) == {"event-id": f"{game_id}/{kind}".encode(),
                                                "event-type": event.DESCRIPTOR.full_name.encode(),
                                                "trace-id": f"{game_id}/requested".encode()}
                assert event.meta.event_id == f"{game_id}/{kind}" and event.meta.producer == "playsite"
                assert event.meta.trace_id == f"{game_id}/requested"
                assert event.meta.HasField("occurred_at")
            assert started.competition.id == finished.competition.id == f"{game_id}-t"
            assert started.time_control.fischer.base_seconds == 180
            # The result is the game's first draw from its own random source (seed and game id).
            expected = playsite.game_rng(_request(game_id, "", "")).choice(
                (common.GAME_RESULT_WHITE_WINS, common.GAME_RESULT_BLACK_WINS, common.GAME_RESULT_DRAW))
            assert finished.result == expected
            assert finished.termination == (common.TERMINATION_DRAW_AGREED if expected == common.GAME_RESULT_DRAW
                                             else common.TERMINATION_RESIGNATION)
            assert finished.white_sat and finished.black_sat and finished.plies == 2 and finished.rated
            assert not finished.white_boosted and not finished.black_boosted
            assert (
                finished.started_at == started.started_at
                and finished.finished_at.ToDatetime() >= started.started_at.ToDatetime()
            )
            assert game_id in playsite.result_sent
        assert playsite.stats.requested == playsite.stats.started == playsite.stats.finished == len(games)
        assert playsite.stats.decided_elsewhere == 0 and playsite.stats.errors == 0 and playsite.backlog == 0
        assert foreign not in playsite.result_sent
    finally:
        await playsite.stop()
        await producer.stop()
        await reader.stop()


def test_instant_results_publish_each_game_start_and_result_once(kafka_bootstrap: str) -> None:
    asyncio.run(_instant_scenario(kafka_bootstrap))


def _forfeit(game_id: str, white: str, black: str) -> ev.GameFinished:
    """A T-18 busy forfeit as pairing publishes it: a result for a game the play site never opened."""
    finished = ev.GameFinished(
        game_id=game_id, variant="international", white_id=white, black_id=black,
        result=common.GAME_RESULT_WHITE_WINS, termination=common.TERMINATION_BUSY_FORFEIT,
        competition=common.CompetitionRef(kind=common.COMPETITION_KIND_TOURNAMENT, id=f"{game_id}-t", round=1),
    )
    finished.meta.event_id = f"{game_id}/forfeit"
    finished.meta.producer = "pairing"
    return finished


async def _requests_only_scenario(bootstrap: str) -> None:
    await ensure_topics(bootstrap, 4)
    prefix = f"pq{uuid.uuid4().hex[:6]}-"
    time_source = TimeSource(600.0, datetime.now(UTC))
    topics = [topic.name for topic in (events.GAME_REQUESTED, events.GAME_FINISHED, events.CLOCK_STATE,
                                        events.CLOCK_FLAGGED, events.GAME_ABANDONED)]
    groups = {requests_only: f"{prefix}playsite-{requests_only}" for requests_only in (False, True)}
    # A new group reads from the beginning: after the session's other tests the full reader had every
    # ClockState of their games to go through first (a run once spent the test's minute on it).
    starts = {requests_only: await commit_at_ends(bootstrap, group, topics) for requests_only, group in groups.items()}
    # One producer name for both, as two replicas of one play site: each drops the other's results as
    # an echo of its own. Under another name, the full reader could read the other's result of a game
    # before that game's request, take it as decided elsewhere and never host it (a CI run did).
    sites = {
        requests_only: PlaySite(bootstrap, time_source, Profiles(seed=5), PlaySiteConfig(
            seed=5, group_id=group, player_prefix=prefix, producer=f"{prefix}site",
            instant_results=True, requests_only=requests_only))
        for requests_only, group in groups.items()
    }
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await producer.start()
    await admin.start()
    for site in sites.values():
        await site.start()
    try:
        await _send(producer, _forfeit(f"{prefix}forfeit", f"{prefix}w", f"{prefix}b"))
        games = await _request_games(producer, prefix, 5)
        deadline = asyncio.get_running_loop().time() + 60
        while asyncio.get_running_loop().time() < deadline and not (
                all(set(games) <= set(site.result_sent) for site in sites.values())
                and sites[False].stats.decided_elsewhere):
            await asyncio.sleep(0.05)

        # Both host every requested game; only the full reader also learns of the result decided elsewhere.
        missing = {requests_only: sorted(set(games) - set(site.result_sent)) for requests_only, site in sites.items()}
        assert missing == {False: [], True: []}
        assert sites[False].stats.decided_elsewhere == 1
        await asyncio.sleep(0.5)  # several fetches more: the forfeit never reaches the other one
        assert sites[True].stats.decided_elsewhere == 0 and sites[True].stats.errors == 0
        # Its consumer group reads game.requested and nothing else: no other topic's offset moved.
        read = {}
        for requests_only, group in groups.items():
            committed = await admin.list_consumer_group_offsets(group, partitions=list(starts[requests_only]))
            read[requests_only] = {
                tp.topic for tp, meta in committed.items() if meta.offset > starts[requests_only][tp]
            }
        assert read[True] == {events.GAME_REQUESTED.name}
        assert {events.GAME_REQUESTED.name, events.GAME_FINISHED.name} <= read[False]
    finally:
        for site in sites.values():
            await site.stop()
        await admin.close()
        await producer.stop()


def test_a_requests_only_play_site_reads_game_requested_alone(kafka_bootstrap: str) -> None:
    asyncio.run(_requests_only_scenario(kafka_bootstrap))


async def _held_scenario(bootstrap: str) -> None:
    await ensure_topics(bootstrap, 4)
    prefix = f"ph{uuid.uuid4().hex[:6]}-"
    playsite = _instant_playsite(bootstrap, prefix)
    playsite.holding = True
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    await playsite.start()
    try:
        games = await _request_games(producer, prefix, 30)
        await _backlog_reaches(playsite, len(games))
        await asyncio.sleep(0.3)  # several ticks of the instant loop: held games stay queued
        assert playsite.backlog == len(games) and not playsite.result_sent

        released = await playsite.release_held()

        assert sorted(released.game_ids) == sorted(games)
        assert released.building <= released.publishing <= released.published
        assert set(playsite.result_sent) == set(games) and playsite.backlog == 0
        assert playsite.stats.started == playsite.stats.finished == len(games) and playsite.stats.errors == 0
    finally:
        await playsite.stop()
        await producer.stop()


def test_held_instant_games_wait_and_are_released_in_one_go(kafka_bootstrap: str) -> None:
    asyncio.run(_held_scenario(kafka_bootstrap))


async def _started_then_released_scenario(bootstrap: str) -> None:
    await ensure_topics(bootstrap, 4)
    prefix = f"ps{uuid.uuid4().hex[:6]}-"
    playsite = _instant_playsite(bootstrap, prefix)
    async with _running(playsite, bootstrap, prefix) as (recorder, producer):
        with pytest.raises(RuntimeError, match="holding"):
            await playsite.start_held()  # only held games: the instant loop takes the others
        playsite.holding = True
        first = await _request_games(producer, prefix, 10)
        await _backlog_reaches(playsite, len(first))

        # The held games start now: their GameStarted alone, once each however often it is asked.
        assert await playsite.start_held() == len(first)
        assert await playsite.start_held() == 0
        starts = {game_id: (await recorder.wait_for(game_id, ev.GameStarted))[0] for game_id in first}
        await asyncio.sleep(0.3)
        assert not any(isinstance(e, ev.GameFinished) for game_id in first for e in recorder.seen[game_id])
        assert playsite.backlog == len(first) and not playsite.result_sent

        # A game requested after that is started by the next call only.
        late = f"{prefix}late"
        await _send(producer, _request(late, f"{prefix}wl", f"{prefix}bl"))
        await _backlog_reaches(playsite, len(first) + 1)
        assert await playsite.start_held() == 1

        released = await playsite.release_held()

        assert sorted(released.game_ids) == sorted([*first, late]) and released.started_with_results == 0
        for game_id in [*first, late]:
            await recorder.wait_for(game_id, ev.GameFinished)
        await asyncio.sleep(1.0)  # a start sent again would arrive by now, whichever topic is read first
        for game_id in first:
            # The result carries the start it followed; nothing is started twice.
            [finished] = [e for e in recorder.seen[game_id] if isinstance(e, ev.GameFinished)]
            assert finished.started_at == starts[game_id].started_at
        for game_id in [*first, late]:
            assert sorted(type(e).__name__ for e in recorder.seen[game_id]) == ["GameFinished", "GameStarted"]
        assert playsite.stats.started == playsite.stats.finished == len(first) + 1 and playsite.stats.errors == 0


def test_held_games_started_first_release_only_their_results(kafka_bootstrap: str) -> None:
    asyncio.run(_started_then_released_scenario(kafka_bootstrap))


async def _held_casual_scenario(bootstrap: str) -> None:
    await ensure_topics(bootstrap, 4)
    prefix = f"pc{uuid.uuid4().hex[:6]}-"
    absent, present = f"{prefix}absent", f"{prefix}present"
    profiles = Profiles(seed=9, mix={Behaviour.NORMAL: 1.0}, assigned={absent: Behaviour.NEVER_SHOWS})
    playsite = PlaySite(bootstrap, TimeSource(600.0, datetime.now(UTC)), profiles, PlaySiteConfig(
        seed=9, group_id=f"{prefix}playsite", player_prefix=prefix))
    finished: list[ev.GameFinished] = []
    playsite.on_finished.append(finished.append)
    await playsite.start()
    try:
        # No clock service here: only the hold (60 s of competition time, 0.1 s at 600x) ends the game.
        live = await playsite.play_casual(absent, present, hold_seconds=60)
        assert live.task is not None
        await asyncio.wait_for(asyncio.shield(live.task), 20)
        [result] = finished
        assert result.game_id == live.request.game_id
        assert (result.result, result.termination) == (common.GAME_RESULT_DRAW, common.TERMINATION_DRAW_AGREED)
        assert result.plies == 0 and playsite.stats.errors == 0
    finally:
        await playsite.stop()


def test_a_held_casual_game_with_a_player_who_never_comes_ends_when_the_hold_does(kafka_bootstrap: str) -> None:
    asyncio.run(_held_casual_scenario(kafka_bootstrap))
