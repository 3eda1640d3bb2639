"""Drawing a round's opening: fetch the stored draw, else call the pure draw and save it (O-1..O-11)."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from arbiter.kit.db import Connection
from arbiter.kit.errors import FailedPrecondition
from arbiter.kit.events import timestamp
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from arbiter.openings import DrawnOpening, OpeningError, draw_opening
from arbiter.openings.modes import OpeningMode
from services.openings import store
from services.openings.convert import drawn_event
from services.openings.metrics import OpeningsMetrics
from services.openings.store import DrawKey, StoredDraw, draw_settings


@dataclass(frozen=True, slots=True)
class DrawRequest:
    """A validated draw request: which round, which variant and mode, and the Swiss no-repeat switch."""

    key: DrawKey
    variant: str
    mode: OpeningMode
    thematic_opening: int | None
    no_repeat: bool

    @property
    def settings(self) -> str:
        """The settings the draw is asked under: draws are kept per round and settings."""
        return draw_settings(self.variant, self.mode, self.thematic_opening)


class OpeningDraws:
    """Draws each round's opening once per settings and returns the stored one ever after (O-10, O-11).

    Keyed by the settings too: a draw asked for under other settings than the competition's
    (a mistaken or foreign caller) is kept apart, never returned for the competition's own
    request, never refused in its place and never counted in its no-repeat exclusion.
    """

    def __init__(
        self, pool: asyncpg.Pool, time_source: TimeSource, metrics: OpeningsMetrics, outbox: Outbox
    ) -> None:
        self.pool = pool
        self.outbox = outbox
        self.time_source = time_source
        self.metrics = metrics

    async def draw(self, request: DrawRequest) -> StoredDraw:
        """The opening of `request.key` under its settings: the stored one if drawn before, else a new one saved."""
        key = request.key
        async with self.pool.acquire() as connection:
            # The common case (a repeated call, home and away, a retry) needs no lock.
            stored = await store.find_draw(connection, key, request.settings)
            outcome = "repeated"
            if stored is None:
                async with connection.transaction():
                    await store.lock_competition(connection, key.kind, key.competition_id)
                    stored = await store.find_draw(connection, key, request.settings)
                    if stored is None:
                        stored = await self._draw_new(connection, request)
                        outcome = "drawn"
        self.metrics.draws.labels(self.metrics.service, stored.variant, stored.mode.value, outcome).inc()
        return stored

    async def _draw_new(self, connection: Connection, request: DrawRequest) -> StoredDraw:
        key = request.key
        reason = await store.cancellation_reason(connection, key.kind, key.competition_id)
        if reason is not None:
            raise FailedPrecondition(f"{key.kind} {key.competition_id} was cancelled ({reason}); it draws no openings")
        # O-10: a Swiss never draws the same table opening twice; O-9 thematic plays one opening throughout.
        no_repeat = request.no_repeat and request.mode.is_table_draw()
        exclude = (await store.drawn_numbers(connection, key.kind, key.competition_id, request.settings)
                   if no_repeat else set())
        try:
            drawn = draw_opening(
                request.variant, request.mode, seed=key.seed, exclude=exclude,
                thematic_opening=request.thematic_opening,
            )
        except OpeningError as error:
            if not exclude:
                raise
            # The request was valid; it is this competition's history that leaves nothing to draw.
            raise FailedPrecondition(f"{key.describe()}: {error}") from None
        stored = _stored(key, drawn, no_repeat)
        if await store.insert_draw(connection, stored, self.time_source.now()):
            event = drawn_event(stored)
            event.drawn_at.CopyFrom(timestamp(self.time_source.now()))
            await self.outbox.add(connection, event)
        else:
            # Unreachable under the competition lock, but a second writer must never win silently.
            found = await store.find_draw(connection, key, request.settings)
            if found is None:
                raise RuntimeError(f"{key.describe()}: draw neither saved nor found")
            stored = found
        return stored


def _stored(key: DrawKey, drawn: DrawnOpening, no_repeat: bool) -> StoredDraw:
    return StoredDraw(
        key=key, variant=drawn.variant, mode=drawn.mode, number=drawn.number, moves=drawn.moves, fen=drawn.fen,
        class_label=drawn.class_label, level=drawn.level, name=drawn.opening.name if drawn.opening else None,
        no_repeat=no_repeat,
    )
