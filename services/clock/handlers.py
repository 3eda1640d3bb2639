"""Kafka handlers: play-site events in, clock records changed, clock states out.

Each handler fetches the game's record, calls one function of `operations`, and saves it:
live (Fischer) games with a compare-and-set in Redis, Triple Block games in a row-locked
PostgreSQL transaction (`store.CorrespondenceStore`). Every operation is idempotent, so
at-least-once delivery needs no processed-event table here.

A handler returns (and Kafka's offsets are committed) only once the live records it saved are
copied to PostgreSQL (`store.LiveCopies`, one statement per batch): Redis can then be lost at any
moment without losing a consumed event. A game Redis lacks is looked for in that copy where the
handler already asks PostgreSQL about it (the Triple Block check), and written back to Redis.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TypeVar

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.db import Connection
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from arbiter.kit.trace import trace_of_key
from services.clock import operations as ops
from services.clock.clocked_game import ClockedGame, Kind, Status, clocked_game_of, restore_of
from services.clock.convert import (
    EncodedState,
    StateEncoder,
    clock_state,
    kind_of,
    meta_of_requested,
    meta_of_started,
    ms_of,
    time_control_problem,
)
from services.clock.hot import LiveRow, LiveStore
from services.clock.metrics import ClockMetrics
from services.clock.publisher import StatePublisher
from services.clock.store import CorrespondenceStore, LiveCopies, StaleSeedError

log = logging.getLogger(__name__)
# A GameRequested or a GameStarted: both carry a game id and a time control.
E = TypeVar("E", ev.GameRequested, ev.GameStarted)
# A change to one game: returns its outcome (counted) and the moves it applied (their ClockState).
Mutation = Callable[[ClockedGame], "tuple[str, list[ops.AppliedMove]]"]
# What the move path reads of a MoveMade: player id, ply, played_at in ms (None when not set).
MoveFields = tuple[str, int, "int | None"]
# Compare-and-set retries before giving up (the event is then delivered again).
MAX_ATTEMPTS = 8
# A module name for the move path: reading an enum member through its class is an extra lookup.
_TRIPLE_BLOCK = Kind.TRIPLE_BLOCK
# Games per chunk of a move batch (see `on_moves`).
MOVE_CHUNK = 250


class ConcurrentUpdateError(RuntimeError):
    """A game kept changing under us; the event is retried from Kafka."""


class ClockHandlers:
    """The consumers of the play site's game events and of the arena's boosts."""

    def __init__(
        self, live: LiveStore, correspondence: CorrespondenceStore, copies: LiveCopies, outbox: Outbox,
        publisher: StatePublisher, time_source: TimeSource, metrics: ClockMetrics,
    ) -> None:
        self.live = live
        self.correspondence = correspondence
        self.copies = copies
        self.outbox = outbox
        self.publisher = publisher
        self.time_source = time_source
        self.metrics = metrics

    def now_ms(self) -> int:
        """Competition time now, in ms."""
        return self.time_source.now_ms()

    # -- changing games --------------------------------------------------------------------------

    async def _elsewhere(
        self, game_ids: list[str], records: dict[str, ClockedGame | None]
    ) -> tuple[set[str], set[str]]:
        """Games Redis lacks, asked of PostgreSQL: the Triple Block ones, and live ones put back into Redis.

        A live game found in PostgreSQL's copy (Redis lost it, and the rebuild did not write it back:
        a game finished a while ago) is written back to Redis and set in `records` at its stored
        version. Returns the Triple Block games, and the games Redis got meanwhile (read again).
        """
        triple_block, copies = await self.copies.lookup(game_ids)
        entries = {game_id: (entry, copy) for game_id, copy in copies.items()
                   if (entry := restore_of(copy, self.live.metas)) is not None}
        written = await self.live.restore([entry for entry, _ in entries.values()])
        for game_id in written:
            records[game_id] = clocked_game_of(entries[game_id][1], self.live.metas)
        if written:
            self.metrics.restored("on_demand", len(written))
        return triple_block, set(entries) - written

    async def change_many(self, items: Sequence[tuple[str, Mutation, Kind]], *, new: bool = False) -> list[str]:
        """Apply each (game, mutation, clock kind if known) in order, wherever each game is kept.

        Live games: one Redis read (none for games this process saved last) and one
        compare-and-set write for the whole batch (a lost race reloads that game and applies its
        mutations again). With `new` (the games are most likely not stored yet), a game whose kind
        an item names is not read either: it is written as a new record, a compare-and-set that
        only succeeds if no record is stored, so one that exists loses the race and is read and
        changed again. Triple Block games: one row-locked transaction per event. The states of
        moves applied (early moves at a start) are published. Returns each item's outcome.
        """
        outcomes = [""] * len(items)
        by_game: dict[str, list[int]] = {}
        for index, (game_id, _, _) in enumerate(items):
            if not game_id:
                outcomes[index] = "invalid"  # no game to change: counted, and the partition moves on
                continue
            by_game.setdefault(game_id, []).append(index)
        states: list[ev.ClockState] = []
        correspondence: list[str] = []
        copies: list[LiveRow] = []
        pending = list(by_game)
        for attempt in range(MAX_ATTEMPTS):
            now = self.now_ms()
            generation = self.live.generation
            # The games this process saved last are taken as it saved them, with no read: every
            # game here is saved, and the compare-and-set checks that none changed meanwhile.
            cached: dict[str, ClockedGame | None] = {}
            if attempt == 0:
                cached.update(self.live.take_known(pending))
                if new:
                    # Assumed absent. A game whose items all lack a kind is read: one that only
                    # PostgreSQL keeps (Triple Block) must be looked for, and only a read tells
                    # that Redis does not have it.
                    cached.update((game_id, None) for game_id in pending if game_id not in cached
                                  and any(items[i][2] is not Kind.UNKNOWN for i in by_game[game_id]))
            records = await self.live.load_many([game_id for game_id in pending if game_id not in cached])
            records.update(cached)
            unknown = [g for g, r in records.items()
                       if r is None and all(items[i][2] is Kind.UNKNOWN for i in by_game[g])]
            stored_elsewhere, again = await self._elsewhere(unknown, records) if unknown else (set(), set())
            to_save: list[ClockedGame] = []
            produced: dict[str, list[tuple[int, str, list[ops.AppliedMove]]]] = {}
            for game_id in pending:
                if game_id in again:
                    continue
                record = records[game_id]
                if (game_id in stored_elsewhere or (record is not None and record.kind is Kind.TRIPLE_BLOCK)
                        or any(items[i][2] is Kind.TRIPLE_BLOCK for i in by_game[game_id])):
                    correspondence.append(game_id)
                    continue
                record = record or ClockedGame(game_id)
                produced[game_id] = [(i, *items[i][1](record)) for i in by_game[game_id]]
                to_save.append(record)
            saved = await self.live.save_many(to_save, remember=True, copies=copies, read_in=generation)
            lost = set(again)
            for record, ok in zip(to_save, saved, strict=True):
                if not ok:
                    lost.add(record.game_id)
                    continue
                moves = [m for _, _, applied in produced[record.game_id] for m in applied]
                if moves:
                    state = clock_state(record, moves[-1].at_ms, now, cause=moves[-1].cause)
                    state.meta.trace_id = trace_of_key(record.game_id)
                    states.append(state)
                for index, outcome, _ in produced[record.game_id]:
                    outcomes[index] = outcome
            pending = sorted(lost)
            if not pending:
                break
        else:
            raise ConcurrentUpdateError(f"games {pending[:5]} kept changing while being updated")
        await asyncio.gather(self.publisher.publish(states), self.copies.save(copies))
        for game_id in correspondence:
            for index in by_game[game_id]:
                outcomes[index] = await self.change_correspondence(game_id, items[index][1])
        return outcomes

    async def change_correspondence(self, game_id: str, mutate: Mutation) -> str:
        """Apply `mutate` to a Triple Block game in PostgreSQL; its ClockState goes through the outbox."""
        async def in_transaction(connection: Connection, record: ClockedGame) -> str:
            outcome, moves = mutate(record)
            if moves:
                await self.outbox.add(connection, clock_state(record, moves[-1].at_ms, self.now_ms(),
                                                              cause=moves[-1].cause))
            return outcome

        for _ in range(MAX_ATTEMPTS):
            # What Redis alone knows of the game (events that came before its time control) seeds its row.
            seed = await self.live.load(game_id) or ClockedGame(game_id)
            try:
                changed = await self.correspondence.change(game_id, in_transaction, create=seed)
            except StaleSeedError:
                continue
            assert changed is not None
            return changed[0]
        raise ConcurrentUpdateError(f"game {game_id} changed {MAX_ATTEMPTS} times while being created")

    # -- life cycle ------------------------------------------------------------------------------

    async def on_requested(self, batch: list[ev.GameRequested]) -> str:
        """Store the time control, rated flag and competition; start if GameStarted came first."""
        batch = self._playable("requested", batch)
        now = self.now_ms()
        items = [(e.game_id, _with_moves(ops.on_requested, meta_of_requested(e), now), kind_of(e.time_control))
                 for e in batch]
        # A game is requested before anything else about it is published: no read first (one
        # round trip per batch less); the rare game something overtook loses the compare-and-set.
        self._count("requested", await self.change_many(items, new=True))
        return "handled"

    async def on_started(self, batch: list[ev.GameStarted]) -> str:
        """Start the first mover's clock at started_at, present or not (T-16)."""
        batch = self._playable("started", batch)
        now = self.now_ms()
        items = [(e.game_id, _start(e, ms_of(e.started_at), now), kind_of(e.time_control)) for e in batch]
        self._count("started", await self.change_many(items))
        return "handled"

    async def on_finished(self, batch: list[ev.GameFinished]) -> str:
        """Stop the clock; no flag can follow a finished game."""
        now = self.now_ms()
        items = [(e.game_id, _outcome(ops.on_finished, ms_of(e.finished_at), now), Kind.UNKNOWN) for e in batch]
        outcomes = await self.change_many(items)
        self._count("finished", outcomes)
        return "handled" if "handled" in outcomes else "duplicate"

    async def on_presence(self, batch: list[ev.PlayerPresenceChanged]) -> str:
        """T-16/T-17: keep who is connected; after a first move, a drop arms 30 s."""
        now = self.now_ms()
        items = [(e.game_id, _outcome(ops.on_presence, e.player_id, e.online, ms_of(e.at), now), Kind.UNKNOWN)
                 for e in batch]
        outcomes = await self.change_many(items)
        self._count("presence", outcomes)
        return "handled" if "handled" in outcomes else "ignored"

    async def on_boost(self, batch: list[ev.BoostTaken]) -> str:
        """AR-5: apply the boost's cost if the player has not moved yet; otherwise ignore and count it."""
        now = self.now_ms()
        items = [(e.game_id, _boost(e.player_id, ms_of(e.at), now), Kind.UNKNOWN) for e in batch]
        outcomes = await self.change_many(items)
        self._count("boost", outcomes)
        return "handled" if {"applied", "parked"} & set(outcomes) else "ignored"

    def _playable(self, kind: str, batch: list[E]) -> list[E]:
        """The batch with every time control the rules refuse taken out (counted and logged).

        A clock the rules refuse cannot run, and an event that failed every time would hold its
        partition for good. The rest of the event still counts: a GameStarted with a bad control
        starts the game on its GameRequested's; a game with none has no clock.
        """
        for event in batch:
            problem = time_control_problem(event.time_control)
            if problem is not None:
                event.ClearField("time_control")
                self.metrics.count(kind, "invalid")
                log.warning("time control ignored: the rules refuse it",
                            extra={"game_id": event.game_id, "error": problem})
        return batch

    def _count(self, kind: str, outcomes: list[str]) -> None:
        for outcome, n in Counter(outcomes).items():
            self.metrics.count(kind, outcome, n)

    # -- moves, in batches -----------------------------------------------------------------------

    async def on_moves(self, moves: list[ev.MoveMade]) -> str:
        """Apply a batch of moves: per game one Redis read and one write, one produce per partition.

        Moves of one game share a partition (key game_id) and arrive in order; a ply at or
        below the last applied one is a redelivery and changes nothing. The batch's games are
        split in chunks worked on concurrently, so Python computes one chunk while Redis runs
        another's script.
        """
        by_game: dict[str, list[MoveFields]] = {}
        without_game = 0
        for move in moves:
            # Each field of a protobuf message is read once: every read builds a Python object.
            game_id = move.game_id
            if not game_id:
                without_game += 1
                continue
            stamp = move.played_at
            seconds, nanos = stamp.seconds, stamp.nanos
            fields = (move.player_id, move.ply, seconds * 1000 + nanos // 1_000_000 if seconds or nanos else None)
            game_moves = by_game.get(game_id)
            if game_moves is None:
                by_game[game_id] = [fields]
            else:
                game_moves.append(fields)
        now = self.now_ms()
        encoder = StateEncoder(now)
        games = list(by_game)
        chunks = [games[i:i + MOVE_CHUNK] for i in range(0, len(games), MOVE_CHUNK)]
        copies: list[LiveRow] = []
        results = await asyncio.gather(*(self._apply_live_moves(chunk, by_game, now, encoder, copies)
                                         for chunk in chunks))
        outcomes: Counter[str] = Counter()
        if without_game:
            outcomes["invalid"] = without_game
        states: list[EncodedState] = []
        correspondence: list[str] = []
        for chunk_outcomes, chunk_states, chunk_correspondence in results:
            outcomes.update(chunk_outcomes)
            states.extend(chunk_states)
            correspondence.extend(chunk_correspondence)
        # The clock states go out while PostgreSQL takes the copy; the offsets wait for both.
        await asyncio.gather(self.publisher.publish_encoded(states), self.copies.save(copies))
        for game_id in correspondence:
            for fields in by_game[game_id]:
                outcomes[await self.change_correspondence(game_id, _move_mutation(fields, now))] += 1
        self.metrics.count_moves(outcomes)
        return "handled" if outcomes["applied"] else "ignored"

    async def _apply_live_moves(
        self, games: list[str], by_game: dict[str, list[MoveFields]], now: int, encoder: StateEncoder,
        copies: list[LiveRow],
    ) -> tuple[list[str], list[EncodedState], list[str]]:
        """Apply the moves of `games` kept in Redis; return outcomes, states, and the Triple Block games.

        The records saved are added to `copies`.
        """
        outcomes: list[str] = []
        states: list[EncodedState] = []
        correspondence: list[str] = []
        pending = games
        apply_move, encode = ops.apply_move, encoder.after_move
        for attempt in range(MAX_ATTEMPTS):
            generation = self.live.generation
            # First pass: the games this process saved last are taken as it saved them, with no
            # read; the compare-and-set of the save checks them. A game decided on such a copy
            # without a save (a stale or refused move) is read and decided again.
            cached = self.live.take_known(pending) if attempt == 0 else {}
            records = await self.live.load_many([game_id for game_id in pending if game_id not in cached])
            records.update(cached)
            missing = [game_id for game_id, record in records.items() if record is None]
            stored_elsewhere, again = await self._elsewhere(missing, records) if missing else (set(), set())
            to_save: list[ClockedGame] = []
            unchecked: set[str] = set(again)
            produced: dict[str, tuple[list[str], list[EncodedState]]] = {}
            for game_id in pending:
                if game_id in again:
                    continue
                record = records[game_id]
                if game_id in stored_elsewhere or (record is not None and record.meta.kind is _TRIPLE_BLOCK):
                    correspondence.append(game_id)
                    continue
                record = record or ClockedGame(game_id)
                game_outcomes: list[str] = []
                game_states: list[EncodedState] = []
                changed = False
                trace_id = trace_of_key(game_id)  # each state in the chain of its game's moves
                for player_id, ply, played_at in by_game[game_id]:
                    outcome = apply_move(record, player_id, ply, played_at, now)
                    game_outcomes.append(outcome)
                    if outcome == "applied":
                        changed = True
                        game_states.append(encode(record, trace_id))
                    elif outcome == "parked":
                        changed = True
                if changed:
                    to_save.append(record)
                elif game_id in cached:
                    unchecked.add(game_id)
                produced[game_id] = (game_outcomes, game_states)
            saved = await self.live.save_many(to_save, remember=True, copies=copies, read_in=generation)
            lost = {record.game_id for record, ok in zip(to_save, saved, strict=True) if not ok} | unchecked
            for game_id, (game_outcomes, game_states) in produced.items():
                if game_id not in lost:
                    outcomes.extend(game_outcomes)
                    states.extend(game_states)
            pending = sorted(lost)
            if not pending:
                return outcomes, states, correspondence
        raise ConcurrentUpdateError(f"games {pending[:5]} kept changing while moves were applied")


def _with_moves(operation: Callable[..., list[ops.AppliedMove]], *args: object) -> Mutation:
    """A mutation from an operation returning the moves it applied (a start applies early moves)."""
    def mutate(record: ClockedGame) -> tuple[str, list[ops.AppliedMove]]:
        moves = operation(record, *args)
        return ("started" if record.status is Status.RUNNING else "handled"), moves
    return mutate


def _start(event: ev.GameStarted, started_at_ms: int | None, now_ms: int) -> Mutation:
    """GameStarted as a mutation; its meta is read from the event only if the record may lack some of it."""
    def mutate(record: ClockedGame) -> tuple[str, list[ops.AppliedMove]]:
        # Most games were requested first: their meta has all a GameStarted tells, and building
        # the event's (a dataclass of 16 fields) cost more than the rest of the start.
        meta = record.meta if ops.start_adds_nothing(record.meta) else meta_of_started(event)
        moves = ops.on_started(record, meta, started_at_ms, now_ms)
        return ("started" if record.status is Status.RUNNING else "handled"), moves
    return mutate


def _boost(player_id: str, at_ms: int | None, now_ms: int) -> Mutation:
    """BoostTaken as a mutation: an applied boost's state goes to the play site (AR-5)."""
    def mutate(record: ClockedGame) -> tuple[str, list[ops.AppliedMove]]:
        return ops.boost_published(record, player_id, at_ms, now_ms)
    return mutate


def _outcome(operation: Callable[..., str], *args: object) -> Mutation:
    """A mutation from an operation returning its outcome."""
    def mutate(record: ClockedGame) -> tuple[str, list[ops.AppliedMove]]:
        return operation(record, *args), []
    return mutate


def _move_mutation(fields: MoveFields, now: int) -> Mutation:
    """One move as a mutation (the Triple Block path)."""
    player_id, ply, played_at = fields

    def mutate(record: ClockedGame) -> tuple[str, list[ops.AppliedMove]]:
        outcome = ops.apply_move(record, player_id, ply, played_at, now)
        if outcome != "applied":
            return outcome, []
        return outcome, [ops.AppliedMove(record.ply, ops.game_switch_ms(record))]
    return mutate
