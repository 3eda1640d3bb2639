"""Settings of the clock service, from environment variables."""

from __future__ import annotations

from arbiter.kit.settings import KitSettings


class ClockSettings(KitSettings):
    """The clock service's settings; the kit's fields plus its own defaults."""

    grpc_port: int = 50052
    metrics_port: int = 9102
