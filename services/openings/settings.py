"""Settings of the openings service, from environment variables."""

from __future__ import annotations

from arbiter.kit.settings import KitSettings


class OpeningsSettings(KitSettings):
    """The openings service's settings; the kit's fields plus its own defaults."""

    grpc_port: int = 50055
    metrics_port: int = 9105
