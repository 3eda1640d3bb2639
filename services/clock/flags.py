"""The flag poller: due deadlines from Redis, verdicts saved once in PostgreSQL, events via the outbox.

Exactly once, with any number of replicas and crashes:
1. `LiveStore.claim` moves due games to the in-flight set with a lease, atomically: one
   replica takes each game.
2. The verdict is decided again from the record (a move or a return may have just come in)
   and written to the record with a compare-and-set (status `decided`); a move arriving after
   that is ignored. A decided record is never decided again, so a retry publishes the same one.
3. One PostgreSQL transaction inserts the verdict into `verdicts` (primary key game_id) and, only
   if the row is new, its event (deterministic id `flag:<game>` / `abandon:<game>`) into the
   outbox, with the decided record's copy (`store.LiveCopies`). A second replica or a retry after
   a crash inserts nothing; a Redis lost after the commit is rebuilt with the game decided, and its
   deadline at the verdict's instant brings it back here (step 2 then publishes that verdict).
4. The record becomes `over` (compare-and-set) and the claim is dropped. A replica killed
   before step 4 leaves the game in flight; when the lease runs out it is claimed again and
   steps 2-4 repeat (step 3 then does nothing if it had committed).
Kafka delivery stays at-least-once (the kit's outbox relay may publish a row twice after a
crash), with the same event id, which consumers deduplicate.
Deadlines are competition time; the poller sleeps in real time until the nearest one and the
transit allowance after it (`flag_transit_seconds`: a move made before it may still be on its
way), through the time source. It knows the nearest deadline from each claim, and this process's own writes tell
it of any earlier one set since (`LiveStore.watch_deadlines`): it wakes for those at once. Only a
deadline set by another replica after this one's last look (a replica that died before its own
poller saw it) and a lease that ran out wait for the next blind look, at most
`flag_poll_max_seconds` later.

Partitions: a replica decides only the games whose partition of every topic its consumers read
it holds, and has read up since it got it (`SettledKeys`): when a replica dies, the moves and
results waiting in its partitions are read by the replica they are handed to before any deadline
of those games is decided, by that replica. The two consumer groups lay partitions out alike
(`CoPartitionAssignor`), so each game has one replica holding all of its partitions; while the
groups disagree (one rebalanced, the other not yet) its deadlines wait, which only delays them.
Without consumers to follow (`ownership` None) every game is decided here.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time

import asyncpg
from redis.exceptions import RedisError

from arbiter.clocks import Verdict
from arbiter.kit.contact import BrokerContact
from arbiter.kit.db import Connection
from arbiter.kit.kafka import SettledKeys
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from services.clock.clocked_game import ClockedGame, Kind, Status, game_verdict
from services.clock.handlers import MAX_ATTEMPTS
from services.clock.hot import LiveRow, LiveStore
from services.clock.metrics import ClockMetrics
from services.clock.operations import conclude
from services.clock.settings import ClockSettings
from services.clock.store import CorrespondenceStore, LiveCopies, save_verdicts

log = logging.getLogger(__name__)


class FlagPoller:
    """Fires due flags (T-16, T-17, T-19, TB-4) exactly once across replicas and restarts."""

    def __init__(
        self, live: LiveStore, correspondence: CorrespondenceStore, pool: asyncpg.Pool, outbox: Outbox,
        time_source: TimeSource, metrics: ClockMetrics, settings: ClockSettings,
        contact: BrokerContact | None = None, ownership: SettledKeys | None = None,
    ) -> None:
        self.live = live
        self.ownership = ownership
        self.copies = LiveCopies(pool, live.prefix)
        self.contact = contact
        self.correspondence = correspondence
        self.pool = pool
        self.outbox = outbox
        self.time_source = time_source
        self.metrics = metrics
        self.batch_size = settings.flag_batch_size
        self.max_sleep = settings.flag_poll_max_seconds
        # The lease is real time (how long a replica may take); claims are scored in competition ms.
        self.lease_ms = int(settings.flag_lease_seconds * time_source.scale * 1000)
        # Transit is real time too (publication and fetch); deadlines wait it out in competition ms.
        self.transit_ms = int(settings.flag_transit_seconds * time_source.scale * 1000)
        self.gauge_every = settings.live_gauge_seconds
        self._gauge_at = 0.0
        # The nearest deadline the last claim left in the set; later ones of this process are told.
        self._nearest: int | None = None
        # The competition instant (ms) the poller looks next; math.inf while it looks (a deadline
        # told meanwhile is kept here, since its claim may have run before the write).
        self._wake_at_ms: float = math.inf
        self._alarm = asyncio.Event()
        # Asleep while deadlines are held (BrokerContact): waking for one would find nothing to decide.
        self._holding = False
        live.watch_deadlines(self.deadline_set)

    def now_ms(self) -> int:
        """Competition time now, in ms."""
        return self.time_source.now_ms()

    def deadline_set(self, deadline_ms: int) -> None:
        """A write of this process set `deadline_ms`: wake for it if it comes before the planned look."""
        due_ms = deadline_ms + self.transit_ms
        if due_ms < self._wake_at_ms and not self._holding:
            self._wake_at_ms = due_ms
            self._alarm.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Poll until `stop` is set."""
        stopping = asyncio.ensure_future(stop.wait())
        stopping.add_done_callback(lambda _: self._alarm.set())
        try:
            while not stop.is_set():
                # Awake: every deadline told from now on counts (`_pause` decides on holding).
                self._wake_at_ms, self._holding = math.inf, False
                fired = 0
                try:
                    fired = await self.fire_due()
                    await self._sample_live()
                except (TimeoutError, RedisError, OSError, asyncpg.PostgresError) as error:
                    self.metrics.errors.labels(self.metrics.service, "flag_poll").inc()
                    log.warning("flag poll failed, retrying", extra={"error": repr(error)})
                    self._nearest = None  # retried after the blind pause, not at once
                if fired >= self.batch_size:
                    continue
                await self._sleep(self._pause(), stop)
        finally:
            stopping.cancel()

    async def _sleep(self, seconds: float, stop: asyncio.Event) -> None:
        """Sleep `seconds` (real), or until a deadline told meanwhile (`deadline_set`) or `stop`."""
        planned = self.now_ms() + seconds * self.time_source.scale * 1000
        # A deadline told while the poller looked stands if it is earlier than what the look found.
        self._wake_at_ms = min(planned, self._wake_at_ms)
        while not stop.is_set():
            self._alarm.clear()
            remaining = self.time_source.real_seconds((self._wake_at_ms - self.now_ms()) / 1000)
            if remaining <= 0:
                return
            try:
                await asyncio.wait_for(self._alarm.wait(), max(0.001, remaining))
            except TimeoutError:
                return

    def cutoff_ms(self, now_ms: int) -> int:
        """Deadlines up to this instant may be decided: none that fell due while moves may be missing.

        A flag is a verdict on silence. A move or a return made just before a deadline may be in
        transit for a moment (`flag_transit_seconds`), and while the broker is unreachable (and for
        the grace after, while the outage's backlog is read) the play site's moves may be on their
        way with their own times, so deadlines since the last contact wait (BrokerContact); then the
        verdict is taken on the complete record.
        """
        settled_ms = now_ms - self.transit_ms
        since = self.contact.missing_since() if self.contact is not None else None
        if since is None:
            return settled_ms
        if since == -math.inf:
            return -1  # just started: nothing is decided before the backlog is read
        held_real_seconds = time.monotonic() - since
        return min(settled_ms, now_ms - int(held_real_seconds * self.time_source.scale * 1000))

    def _pause(self) -> float:
        self._holding = self.contact is not None and self.contact.missing_since() is not None
        if self._holding:
            self._wake_at_ms = math.inf
            return self.max_sleep  # deadlines are held back: waking at the nearest one would spin
        # The nearest deadline the claim left stands: what this process wrote since (games not due
        # after all, saved back) was told (`deadline_set`), and the games it decided left the set.
        if self._nearest is None:
            return self.max_sleep
        wait = self.time_source.real_seconds((self._nearest + self.transit_ms - self.now_ms()) / 1000)
        return min(self.max_sleep, max(0.001, wait))

    async def _sample_live(self) -> None:
        if time.monotonic() - self._gauge_at < self.gauge_every:
            return
        self._gauge_at = time.monotonic()
        self.metrics.live_clocks.labels(self.metrics.service).set(await self.live.live_count())

    async def fire_due(self) -> int:
        """Claim the games due now, decide and publish; return how many were claimed."""
        now = self.now_ms()
        decidable = await self.ownership.view() if self.ownership is not None else None
        claimed, self._nearest = await self.live.claim(self.cutoff_ms(now), now + self.lease_ms, self.batch_size,
                                                       decidable)
        if not claimed:
            return 0
        generation = self.live.generation
        records = await self.live.load_many(claimed)
        missing = [game_id for game_id, record in records.items() if record is None]
        stored_elsewhere = await self.correspondence.known(missing) if missing else set()
        live: list[ClockedGame] = []
        correspondence: list[str] = []
        forgotten: list[str] = []
        for game_id in claimed:
            record = records[game_id]
            if game_id in stored_elsewhere or (record is not None and record.kind is Kind.TRIPLE_BLOCK):
                correspondence.append(game_id)
            elif record is None:
                forgotten.append(game_id)
            else:
                live.append(record)
        await self.live.release(forgotten)
        await self._fire_live(live, now, generation)
        for game_id in correspondence:
            await self._fire_correspondence(game_id, now)
        return len(claimed)

    async def _fire_live(self, records: list[ClockedGame], now: int, generation: int) -> None:
        decided: list[tuple[ClockedGame, Verdict]] = []
        not_due: list[str] = []
        # The decided records go to PostgreSQL's copy with their verdict: a Redis lost after that
        # gives them back decided, and the verdict is published, once, as after a crash.
        copies: list[LiveRow] = []
        pending = records
        for _ in range(MAX_ATTEMPTS):
            to_save: list[ClockedGame] = []
            for record in pending:
                if record.status is Status.DECIDED and record.verdict is not None:
                    # Decided by a replica that died before saving it: publish that same verdict.
                    decided.append((record, record.verdict))
                    continue
                verdict = game_verdict(record, now)
                if verdict is None:
                    if record.status is Status.RUNNING:
                        # Not due after all: save unchanged so the deadline set holds its next deadline.
                        to_save.append(record)
                    else:
                        not_due.append(record.game_id)
                    continue
                record.status = Status.DECIDED
                record.verdict = verdict
                conclude(record, verdict.at_ms)
                to_save.append(record)
            saved = await self.live.save_many(to_save, copies=copies, read_in=generation)
            lost = [record.game_id for record, ok in zip(to_save, saved, strict=True) if not ok]
            for record, ok in zip(to_save, saved, strict=True):
                if not ok:
                    continue
                if record.status is Status.DECIDED and record.verdict is not None:
                    decided.append((record, record.verdict))
                else:
                    not_due.append(record.game_id)
            if not lost:
                break
            generation = self.live.generation
            reloaded = await self.live.load_many(lost)
            pending = [r for r in reloaded.values() if r is not None]
            not_due.extend(game_id for game_id, r in reloaded.items() if r is None)
        # Games still contended stay in flight; the lease brings them back.
        await self.live.release(not_due)
        if not decided:
            return
        async with self.pool.acquire() as connection, connection.transaction():
            inserted = await save_verdicts(connection, self.outbox, decided, self.time_source.now())
            await self.copies.save(copies, connection)
        self._observe([verdict for record, verdict in decided if record.game_id in inserted])
        for record, _ in decided:
            record.status = Status.OVER
        # A record changed meanwhile (a GameFinished) keeps its own state; either way the claim ends.
        over: list[LiveRow] = []
        await self.live.save_many([record for record, _ in decided], copies=over, read_in=generation)
        await self.copies.save(over)
        await self.live.release([record.game_id for record, _ in decided])

    async def _fire_correspondence(self, game_id: str, now: int) -> None:
        async def settle(connection: Connection, record: ClockedGame) -> Verdict | None:
            verdict = game_verdict(record, now)
            if verdict is None:
                return None
            record.status = Status.OVER
            record.verdict = verdict
            conclude(record, verdict.at_ms)
            inserted = await save_verdicts(connection, self.outbox, [(record, verdict)], self.time_source.now())
            return verdict if inserted else None

        outcome = await self.correspondence.change(game_id, settle)
        await self.live.release([game_id])
        if outcome is not None and outcome[0] is not None:
            self._observe([outcome[0]])

    def _observe(self, verdicts: list[Verdict]) -> None:
        service = self.metrics.service
        now = self.now_ms()
        for verdict in verdicts:
            self.metrics.flags.labels(service, verdict.reason.value).inc()
            self.metrics.flag_latency.labels(service).observe(
                self.time_source.real_seconds(max(0, now - verdict.at_ms) / 1000)
            )
