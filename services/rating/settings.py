"""Settings of the rating service, from environment variables."""

from __future__ import annotations

from pydantic import Field

from arbiter.kit.settings import KitSettings


class RatingSettings(KitSettings):
    """The rating service's settings; the kit's fields plus its own defaults."""

    grpc_port: int = 50054
    metrics_port: int = 9104
    # GameFinished events rated per transaction at most: larger batches amortise the round trips.
    # Only a backlog fills them. Larger batches were faster alone, but slower in the system benchmark's
    # firehose after its rate stages (tests/bench/bench_system.py; figures in docs/performance.md).
    rating_batch_size: int = Field(default=1000, ge=1, le=10_000)
