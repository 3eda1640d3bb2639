"""Instant results, for the load benchmark and the chaos suite: a requested game answered with its start and result.

No moves: GameStarted and GameFinished at most `result_rate` per second in whole batches, after
`instant_after_seconds` while hosted like a played game, or held and released at once (a round's
results in one go).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter_tools.simulator.playsite.base import LiveGame
from arbiter_tools.simulator.playsite.live import LiveGames

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Release:
    """Held instant games published at once: their ids, and when (monotonic) the publication began and ended.

    The events are built before the first goes out; `publishing` is when they were handed to
    Kafka, so that the simulator's own preparation is not counted as the services' work.
    """

    game_ids: list[str]
    building: float
    publishing: float
    published: float
    # Games whose GameStarted went out with their result (none when `start_held` started them all).
    started_with_results: int = 0


class InstantResults(LiveGames):
    """Answers requested games with their result at once (`PlaySiteConfig.instant_results`)."""

    @property
    def backlog(self) -> int:
        """Requested games waiting for their instant result."""
        return len(self._instant)

    async def _instant_loop(self) -> None:
        """Publish results for queued requests at `result_rate` per second, a slice every `instant_every_seconds`."""
        allowance = 0.0
        last = time.monotonic()
        while True:
            await asyncio.sleep(self.config.instant_every_seconds)
            now = time.monotonic()
            if self.holding:
                last = now
                continue
            rate = self.result_rate
            allowance = allowance + (now - last) * rate if rate > 0 else float(len(self._instant))
            allowance = min(allowance, max(rate * 0.1, 1.0)) if rate > 0 else allowance
            last = now
            count = min(int(allowance), len(self._instant))
            if count <= 0:
                continue
            allowance -= count
            slice_ = [self._instant.popleft() for _ in range(count)]
            if self.config.instant_after_seconds[1] > 0:
                for request in slice_:
                    self._host_instant(request)
            else:
                try:
                    await self._instant_slice(slice_)
                except Exception as error:
                    # A slice that could not be published must not stop every later result.
                    self.stats.errors += len(slice_)
                    log.error("instant games failed", extra={
                        "game_ids": [request.game_id for request in slice_], "error": repr(error)})

    async def start_held(self) -> int:
        """Publish the GameStarted of every queued instant game not started yet, at once; how many went out.

        A round's games start together and end minutes later: started here, a held round's
        release is its results alone, as when the last game of a round ends.
        """
        if not self.holding:
            raise RuntimeError("start_held starts held games: set `holding` first")
        now = events.timestamp(self.time_source.now())
        waiting = [request for request in self._instant if request.game_id not in self._held_started]
        # Marked before the publication: a call meanwhile (or a release) must not start them again.
        for request in waiting:
            self._held_started[request.game_id] = now
        records = [self._record(self._started_event(request, now), f"{request.game_id}/started", now)
                   for request in waiting]
        if records:
            await self._publish_records(records)
        self.stats.started += len(waiting)
        return len(waiting)

    async def release_held(self) -> Release:
        """Publish the results of every queued instant game at once; say which and when."""
        building = time.monotonic()
        slice_ = list(self._instant)
        self._instant.clear()
        started_before = self.stats.started
        publishing = await self._instant_slice(slice_)
        return Release([request.game_id for request in slice_], building, publishing, time.monotonic(),
                       self.stats.started - started_before)

    async def _instant_slice(self, requests: Sequence[ev.GameRequested]) -> float:
        """Start and finish a slice of instant games: their GameStarted and GameFinished events in whole batches.

        Both kinds go out together (one produce request, one wait): they are on different topics,
        whose records no consumer sees in a fixed order anyway, and each service takes a start
        that arrives after its game's result (clock, pairing's busy players). A game `start_held`
        started has only its result to publish. Returns when (monotonic) the built events began
        to be published.
        """
        now = events.timestamp(self.time_source.now())
        records = []
        finished = []
        fresh = 0
        for request in requests:
            live = LiveGame(request, self.game_rng(request), plies=2)
            live.moved.update((request.white_id, request.black_id))
            started_at = self._held_started.pop(request.game_id, None)
            if started_at is None:
                started_at = now
                fresh += 1
                records.append(self._record(self._started_event(request, now), f"{request.game_id}/started", now))
            result, termination = self._instant_result(live)
            event = self._finished_event(live, result, termination, now, started_at)
            finished.append((event, termination))
            records.append(self._record(event, f"{request.game_id}/finished", now))
        publishing = time.monotonic()
        await self._publish_records(records)
        sent = time.monotonic()
        self.stats.started += fresh
        for request, (event, termination) in zip(requests, finished, strict=True):
            self._note_finished(request, event, termination, sent)
        return publishing

    def _host_instant(self, request: ev.GameRequested) -> None:
        """An instant game whose result waits `instant_after_seconds`, hosted like a played game meanwhile."""
        live = LiveGame(request, self.game_rng(request))
        self.games[request.game_id] = live

        async def run() -> None:
            try:
                await self._failure_counted(request, self._instant_game(request, live))
            finally:
                self.games.pop(request.game_id, None)

        live.task = asyncio.create_task(run(), name=f"instant game {request.game_id}")

    async def _instant_game(self, request: ev.GameRequested, live: LiveGame) -> None:
        """A hosted instant game (`instant_after_seconds`): started now, its result after the wait."""
        live.moved.update((request.white_id, request.black_id))
        held_start = self._held_started.pop(request.game_id, None)
        if held_start is None:
            live.started_at = self.time_source.now()
            await self._publish(self._started_event(request, events.timestamp(live.started_at)),
                                f"{request.game_id}/started")
            self.stats.started += 1
        else:  # started by `start_held` before the holding ended
            live.started_at = held_start.ToDatetime(tzinfo=UTC)
        result, termination = self._instant_result(live)
        low, high = self.config.instant_after_seconds
        if high > 0 and await self._pause(live, live.rng.uniform(low, high)):
            if live.ending is not None and live.ending[0] in ("flagged", "abandoned"):
                await self._ended_outside(live)
            else:
                self._count_elsewhere(live)
            return
        live.plies = 2
        await self._finish(live, result, termination)

    def _instant_result(self, live: LiveGame) -> tuple[common.GameResult, common.Termination]:
        """(result, termination) of an instant game, the first draw from its random source."""
        request = live.request
        if self.config.results_by_pairing and request.competition.kind == common.COMPETITION_KIND_TOURNAMENT:
            winner = live.rng.choice((*sorted((request.white_id, request.black_id)), ""))
            result = common.GAME_RESULT_DRAW if not winner else (
                common.GAME_RESULT_WHITE_WINS if winner == request.white_id else common.GAME_RESULT_BLACK_WINS)
        else:
            result = live.rng.choice(
                (common.GAME_RESULT_WHITE_WINS, common.GAME_RESULT_BLACK_WINS, common.GAME_RESULT_DRAW))
        termination = common.TERMINATION_DRAW_AGREED if result == common.GAME_RESULT_DRAW \
            else common.TERMINATION_RESIGNATION
        return result, termination
