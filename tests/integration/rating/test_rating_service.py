"""The rating service as a real process on the session's broker and PostgreSQL (R-1, R-3..R-5, T-18, T-19).

A raw aiokafka producer stands in for the play site: it publishes GameFinished events; the
tests read back over gRPC and from rating.updated. "Sequential recomputation" means the
service's canonical order: every pool's games applied one by one sorted by (finished_at,
game_id) (`arbiter.rating.ledger.replay_in_order`), whatever order they were delivered in.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import random
import sys
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import asyncpg
import grpc
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.contracts import rating_pb2, rating_pb2_grpc
from arbiter.kit import events
from arbiter.kit.errors import Unavailable
from arbiter.kit.ratings import GET_RATINGS_MAX_PLAYERS, RatingsClient
from arbiter.rating import DEFAULT_RATING, decay, rating_periods
from arbiter.rating.ledger import GameToRate, PlayerState, replay_in_order
from arbiter_tools.devstack.processes import ManagedProcess, free_port
from tests.integration.rating.rating_support import finished
from tests.support.kafka import consumed
from tests.support.polling import eventually, eventually_blocking

BLITZ = cm.SPEED_BLITZ
RAPID = cm.SPEED_RAPID
WHITE_SCORE = {cm.GAME_RESULT_WHITE_WINS: 1.0, cm.GAME_RESULT_BLACK_WINS: 0.0, cm.GAME_RESULT_DRAW: 0.5}


# --------------------------------------------------------------------------- builders


def as_game(event: ev.GameFinished) -> GameToRate:
    return GameToRate(
        event.game_id, event.finished_at.ToDatetime(tzinfo=UTC), event.white_id, event.black_id,
        WHITE_SCORE[event.result],
    )


def random_games(
    rng: random.Random, prefix: str, count: int, players: int, start: datetime, span: timedelta,
    variant: str, speed: int,
) -> list[ev.GameFinished]:
    """Rated games between `players` players, finishing at random instants (some share one)."""
    names = [f"{prefix}-p{i:02d}" for i in range(players)]
    seconds = int(span.total_seconds())
    instants = [start + timedelta(seconds=rng.randrange(seconds)) for _ in range(count)]
    games = []
    for i, at in enumerate(instants):
        white, black = rng.sample(names, 2)
        if i % 25 == 24:
            # Two games of one player finishing at the same moment (keyed by game id, so most
            # likely on different partitions): neither update may be lost.
            at = instants[i] = instants[i - 1]
            white = games[-1].white_id
            black = rng.choice([n for n in names if n not in (white, games[-1].black_id)])
        result = rng.choice((cm.GAME_RESULT_WHITE_WINS, cm.GAME_RESULT_BLACK_WINS, cm.GAME_RESULT_DRAW))
        game_id = f"{prefix}-{variant}-{speed}-g{i:04d}"
        games.append(finished(game_id, white, black, result, at, variant=variant, speed=speed))
    return games


def unrated_games(prefix: str, at: datetime) -> dict[str, list[ev.GameFinished]]:
    """One or more GameFinished per reason the service must not rate, by expected metric reason."""
    a, b = f"{prefix}-p00", f"{prefix}-p01"
    return {
        # friendly competition, or an unrated casual game.
        "friendly": [
            finished(f"{prefix}-friendly", a, b, cm.GAME_RESULT_WHITE_WINS, at, rated=False),
            finished(f"{prefix}-casual", a, b, cm.GAME_RESULT_DRAW, at, rated=False, kind=cm.COMPETITION_KIND_CASUAL),
        ],
        # one side never moved (flag or termination).
        "never_sat": [
            finished(f"{prefix}-nosat", a, b, cm.GAME_RESULT_WHITE_WINS, at, black_sat=False,
                     termination=cm.TERMINATION_TIME),
            finished(f"{prefix}-nosat2", a, b, cm.GAME_RESULT_BLACK_WINS, at, termination=cm.TERMINATION_NEVER_SAT),
        ],
        # T-18: busy elsewhere, the game was never opened.
        "busy_forfeit": [finished(f"{prefix}-busy", a, b, cm.GAME_RESULT_WHITE_WINS, at, black_sat=False,
                                  termination=cm.TERMINATION_BUSY_FORFEIT)],
        # T-19: both absent, 0-0.
        "both_absent": [finished(f"{prefix}-absent", a, b, cm.GAME_RESULT_BOTH_LOSE, at, white_sat=False,
                                 black_sat=False, termination=cm.TERMINATION_BOTH_ABSENT)],
        # T-8: a competition "game" without an opponent.
        "bye": [finished(f"{prefix}-bye", a, "", cm.GAME_RESULT_WHITE_WINS, at)],
        # Says rated but cannot be: a variant nobody plays.
        "invalid": [finished(f"{prefix}-badvariant", a, b, cm.GAME_RESULT_WHITE_WINS, at, variant="chess")],
    }


def malformed_games(prefix: str, at: datetime) -> list[ev.GameFinished]:
    """Events the consumer's boundary sets aside before the handler: a result no version defines, no date."""
    a, b = f"{prefix}-p00", f"{prefix}-p01"
    return [
        finished(f"{prefix}-badresult", a, b, 99, at),  # type: ignore[arg-type]
        _never_dated(finished(f"{prefix}-baddate", a, b, cm.GAME_RESULT_DRAW, at)),
        _never_dated(finished(f"{prefix}-badnanos", a, b, cm.GAME_RESULT_DRAW, at), seconds=253_402_300_799,
                     nanos=2_000_000_000),
    ]


