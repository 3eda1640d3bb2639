"""A frozen consumer is seen from the broker: ArbiterConsumerStalled fires for it, and resolves once it thaws.

The rating service consumes game.finished while a producer standing in for the play site
publishes a game every half second. The lag exporter (`arbiter up`'s, kafka-exporter's twin) asks
the broker for the group's committed offsets; Debian's Prometheus scrapes it and the service
every second and evaluates deploy/prometheus/alerts.yml with every duration divided by
TIME_COMPRESSION (production's "no commit for 90 s, for 30 s" becomes 9 s and 3 s: the rule itself
is the one production loads). The service is frozen with SIGSTOP: its own metrics cannot tell, but
the broker can, and the alert must fire for its group; after SIGCONT it must resolve. The test
prints how long each took. The group has a name of its own, placed at the end of game.finished
before the service starts, so that nothing else the session's broker holds or runs plays a part.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import threading
import time
import uuid
from datetime import UTC, datetime
from types import TracebackType

import pytest
import yaml
from aiokafka import AIOKafkaProducer

from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.kafka import ensure_topics
from arbiter.kit.settings import KitSettings
from arbiter_tools.chaos import commit_at_ends
from tests.e2e.prometheus_support import Prometheus, write_time_compressed_rules

TIME_COMPRESSION = 10
GAME_EVERY_SECONDS = 0.5
ALERT = "ArbiterConsumerStalled"

pytestmark = pytest.mark.timeout(300)


def game_finished(serial: int, rng: random.Random) -> ev.GameFinished:
    """A rated blitz game between two of a few players, finished now."""
    white, black = rng.sample([f"stall-p{i}" for i in range(6)], 2)
    event = ev.GameFinished(
        game_id=f"stall-{uuid.uuid4().hex[:8]}-{serial}", variant="international", speed=cm.SPEED_BLITZ,
        white_id=white, black_id=black, result=cm.GAME_RESULT_WHITE_WINS, termination=cm.TERMINATION_RESIGNATION,
        white_sat=True, black_sat=True, rated=True,
        competition=cm.CompetitionRef(kind=cm.COMPETITION_KIND_TOURNAMENT, id="stall-t", round=1),
    )
    event.meta.event_id = uuid.uuid4().hex
    event.meta.producer = "play-site-test"
    event.finished_at.FromDatetime(datetime.now(UTC))
    return event


class SteadyGames:
    """Publishes a finished game every GAME_EVERY_SECONDS from a thread of its own, for as long as the block lasts."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.published = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._publish()), name="steady-games")
        self._failure: BaseException | None = None

    async def _publish(self) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap)
        await producer.start()
        rng = random.Random(42)
        try:
            while not self._stop.is_set():
                event = game_finished(self.published, rng)
                await producer.send_and_wait(events.GAME_FINISHED.name, event.SerializeToString(),
                                             key=event.game_id.encode())
                self.published += 1
                await asyncio.to_thread(self._stop.wait, GAME_EVERY_SECONDS)
        except BaseException as error:
            self._failure = error
            raise
        finally:
            await producer.stop()

    def __enter__(self) -> SteadyGames:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
                 ) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        assert self._failure is None, f"publishing games failed: {self._failure!r}"


def firing(server: Prometheus, group: str) -> list[dict]:
    return [alert for alert in server.alerts(ALERT, consumergroup=group, topic=events.GAME_FINISHED.name)
            if alert["state"] == "firing"]


def test_a_frozen_service_fires_consumer_stalled_and_its_thaw_resolves_it(
        prometheus_for, start_system, kafka_bootstrap, tmp_path) -> None:
    prefix = f"stall{uuid.uuid4().hex[:6]}."
    group = f"{prefix}rating"
    # A new group reads a topic from its beginning: this one starts at the end of the session's history
    # (the topics made first as the service would make them, on a session broker that has none yet).
    asyncio.run(ensure_topics(kafka_bootstrap, KitSettings.model_fields["kafka_partitions"].default))
    asyncio.run(commit_at_ends(kafka_bootstrap, group, [events.GAME_FINISHED]))
    stack = start_system(("rating",), extra_env={"KAFKA_GROUP_PREFIX": prefix})
    stack.start_lag_exporter(poll_seconds=1.0)
    rules = write_time_compressed_rules(tmp_path / "alerts.yml", TIME_COMPRESSION)
    (stalled,) = [rule for group in yaml.safe_load(rules.read_text())["groups"] for rule in group["rules"]
                  if rule.get("alert") == ALERT]
    assert stalled["for"] == "3s" and "[9s]" in stalled["expr"], "production's 30 s and 90 s, divided by 10"
    server = prometheus_for(stack, rule_files=(rules,))
    committed = f'kafka_consumergroup_current_offset{{consumergroup="{group}", topic="{events.GAME_FINISHED.name}"}}'

    with SteadyGames(kafka_bootstrap) as games:
        server.wait_until("the rating group committing as games arrive (the broker's view)",
                          lambda: server.query(f"sum(changes({committed}[5s])) > 2"))
        # A partition's first record after a quiet spell may make the alert pending for one evaluation:
        # that is what its `for` is for. Over twice that `for` of steady consumption, counted in the
        # server's own scrapes, it never fires.
        steady_from = server.latest_scrape()
        server.wait_until("twice the rule's `for` of steady consumption scraped",
                          lambda: server.latest_scrape() >= steady_from + 2 * int(stalled["for"].removesuffix("s")))
        fired = server.query(f'count_over_time(ALERTS{{alertname="{ALERT}", alertstate="firing", '
                             f'consumergroup="{group}"}}[1m])')
        assert not fired, f"a consumer that keeps up is no stalled consumer: {fired}"

        rating = stack.services["rating"].process
        assert rating is not None
        os.kill(rating.pid, signal.SIGSTOP)
        frozen_at = time.monotonic()
        try:
            server.wait_until(f"{ALERT} firing for {group}", lambda: firing(server, group), timeout=120)
            fired_after = time.monotonic() - frozen_at
            alerts = firing(server, group)
            published_while_frozen = games.published
        finally:
            os.kill(rating.pid, signal.SIGCONT)
        thawed_at = time.monotonic()
        server.wait_until(f"{ALERT} resolved for {group}", lambda: not server.alerts(ALERT, consumergroup=group),
                          timeout=120)
        resolved_after = time.monotonic() - thawed_at

    lags = sorted(float(alert["value"]) for alert in alerts)
    assert all(lag > 0 for lag in lags), lags
    for alert in alerts:
        assert alert["labels"]["severity"] == "critical"
        assert alert["annotations"]["runbook_url"] == "deploy/RUNBOOK.md#arbiterconsumerstalled"
    print(f"\nfrozen consumer ({ALERT}, rules time-compressed {TIME_COMPRESSION}x, 1 s scrape and evaluation): "
          f"firing {fired_after:.1f} s after SIGSTOP on {len(alerts)} partition(s) with lag {lags} "
          f"({published_while_frozen} games published so far); resolved {resolved_after:.1f} s after SIGCONT")
