"""How healthy one service process is: readiness from its dependencies, and how late its event loop runs.

gRPC health (grpc.health.v1) answers two questions under two service names:

- `""` (LIVENESS): the process is up and its event loop answers. It stays SERVING until the
  graceful shutdown; a hung loop cannot answer at all, so the probe times out.
- `"readiness"` (READINESS), and each served service's full name: every dependency (the broker,
  PostgreSQL, Redis) answered the last check. A replica whose dependency is gone is taken out of
  its Service's endpoints instead of being restarted, which would not bring the dependency back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from grpc_health.v1 import health, health_pb2
from prometheus_client.core import GaugeMetricFamily

from arbiter.kit.pause import pause

if TYPE_CHECKING:
    from arbiter.kit.metrics import Metrics

log = logging.getLogger(__name__)

LIVENESS = ""
READINESS = "readiness"
# A dependency check: True when the dependency answered.
Check = Callable[[], Awaitable[bool]]


class Readiness:
    """Asks every dependency every `interval` seconds, at most `timeout` each, and sets readiness from the answers."""

    def __init__(self, checks: Mapping[str, Check], servicer: health.aio.HealthServicer, served: Sequence[str],
                 metrics: Metrics, *, interval: float, timeout: float) -> None:
        if interval <= 0 or timeout <= 0:
            raise ValueError("the readiness interval and timeout must be positive")
        self.checks = dict(checks)
        self.servicer = servicer
        self.names = (READINESS, *served)
        self.metrics = metrics
        self.interval = interval
        self.timeout = timeout
        self.ready: bool | None = None
        self.down: list[str] = []

    async def check_once(self) -> bool:
        """Ask every dependency at once, export the answers, set the health statuses; return whether ready."""
        answers = await asyncio.gather(*(self._answers(name, check) for name, check in self.checks.items()))
        down = [name for name, answered in zip(self.checks, answers, strict=True) if not answered]
        for name, answered in zip(self.checks, answers, strict=True):
            self.metrics.dependency_up.labels(self.metrics.service, name).set(1 if answered else 0)
        ready = not down
        if ready != self.ready or down != self.down:
            if ready:
                log.info("ready: every dependency answers", extra={"dependencies": sorted(self.checks)})
            else:
                log.warning("not ready: a dependency does not answer", extra={"down": down})
        self.ready, self.down = ready, down
        status = health_pb2.HealthCheckResponse.SERVING if ready else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in self.names:
            await self.servicer.set(name, status)
        return ready

    async def run(self, stop: asyncio.Event) -> None:
        """Check every `interval` seconds until `stop` is set."""
        while not stop.is_set():
            await pause(stop, self.interval)
            if not stop.is_set():
                await self.check_once()

    async def _answers(self, name: str, check: Check) -> bool:
        try:
            return bool(await asyncio.wait_for(check(), self.timeout))
        except Exception as error:  # any failure to get an answer in time is "does not answer"
            log.debug("readiness check failed", extra={"dependency": name, "error": repr(error)})
            return False


class EventLoopLag:
    """How late the event loop wakes a task that sleeps `interval` seconds, readable from any thread.

    A task on the loop measures each wake-up. /metrics is served from a thread, which still
    answers while the loop is stuck: at scrape time the lag is the larger of the last wake-up's
    delay and how long the next wake-up is overdue, so a hung loop shows as a lag that keeps
    growing instead of a last good value.
    """

    NAME = "arbiter_event_loop_lag_seconds"

    def __init__(self, service: str, interval: float = 0.5, time_source: Callable[[], float] = time.monotonic) -> None:
        if interval <= 0:
            raise ValueError("the event-loop lag interval must be positive")
        self.service = service
        self.interval = interval
        self.time_source = time_source
        # None until `run` starts: a service still connecting has no loop to judge yet.
        self._last_wake: float | None = None
        self._last_lag = 0.0

    def lag(self) -> float:
        """Seconds the loop is behind now: the last wake-up's delay, or how overdue the next one is."""
        if self._last_wake is None:
            return 0.0
        overdue = self.time_source() - self._last_wake - self.interval
        return max(self._last_lag, overdue, 0.0)

    def woke(self, expected: float) -> None:
        """The measuring task woke now, having asked to at `expected`."""
        now = self.time_source()
        self._last_lag = max(0.0, now - expected)
        self._last_wake = now

    async def run(self, stop: asyncio.Event) -> None:
        """Sleep and measure until `stop` is set."""
        self._last_wake = self.time_source()
        while not stop.is_set():
            expected = self.time_source() + self.interval
            await pause(stop, self.interval)
            self.woke(expected)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """The lag gauge, computed when scraped."""
        family = GaugeMetricFamily(
            self.NAME, "Seconds the event loop is late waking a task: it grows while the loop is stuck",
            labels=["service"],
        )
        family.add_metric([self.service], self.lag())
        yield family

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """What `collect` yields, so that the registry refuses a second collector of the same name."""
        return self.collect()
