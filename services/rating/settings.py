"""Settings of the rating service, from environment variables."""

from __future__ import annotations

from arbiter.kit.settings import KitSettings


class RatingSettings(KitSettings):
    """The rating service's settings; the kit's fields plus its own defaults."""

    grpc_port: int = 50054
    metrics_port: int = 9104
