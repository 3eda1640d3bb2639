"""Settings of the rating service, from environment variables."""

from __future__ import annotations

from pydantic import Field

from arbiter.kit.settings import KitSettings


class RatingSettings(KitSettings):
    """The rating service's settings; the kit's fields plus its own defaults."""

    grpc_port: int = 50054
    metrics_port: int = 9104
    # GameFinished events rated per transaction at most: larger batches amortise the round trips.
    # Only a backlog fills them. 2,000 was faster alone and in a firehose-only run, but after the
    # benchmark's rate stages PostgreSQL spent half as much again per game and the firehose fell
    # to 2,086-2,771/s (4,286-4,817 with 1,000; issue 9 note, session 9).
    rating_batch_size: int = Field(default=1000, ge=1, le=10_000)
