"""Helpers of the Watch integration tests: players, competitions to watch, a service's series."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit.events import timestamp
from arbiter_tools.simulator.bench.readings import scrape


def player(prefix: str) -> str:
    """A new player id."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def registered(player_id: str) -> common.Actor:
    """The player as a registered account acting."""
    return common.Actor(player_id=player_id, kind=common.ACCOUNT_KIND_REGISTERED)


def tournament_settings() -> tp.TournamentSettings:
    """A tournament that starts tomorrow: joined and watched, never played here."""
    return tp.TournamentSettings(
        name="Crowded", variant="international",
        time_control=common.TimeControl(fischer=common.FischerControl(base_seconds=180, increment_seconds=2)),
        capacity=200, starts_at=timestamp(datetime.now(UTC) + timedelta(days=1)), duration_minutes=120,
    )


def arena_settings() -> ap.ArenaSettings:
    """An hour's arena of three-minute games."""
    return ap.ArenaSettings(name="Crowded", variant="international", duration_minutes=60,
                            time_control=common.FischerControl(base_seconds=180, increment_seconds=2))


def metric(url: str, name: str, **labels: str) -> float:
    """A series of the service's /metrics, summed over the samples with `labels` (0 when absent)."""
    wanted = [f'{key}="{value}"' for key, value in labels.items()]
    return sum(value for key, value in scrape(url).items()
               if key.split("{", 1)[0] == name and all(part in key for part in wanted))
