"""Settings of the rating service, from environment variables."""

from __future__ import annotations

from pydantic import Field

from arbiter.kit.settings import KitSettings


class RatingSettings(KitSettings):
    """The rating service's settings; the kit's fields plus its own defaults."""

    grpc_port: int = 50054
    metrics_port: int = 9104
    # GameFinished events rated per transaction: larger batches amortise the round trips.
    rating_batch_size: int = Field(default=1000, ge=1, le=10_000)
