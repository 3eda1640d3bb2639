"""The simulated play site: opens every requested game, plays random legal moves, reports the results.

It is external to Arbiter, so it publishes straight to Kafka (no outbox), but every event id
is a function of the game and the ply, so a restarted simulator that publishes again sends the
same events and the consumers' deduplication drops them. It keeps what it published for
`keep_published_seconds` and publishes it again when the broker lost its storage (brokerloss.py).

What ends a game here: the rules (`Game.outcome()`), a resignation or an agreed draw (per
behaviour profile), a clock.flagged or game.abandoned from the clock service (T-16, T-17,
T-19: then this play site publishes the GameFinished), or a game.finished published by someone
else (T-15 closing draws, T-18 busy forfeits: the game stops, nothing is published).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import UTC

from arbiter.contracts import arena_pb2_grpc, clock_pb2_grpc
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.events import Topic
from arbiter.kit.kafka import BatchHandler, subscribe_many
from arbiter.kit.poison import LoggedSetAside
from arbiter_tools.simulator.playsite.instant import InstantResults


class PlaySite(InstantResults):
    """Consumes game.requested and plays the games; consumes flags, abandons and foreign results."""

    async def start(self) -> None:
        """Subscribe and connect; games are played from now on."""
        # One consumer for all its topics: each consumer is a fetch loop polling the broker.
        handlers: dict[Topic, BatchHandler] = {events.GAME_REQUESTED: self._on_requested}
        if not self.config.requests_only:
            handlers |= {
                events.CLOCK_FLAGGED: self._on_flagged,
                events.GAME_ABANDONED: self._on_abandoned,
                events.GAME_FINISHED: self._on_finished,
                events.CLOCK_STATE: self._on_clock_state,
            }
        # No database of its own: what it cannot handle is logged and counted, and the partition moves on.
        subscribe_many(self.broker, self.settings, self.metrics, handlers, self.config.group_id,
                       set_aside=LoggedSetAside(self.metrics), max_records=self.config.batch_size)
        if self.config.arena_grpc_addr:
            channel = self._open(self.config.arena_grpc_addr)
            self._channels.append(channel)
            self._arena = arena_pb2_grpc.ArenaServiceStub(channel)
        if self.config.clock_grpc_addr:
            channel = self._open(self.config.clock_grpc_addr)
            self._channels.append(channel)
            self._clock = clock_pb2_grpc.ClockServiceStub(channel)
        await self.producer.start()
        await self.broker.start()
        self._started = True
        if self.config.instant_results:
            self._instant_task = asyncio.create_task(self._instant_loop(), name="instant results")
        if self.config.keep_published_seconds > 0:
            self._broker_watch = asyncio.create_task(self._watch_broker(), name="broker watch")

    async def stop(self) -> None:
        """Stop every game (publishing nothing more) and disconnect."""
        for task in (self._instant_task, self._broker_watch):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._instant_task = self._broker_watch = None
        for live in list(self.games.values()):
            live.close("stopped", None)
        tasks = [live.task for live in self.games.values() if live.task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._started:
            await self.broker.stop()
            await self.producer.stop()
            self._started = False
        for channel in self._channels:
            await channel.close()
        self._channels.clear()

    async def _on_requested(self, batch: Sequence[ev.GameRequested]) -> str:
        for request in batch:
            if request.game_id in self.games or request.game_id in self.finished_ids:
                continue  # a redelivery: the game is already hosted
            prefix = self.config.player_prefix
            if prefix and not (request.white_id.startswith(prefix) or request.black_id.startswith(prefix)):
                continue
            self.stats.requested += 1
            self._note_request(request)
            if self.config.instant_results:
                self.finished_ids.add(request.game_id)
                self._instant.append(request)
            else:
                self._host(request)
        return "handled"

    async def _on_flagged(self, batch: Sequence[ev.ClockFlagged]) -> str:
        return self._close_hosted(batch, "flagged")

    async def _on_abandoned(self, batch: Sequence[ev.GameAbandoned]) -> str:
        return self._close_hosted(batch, "abandoned")

    def _close_hosted(self, batch: Sequence[ev.ClockFlagged] | Sequence[ev.GameAbandoned], why: str) -> str:
        """The clock service ended these games: the hosted ones stop and publish their result."""
        for event in batch:
            live = self.games.get(event.game_id)
            if live is not None:
                live.close(why, event)
        return "handled"

    async def _on_finished(self, batch: Sequence[ev.GameFinished]) -> str:
        producer = self.config.producer
        for finished in batch:
            if finished.meta.producer == producer:
                continue  # the echo of an own result (most of this topic in the benchmark)
            # T-15 closing draws and T-18 forfeits: the game stops here and nothing is published.
            live = self.games.get(finished.game_id)
            if live is not None:
                live.close("elsewhere", finished)
            elif finished.game_id not in self.finished_ids:
                # Never opened here (a T-18 forfeit): still a result of a competition we watch.
                self.finished_ids.add(finished.game_id)
                prefix = self.config.player_prefix
                if not prefix or finished.white_id.startswith(prefix) or finished.black_id.startswith(prefix):
                    self.stats.decided_elsewhere += 1
                    self.stats.terminations[common.Termination.Name(finished.termination)] += 1
                    for listener in self.on_finished:
                        listener(finished)
        return "handled"

    async def _on_clock_state(self, batch: Sequence[ev.ClockState]) -> str:
        for state in batch:
            live = self.games.get(state.game_id)
            if live is not None:
                known = (live.clock_ply, len(live.clock_boosted))
                live.clock_ply = max(live.clock_ply, state.ply)
                if state.white_boosted:
                    live.clock_boosted.add(live.request.white_id)
                if state.black_boosted:
                    live.clock_boosted.add(live.request.black_id)
                if live.clock_news is not None and (live.clock_ply, len(live.clock_boosted)) != known:
                    live.clock_news.set()
            for listener in self.on_clock_state:
                listener(state)
        return "handled"

    def _note_request(self, request: ev.GameRequested) -> None:
        """Sample result -> next pairing: the first request of a new round after the round's last result."""
        competition = request.competition
        if competition.kind != common.COMPETITION_KIND_TOURNAMENT:
            return
        seen = self._rounds_seen.get(competition.id, 0)
        if competition.round > seen:
            self._rounds_seen[competition.id] = competition.round
            last = self._last_result.get(competition.id)
            if last is not None and seen > 0:
                now = time.monotonic()
                self.stats.pairing_latencies.append(now - last)
                self.stats.pairing_latency_times.append(now)
                delivery = None
                if request.HasField("requested_at"):
                    since = (self.time_source.now() - request.requested_at.ToDatetime(tzinfo=UTC)).total_seconds()
                    delivery = self.time_source.real_seconds(since)
                self.stats.delivery_latencies.append(delivery)
