"""Settings of the arena service, from environment variables."""

from __future__ import annotations

from arbiter.kit.settings import KitSettings


class ArenaSettings(KitSettings):
    """The arena service's settings; the kit's fields plus its own defaults."""

    grpc_port: int = 50053
    metrics_port: int = 9103
