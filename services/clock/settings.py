"""Settings of the clock service, from environment variables."""

from __future__ import annotations

from pydantic import Field

from arbiter.kit.settings import KitSettings


class ClockSettings(KitSettings):
    """The clock service's settings; the kit's fields plus its own defaults."""

    grpc_port: int = 50052
    metrics_port: int = 9102
    # Every key the service writes in Redis starts with this (games, deadlines, claims).
    clock_redis_prefix: str = "clock"
    # Real seconds the poller sleeps at most between two looks at the deadline set. Deadlines
    # written by this process wake its poller at once, so this is only the latency of a flag whose
    # deadline another replica set after this one's last look, and whose own poller did not take
    # it (that replica died), or whose claim's lease ran out. Each idle look costs CPU even with no
    # game at all (tests/bench/bench_idle_services.py).
    flag_poll_max_seconds: float = Field(default=0.1, gt=0)
    flag_batch_size: int = Field(default=500, ge=1)
    # Real seconds a replica may take to save a claimed flag before another one takes it over.
    flag_lease_seconds: float = Field(default=5.0, gt=0)
    move_batch_size: int = Field(default=1000, ge=1)
    event_batch_size: int = Field(default=500, ge=1)
    # KAFKA_FETCH_MIN_BYTES of the life-cycle consumer alone (requests, starts, ends, presence,
    # boosts; unset: KAFKA_FETCH_MIN_BYTES). Each such event carries its own time, so a fetch that
    # waits to fill moves no instant the clock keeps; but, like a late move, a return (T-17) held
    # past its deadline comes too late for that verdict, so raise it only where FLAG_TRANSIT_SECONDS
    # covers the wait (the load benchmark's returns are far from their deadlines). The moves'
    # consumer always keeps KAFKA_FETCH_MIN_BYTES.
    lifecycle_fetch_min_bytes: int | None = Field(default=None, ge=1, le=16 * 1024 * 1024)
    # Real seconds a finished game's clock stays readable (GetClock) and blocks late events.
    over_ttl_seconds: float = Field(default=86_400.0, gt=0)
    # Real seconds events of a game that never starts are kept waiting for it.
    parked_ttl_seconds: float = Field(default=3_600.0, gt=0)
    # Real seconds between two copies of every live Triple Block row into Redis (and two sweeps of
    # the expired copies of live games in PostgreSQL).
    reconcile_seconds: float = Field(default=60.0, gt=0)
    # After a Redis loss the rebuild writes back every game not over and the games over for at most
    # this many real seconds (a late or repeated event for them is likely); older ones are written
    # back when an event or a GetClock asks for them.
    rebuild_over_seconds: float = Field(default=600.0, ge=0)
    # Real seconds the token naming a Redis rebuild outlives a replica that died during it.
    rebuild_lease_seconds: float = Field(default=60.0, gt=0)
    live_gauge_seconds: float = Field(default=1.0, gt=0)
    # Real seconds between two pings of the broker; deadlines are held while it does not answer.
    broker_ping_seconds: float = Field(default=0.5, gt=0)
    # Real seconds deadlines stay held after the broker answers again: the play site's moves of the
    # outage arrive meanwhile, with their own times, and a flag is then decided on the whole record.
    flag_outage_grace_seconds: float = Field(default=5.0, ge=0)
    # Real seconds a deadline (T-16, T-17, TB-4) waits before it is decided: a move or a return made
    # just before it, with its own time, may still be on its way (the play site's publication, the
    # broker's fetch), and it counts if it arrives within them. The verdict keeps the deadline's
    # instant; only its publication waits, so every flag is this much later: 0 publishes flags at their
    # deadline (tests/bench/bench_clock_service.py); a site whose moves travel longer raises it.
    flag_transit_seconds: float = Field(default=0.0, ge=0, le=10)