def _never_dated(event: ev.GameFinished, seconds: int = 10**13, nanos: int = 0) -> ev.GameFinished:
    """The event with a finish time past year 9999 (no datetime holds it)."""
    event.finished_at.seconds, event.finished_at.nanos = seconds, nanos
    return event


# --------------------------------------------------------------------------- plumbing


async def publish(bootstrap: str, batch: Iterable[ev.GameFinished]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        futures = [
            await producer.send(events.GAME_FINISHED.name, e.SerializeToString(), key=e.game_id.encode())
            for e in batch
        ]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def wait_group_members(bootstrap: str, members: int, group: str, timeout: float = 60.0) -> None:
    """Wait until `group` is Stable with `members` members (a joined member holds partitions then)."""
    async def stable() -> bool:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            described = await admin.describe_consumer_groups([group])
        finally:
            await admin.close()
        found = [g for response in described for g in response.groups if g[1] == group]
        return bool(found) and found[0][2] == "Stable" and len(found[0][5]) == members

    await eventually(stable, f"consumer group {group} Stable with {members} members", timeout=timeout, every=0.3)


async def wait_consumed(bootstrap: str, group: str, timeout: float = 60.0) -> None:
    await consumed(bootstrap, group, [events.GAME_FINISHED], timeout=timeout)


class UpdatesObserver:
    """Reads rating.updated from the start and keeps the events of players with a prefix."""

    def __init__(self, bootstrap: str, prefix: str) -> None:
        self.consumer = AIOKafkaConsumer(
            events.RATING_UPDATED.name, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest",
        )
        self.prefix = prefix
        self.updates: list[ev.RatingUpdated] = []
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> UpdatesObserver:
        await self.consumer.start()
        self._task = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await self.consumer.stop()

    async def _read(self) -> None:
        while True:
            records = await self.consumer.getmany(timeout_ms=200)
            for batch in records.values():
                for record in batch:
                    update = events.RATING_UPDATED.decode(record.value)
                    if update.player_id.startswith(self.prefix):
                        self.updates.append(update)  # type: ignore[arg-type]

    def latest(self) -> dict[tuple[str, str, int], ev.RatingUpdated]:
        """The last update per (player, variant, speed): it must carry the current rating."""
        return {(u.player_id, u.variant, u.speed): u for u in self.updates}


def metric_values(urls: Iterable[str], name: str, labels: tuple[str, ...]) -> Counter[tuple[str, ...]]:
    """A counter's values summed over several /metrics pages, by the given labels."""
    values: Counter[tuple[str, ...]] = Counter()
    for url in urls:
        for line in urllib.request.urlopen(url, timeout=5).read().decode().splitlines():
            if line.startswith(name + "{"):
                found = dict(part.split("=", 1) for part in line[line.index("{") + 1:line.index("}")].split(","))
                values[tuple(found[label].strip('"') for label in labels)] += float(line.rsplit(" ", 1)[1])
    return values


async def asyncpg_count(database_url: str, query: str, *args: object) -> int:
    """One count from the session's database."""
    connection = await asyncpg.connect(database_url)
    try:
        return int(await connection.fetchval(query, *args))
    finally:
        await connection.close()


async def asyncpg_rows(database_url: str, query: str, *args: object) -> list[asyncpg.Record]:
    """Rows from the session's database."""
    connection = await asyncpg.connect(database_url)
    try:
        return await connection.fetch(query, *args)
    finally:
        await connection.close()


def start_replica(stack, name: str) -> tuple[ManagedProcess, str, str]:
    """A second rating process in the same consumer group (scale-out, DESIGN); returns it, gRPC and /metrics."""
    env = stack.service_env("rating")
    grpc_port, metrics_port = free_port(), free_port()
    env.update(GRPC_PORT=str(grpc_port), METRICS_PORT=str(metrics_port))
    process = ManagedProcess(name, [sys.executable, "-m", "services.rating.main"], stack.log_dir / f"{name}.log",
                             env=env).start()
    return process, f"127.0.0.1:{grpc_port}", f"http://127.0.0.1:{metrics_port}/metrics"


def wait_healthy(address: str, process: ManagedProcess, timeout: float = 60.0) -> None:
    def serving() -> bool:
        assert not process.exited(), f"{process.name} exited; see {process.log_path}"
        with grpc.insecure_channel(address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1)
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    eventually_blocking(serving, f"{process.name} serving", timeout=timeout, tolerate=(grpc.RpcError,))


async def all_ratings(stub: rating_pb2_grpc.RatingServiceStub, players: list[str], variant: str, speed: int):
    reply = await stub.GetRatings(rating_pb2.GetRatingsRequest(player_ids=players, variant=variant, speed=speed))
    return {r.player_id: r for r in reply.ratings}


def assert_matches(answer: rating_pb2.PlayerRating, expected: PlayerState) -> None:
    """Rating and volatility as stored; the deviation grown from the last game to `as_of` (see api.shown_state)."""
    assert answer.rating.rating == pytest.approx(expected.rating.rating, abs=1e-9)
    assert answer.rating.volatility == pytest.approx(expected.rating.vol, abs=1e-12)
    assert answer.rating.games == expected.games
    assert expected.last_rated_at is not None
    assert answer.last_rated_at.ToDatetime(tzinfo=UTC) == expected.last_rated_at
    elapsed = answer.as_of.ToDatetime(tzinfo=UTC) - expected.last_rated_at
    shown = decay(expected.rating, rating_periods(elapsed))
    assert answer.rating.deviation == pytest.approx(shown.rd, abs=1e-9)
    assert answer.rating.provisional == (shown.rd >= 110)


def expected_states(games: list[ev.GameFinished]) -> dict[tuple[str, int], dict[str, PlayerState]]:
    by_pool: dict[tuple[str, int], list[GameToRate]] = {}
    for event in games:
        by_pool.setdefault((event.variant, event.speed), []).append(as_game(event))
    return {pool: replay_in_order(pool_games) for pool, pool_games in by_pool.items()}


# --------------------------------------------------------------------------- tests
# `start_system` and `wait_serving` block (they run their own event loop): called in a thread.


async def test_thousand_games_duplicated_and_reordered_equal_the_sequential_recomputation(
    start_system, infra_env
) -> None:
    bootstrap = infra_env["KAFKA_BOOTSTRAP_SERVERS"]
    rng = random.Random(8)
    prefix = f"r{uuid.uuid4().hex[:6]}"
    start = datetime.now(UTC) - timedelta(days=60)
    # Two pools (R-1, R-5: one rating per variant and speed), 60 days so that inactivity counts.
    rated = (random_games(rng, prefix, 700, 30, start, timedelta(days=50), "international", BLITZ)
             + random_games(rng, prefix, 300, 30, start, timedelta(days=50), "english", RAPID))
    ignored = unrated_games(prefix, start + timedelta(days=10))
    malformed = malformed_games(prefix, start + timedelta(days=10))
    everything = rated + [e for group in ignored.values() for e in group] + malformed
    # Delivered twice in two different shuffles; 50 games also re-sent under a new event id
    # (a play site retrying), which must not count either.
    first, second = everything[:], everything[:]
    rng.shuffle(first)
    rng.shuffle(second)
    resent = []
    for event in rng.sample(rated, 50):
        copy = ev.GameFinished()
        copy.CopyFrom(event)
        copy.meta.event_id = uuid.uuid4().hex
        resent.append(copy)

    # A consumer group of its own: its members all leave at the end, and tansu can leave such a group
    # wedged for the next system that joins it (the later tests' "rating").
    stack = await asyncio.to_thread(start_system, ("rating",), extra_env={"KAFKA_GROUP_PREFIX": f"{prefix}-"})
    service = stack.services["rating"]
    # Two replicas in one consumer group share the partitions, so games of one player are
    # rated by two processes at once: the pool lock must keep every update.
    replica, replica_grpc, replica_metrics = start_replica(stack, "rating-2")
    try:
        await asyncio.to_thread(wait_healthy, replica_grpc, replica)
        await wait_group_members(bootstrap, 2, stack.consumer_group("rating"))
        async with UpdatesObserver(bootstrap, prefix) as observer, grpc.aio.insecure_channel(
            service.grpc_address
        ) as channel:
            stub = rating_pb2_grpc.RatingServiceStub(channel)
            await publish(bootstrap, first[:600])
            await publish(bootstrap, second[:400] + first[600:] + resent + second[400:])
            await wait_consumed(bootstrap, stack.consumer_group("rating"))
            await check_thousand_games(stub, observer, rated, prefix)
        per_replica = [metric_values((url,), "arbiter_rating_games_total", ("outcome",))[("rated",)]
                       for url in (service.metrics_url, replica_metrics)]
        urls = (service.metrics_url, replica_metrics)
        counts = metric_values(urls, "arbiter_rating_games_total", ("outcome", "reason"))
        revised = metric_values(urls, "arbiter_rating_games_revised_total", ())
    finally:
        replica.stop()
    # Exactly our games were rated once each; ">=" on the metric: rated games other tests of the session
    # left on game.finished (after this consumer group's last commit) are rated here too.
    ours = await asyncpg_count(
        infra_env["DATABASE_URL"], "SELECT count(*) FROM rating.rated_games WHERE game_id LIKE $1", f"{prefix}%"
    )
    assert ours == len(rated)
    assert counts[("rated", "rated")] >= len(rated)
    assert all(per_replica), f"both replicas rate games: {per_replica}"
    # Counted once by reason; the second delivery of each is a duplicate. ">=": the session's
    # other tests may have left unrated events on game.finished for this consumer group.
    for reason, group in ignored.items():
        assert counts[("ignored", reason)] >= len(group), reason
    assert counts[("duplicate", "already_rated")] >= len(resent)
    assert counts[("duplicate", "redelivered")] >= len(everything) - len(malformed)
    # The malformed ones never reached the handler: both deliveries of each were set aside, with the field named.
    set_aside = await asyncpg_rows(
        infra_env["DATABASE_URL"],
        "SELECT value, reason, detail FROM rating.consumer_set_aside WHERE consumer_group = $1",
        stack.consumer_group("rating"),
    )
    ours = sorted((ev.GameFinished.FromString(r["value"]).game_id, r["reason"], r["detail"].split(" ", 1)[0])
                  for r in set_aside if r["value"] is not None and f"{prefix}-bad".encode() in r["value"])
    assert ours == sorted((e.game_id, "invalid", field) for e, field in zip(
        malformed, ("result", "finished_at", "finished_at"), strict=True) for _ in range(2))
    # The shuffled delivery did make late games replay later ones.
    assert revised[()] > 0


async def check_thousand_games(
    stub: rating_pb2_grpc.RatingServiceStub, observer: UpdatesObserver, rated: list[ev.GameFinished], prefix: str
) -> None:
    """Ratings, RatingUpdated and History after the 1,000 games, against the sequential recomputation."""
    expected = expected_states(rated)
    for (variant, speed), states in expected.items():
        answers = await all_ratings(stub, sorted(states), variant, speed)
        assert set(answers) == set(states)
        for player, state in states.items():
            assert_matches(answers[player], state)
        # Each game counted once for each of its two players.
        assert sum(a.rating.games for a in answers.values()) == 2 * sum(
            1 for e in rated if (e.variant, e.speed) == (variant, speed))

    # The last RatingUpdated of every player carries the stored rating after their last game.
    wanted = {(p, v, s): st for (v, s), states in expected.items() for p, st in states.items()}
    latest = await eventually(observer.latest, "every player's last RatingUpdated", every=0.2,
                              until=lambda latest: all(
                                  k in latest and abs(latest[k].after.rating - v.rating.rating) <= 1e-9
                                  for k, v in wanted.items()))
    for key, state in wanted.items():
        assert latest[key].after.rating == pytest.approx(state.rating.rating, abs=1e-9)
        assert latest[key].after.deviation == pytest.approx(state.rating.rd, abs=1e-9)
        assert latest[key].after.games == state.games
    assert not any(u.game_id.startswith(prefix) and "-g" not in u.game_id for u in observer.updates)

    # History: one player's games newest first, in pages, each with before -> after chained.
    variant, speed = "international", BLITZ
    player = max(expected[(variant, speed)], key=lambda p: expected[(variant, speed)][p].games)
    changes, token = [], ""
    while True:
        page = await stub.GetRatingHistory(rating_pb2.GetRatingHistoryRequest(
            player_id=player, variant=variant, speed=speed, page=cm.PageRequest(page_size=7, page_token=token)))
        changes += page.changes
        token = page.next_page_token
        if not token:
            break
    own = sorted((as_game(e) for e in rated if player in (e.white_id, e.black_id) and e.variant == variant),
                 key=lambda g: g.key, reverse=True)
    assert [c.game_id for c in changes] == [g.game_id for g in own]
    assert changes[0].after.rating == pytest.approx(expected[(variant, speed)][player].rating.rating, abs=1e-9)
    for newer, older in itertools.pairwise(changes):
        assert newer.before.rating == older.after.rating
        assert newer.before.games == older.after.games == newer.after.games - 1
    assert {c.score for c in changes} <= {0.0, 0.5, 1.0}


async def test_bad_input_is_refused_and_unknown_players_get_the_default(start_system) -> None:
    stack = await asyncio.to_thread(start_system, ("rating",))
    async with grpc.aio.insecure_channel(stack.services["rating"].grpc_address) as channel:
        stub = rating_pb2_grpc.RatingServiceStub(channel)

        async def refused(call, request, *words: str) -> None:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call(request)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            for word in words:
                assert word in caught.value.details(), caught.value.details()

        ok = {"variant": "international", "speed": BLITZ}
        for call, make in (
            (stub.GetRating, lambda **kw: rating_pb2.GetRatingRequest(**{"player_id": "p", **ok, **kw})),
            (stub.GetRatingHistory, lambda **kw: rating_pb2.GetRatingHistoryRequest(**{"player_id": "p", **ok, **kw})),
        ):
            await refused(call, make(player_id=""), "player_id")
            await refused(call, make(player_id="x" * 129), "player_id", "128")
            await refused(call, make(variant=""), "variant")
            await refused(call, make(variant="chess"), "chess", "international")
            await refused(call, make(speed=cm.SPEED_UNSPECIFIED), "speed")
            await refused(call, make(speed=42), "speed")
        many = lambda **kw: rating_pb2.GetRatingsRequest(**{"player_ids": ["a", "b"], **ok, **kw})  # noqa: E731 - a local shorthand
        await refused(stub.GetRatings, many(player_ids=[f"p{i}" for i in range(501)]), "501", "500")
        await refused(stub.GetRatings, many(player_ids=["a", ""]), "player_ids[1]")
        await refused(stub.GetRatings, many(variant="xiangqi"), "xiangqi")
        await refused(stub.GetRatings, many(speed=cm.SPEED_UNSPECIFIED), "speed")
        history = lambda **kw: rating_pb2.GetRatingHistoryRequest(player_id="p", page=cm.PageRequest(**kw), **ok)  # noqa: E731 - a local shorthand
        await refused(stub.GetRatingHistory, history(page_size=101), "page_size", "100")
        await refused(stub.GetRatingHistory, history(page_size=-1), "page_size")
        await refused(stub.GetRatingHistory, history(page_token="not-a-token"), "page_token")
        # Valid base64 of foreign JSON.
        await refused(stub.GetRatingHistory, history(page_token="eyJ4IjoxfQ"), "page_token")
        # Base64 of JSON nested deeper than the parser's recursion limit.
        await refused(stub.GetRatingHistory, history(page_token=base64.urlsafe_b64encode(b"[" * 5_000).decode()),
                      "page_token")

        # Unknown players: the new-player rating, provisional, no error; aliases answer canonically.
        nobody = await stub.GetRating(rating_pb2.GetRatingRequest(player_id=f"nobody-{uuid.uuid4().hex}",
                                                                  variant="checkers", speed=RAPID))
        assert (nobody.rating.rating, nobody.rating.deviation, nobody.rating.volatility) == (1500, 350, 0.06)
        assert nobody.rating.provisional and nobody.rating.games == 0
        assert nobody.variant == "english" and not nobody.HasField("last_rated_at")
        assert nobody.HasField("as_of")
        batch = await stub.GetRatings(many(player_ids=["u1", "u2", "u1"]))
        assert [r.player_id for r in batch.ratings] == ["u1", "u2", "u1"]
        assert (await stub.GetRatings(many(player_ids=[f"p{i}" for i in range(500)]))).ratings[499].player_id == "p499"
        assert (await stub.GetRatings(many(player_ids=[]))).ratings == []
        empty = await stub.GetRatingHistory(history(page_size=0))
        assert list(empty.changes) == [] and empty.next_page_token == ""

        # The kit's client asks more than GetRatings takes in one call 500 at a time (arena, pairing).
        client = RatingsClient(channel, timeout=10.0)
        crowd = [f"crowd-{i}" for i in range(2 * GET_RATINGS_MAX_PLAYERS + 1)]
        assert await client.ratings(crowd, "international", BLITZ) == dict.fromkeys(crowd, DEFAULT_RATING)
        assert await client.rating(f"nobody-{uuid.uuid4().hex}", "international", BLITZ) == DEFAULT_RATING
    async with grpc.aio.insecure_channel(f"127.0.0.1:{free_port()}") as nowhere:
        with pytest.raises(Unavailable, match="rating service"):
            await RatingsClient(nowhere, timeout=2.0).ratings(["a"], "international", BLITZ)


async def test_a_sigkilled_service_applies_every_game_exactly_once(start_system, infra_env) -> None:
    bootstrap = infra_env["KAFKA_BOOTSTRAP_SERVERS"]
    rng = random.Random(18)
    prefix = f"k{uuid.uuid4().hex[:6]}"
    start = datetime.now(UTC) - timedelta(days=20)
    games = random_games(rng, prefix, 3000, 60, start, timedelta(days=15), "russian", BLITZ)
    arrival = games[:]
    rng.shuffle(arrival)

    # A consumer group of its own: its members all leave at the end, and tansu can leave such a group
    # wedged for the next system that joins it (the later tests' "rating").
    stack = await asyncio.to_thread(start_system, ("rating",), extra_env={"KAFKA_GROUP_PREFIX": f"{prefix}-"})
    service = stack.services["rating"]
    async with grpc.aio.insecure_channel(service.grpc_address) as channel:
        stub = rating_pb2_grpc.RatingServiceStub(channel)
        players = sorted({p for g in games for p in (g.white_id, g.black_id)})
        await publish(bootstrap, arrival[:2000])
        # Kill as soon as the first ratings are in: batches are being applied and committed.
        answers = await eventually(lambda: all_ratings(stub, players, "russian", BLITZ), "the first ratings in",
                                   every=0.02, until=lambda answers: sum(a.rating.games for a in answers.values()) > 0)
        stack.kill_service("rating")
        rated_at_kill = sum(a.rating.games for a in answers.values()) // 2
    # Meanwhile the play site goes on: the rest, and the first part again.
    await publish(bootstrap, arrival[2000:] + arrival[:2000])
    stack.start_service("rating")
    await asyncio.to_thread(stack.wait_serving, 60, ("rating",))
    await wait_consumed(bootstrap, stack.consumer_group("rating"), timeout=60)

    async with grpc.aio.insecure_channel(service.grpc_address) as channel:
        stub = rating_pb2_grpc.RatingServiceStub(channel)
        answers = await all_ratings(stub, players, "russian", BLITZ)
        expected = replay_in_order(as_game(g) for g in games)
        for player, state in expected.items():
            assert_matches(answers[player], state)
        assert sum(a.rating.games for a in answers.values()) == 2 * len(games)
        some = players[0]
        seen: Counter[str] = Counter()
        token = ""
        while True:
            page = await stub.GetRatingHistory(rating_pb2.GetRatingHistoryRequest(
                player_id=some, variant="russian", speed=BLITZ, page=cm.PageRequest(page_size=100, page_token=token)))
            seen.update(c.game_id for c in page.changes)
            token = page.next_page_token
            if not token:
                break
        assert set(seen.values()) == {1}
        assert len(seen) == expected[some].games
    assert 0 < rated_at_kill < len(games)
