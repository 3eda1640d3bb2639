"""Settings of the pairing service, from environment variables."""

from __future__ import annotations

from arbiter.kit.settings import KitSettings


class PairingSettings(KitSettings):
    """The pairing service's settings; the kit's fields plus its own defaults."""

    grpc_port: int = 50051
    metrics_port: int = 9101
