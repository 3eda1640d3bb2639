"""Settings of the pairing service, from environment variables."""

from __future__ import annotations

from pydantic import Field

from arbiter.kit.settings import WatchSettings


class PairingSettings(WatchSettings):
    """The pairing service's settings; the kit's fields (with Watch limits) plus its own defaults."""

    grpc_port: int = 50051
    metrics_port: int = 9101
    # The services this one calls (the embedded stack sets <SERVICE>_GRPC_ADDR for each).
    openings_grpc_addr: str = Field(description="host:port of the OpeningService")
    rating_grpc_addr: str = Field(description="host:port of the RatingService")
    clock_grpc_addr: str = Field(description="host:port of the ClockService (who sat in a game closed by T-15)")
    # Deadline of one call to another service, in real seconds.
    call_timeout_seconds: float = Field(default=10.0, gt=0)
    # How often (real seconds) stored state is scanned for tournaments to move on: the safety
    # net after a crash; rounds are normally paired the moment their last result arrives.
    reconcile_seconds: float = Field(default=2.0, gt=0)
    # Rounds paired at the same time by one replica (each holds a few connections).
    pairing_concurrency: int = Field(default=16, ge=1)
    # Processes for the Swiss engine (CPU bound); 0 pairs in a thread of this process.
    pairing_processes: int = Field(default=0, ge=0)
    # Real seconds a player stays "playing" in the busy registry without news of the game (T-18).
    busy_ttl_seconds: int = Field(default=86400, ge=60)
    # How often (real seconds) a replica checks that Redis still holds the whole busy registry; when
    # it does not, one replica replays the last busy_ttl_seconds of the game topics into it.
    busy_check_seconds: float = Field(default=5.0, gt=0)
    # A replica rebuilding the registry holds the job this long at most (real seconds): if it dies,
    # another takes the job over after that.
    busy_rebuild_lease_seconds: int = Field(default=600, ge=10)
    # Redis connections of the busy registry (the result consumer, the rounds being paired, the
    # rebuild), a pool of its own: neither the calls nor other background work can take them.
    redis_busy_connections: int = Field(default=10, ge=1)
    # Events per batch from game.finished and game.started: a batch costs two round trips whatever
    # its size, so when a whole round finishes at once larger batches take the results in sooner
    # (tests/bench/bench_pairing_service.py). Steady load makes small batches anyway.
    result_batch_size: int = Field(default=2000, ge=1)
    # A replica that has had every result partition to itself this long (real seconds) skips the look
    # at a round again after its results commit: no other replica can be finishing the round with it.
    # Longer than a batch of results can take, as the replica that had partitions before may still be
    # handling one after a rebalance.
    sole_consumer_settle_seconds: float = Field(default=30.0, ge=0)
    # The Kafka consumer group of this deployment's replicas (offsets live with it). Systems sharing
    # one broker, like the test suite's, each need their own: tansu can leave a group whose members
    # all left wedged for the next process that joins it.
    pairing_consumer_group: str = Field(default="pairing", min_length=1)
    # T-5: wrong passwords a private tournament takes in a burst, refilled over the window (real
    # seconds), whoever guesses and under whatever player id: 10 per 10 minutes lets a person
    # mistype, and a guesser try at most 1,440 passwords a day.
    password_attempts_burst: int = Field(default=10, ge=1)
    password_attempts_window_seconds: float = Field(default=600.0, gt=0)
