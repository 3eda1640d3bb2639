"""Settings of the rating service, from environment variables."""

from __future__ import annotations

from pydantic import Field

from arbiter.kit.settings import KitSettings


class RatingSettings(KitSettings):
    """The rating service's settings; the kit's fields plus its own defaults."""

    grpc_port: int = 50054
    metrics_port: int = 9104
    # GameFinished events rated per transaction at most: larger batches amortise the round trips.
    # Only a backlog fills them. 2,000 against 1,000 (issue 9 note, session 9): 7,798-8,299 rated
    # games/s against 6,000-7,531 alone (bench_rating_service.py, three pairs), 4,918 against
    # 4,717/s on average in the system's firehose (eight stages each).
    rating_batch_size: int = Field(default=2000, ge=1, le=10_000)
