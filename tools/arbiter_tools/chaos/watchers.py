"""A crowd of watchers for the chaos suite: Watch streams held on the competitions while faults land.

    crowd = WatcherCrowd([Watched("tournament", pairing_address, tournament_id), ...], size=1000, seed=7)
    crowd.start()       # a process of its own: `size` streams spread over the competitions
    ...                 # play, kill services
    crowd.stop(counts)  # every stream cancelled; what happened added to a FaultCounts

Like a play site's viewers: some read every change, some never read past the snapshot. A stream
refused with RESOURCE_EXHAUSTED (the services' limits per competition and per process) waits the
retry hint the service gives and asks again; one that breaks (its service killed) asks again after
a short back-off; one that ends with the competition is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import grpc

from arbiter.contracts import arena_pb2, arena_pb2_grpc, tournament_pb2, tournament_pb2_grpc
from arbiter_tools.chaos.faults import FaultCounts

# Streams per client channel (HTTP/2 connection), as many viewers' connections would spread them.
STREAMS_PER_CHANNEL = 100
RETRY_AFTER_KEY = "retry-after-ms"
# Seconds a broken stream waits before it asks again (uniform): a restarting service is not hammered.
BROKEN_BACKOFF = (0.5, 2.0)
# What the crowd's process counts (FaultCounts' names).
_COUNTED = ("watch_streams_asked", "watch_streams_served", "watch_refused", "watch_broken", "watch_changes")
_CHANNEL_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 200), ("grpc.min_reconnect_backoff_ms", 200),
                    ("grpc.max_reconnect_backoff_ms", 1000)]


@dataclass(frozen=True)
class Watched:
    """One competition to watch: "tournament" (pairing's WatchTournament) or "arena" (WatchArena)."""

    kind: str
    address: str
    competition_id: str


class WatcherCrowd:
    """`size` Watch streams spread over `watched`, held by a process of their own until `stop`.

    `reading` of them (a fraction, seeded) read every change; the others only their snapshot. The
    process runs at the lowest CPU priority (a play site's viewers are browsers elsewhere, not this
    machine's cores) and reports its counts twice a second; `counts` holds the latest.
    """

    def __init__(self, watched: Sequence[Watched], size: int = 1000, reading: float = 0.7, seed: int = 1) -> None:
        if not watched:
            raise ValueError("a crowd needs at least one competition to watch")
        self.plan = {"watched": [asdict(w) for w in watched], "size": size, "reading": reading, "seed": seed}
        self.counts = FaultCounts(watcher_crowds=1, watchers=size)
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def start(self) -> WatcherCrowd:
        """Start the crowd's process; returns at once."""
        # -c rather than -m: the package has imported this module already, and runpy would run a second copy.
        self._process = subprocess.Popen(
            [sys.executable, "-c", "import sys; from arbiter_tools.chaos.watchers import main; main(sys.argv[1:])",
             json.dumps(self.plan)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read_counts, name="chaos-watchers", daemon=True)
        self._reader.start()
        return self

    def _read_counts(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            with contextlib.suppress(ValueError):
                for name, value in json.loads(line).items():
                    setattr(self.counts, name, value)

    def stop(self, into: FaultCounts | None = None, timeout: float = 60.0) -> FaultCounts:
        """Cancel every stream (the process ends when its stdin closes); return the counts (added to `into` too)."""
        if self._process is not None:
            if self._process.stdin is not None:
                self._process.stdin.close()
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._reader is not None:
            self._reader.join(timeout)
        if into is not None:
            into.add(self.counts)
        return self.counts


class _Crowd:
    """The crowd's process: the streams, and what happened to them."""

    def __init__(self, watched: Sequence[Watched], size: int, reading: float, seed: int) -> None:
        self.watched = list(watched)
        self.size = size
        rng = random.Random(seed)
        self.readers = [rng.random() < reading for _ in range(size)]
        self.counts = dict.fromkeys(_COUNTED, 0)

    def _count(self, **increments: int) -> None:
        for name, n in increments.items():
            self.counts[name] += n

    async def run(self) -> None:
        """Hold the streams until stdin closes, printing the counts twice a second and at the end."""
        loop = asyncio.get_running_loop()
        stopping = asyncio.Event()
        loop.add_reader(sys.stdin.fileno(), lambda: stopping.set() if not sys.stdin.readline() else None)
        addresses = sorted({w.address for w in self.watched})
        per_address = max(1, self.size // max(1, len(addresses)) // STREAMS_PER_CHANNEL)
        channels = {address: [grpc.aio.insecure_channel(address, options=_CHANNEL_OPTIONS)
                              for _ in range(per_address)] for address in addresses}
        watchers = [asyncio.create_task(self._watch(n, channels)) for n in range(self.size)]
        while not stopping.is_set():
            print(json.dumps(self.counts), flush=True)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stopping.wait(), 0.5)
        for task in watchers:
            task.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
        for pool in channels.values():
            for channel in pool:
                await channel.close()
        print(json.dumps(self.counts), flush=True)

    def _open(self, n: int, channels: dict[str, list[grpc.aio.Channel]]) -> grpc.aio.UnaryStreamCall:
        target = self.watched[n % len(self.watched)]
        pool = channels[target.address]
        channel = pool[n % len(pool)]
        if target.kind == "tournament":
            return tournament_pb2_grpc.TournamentServiceStub(channel).WatchTournament(
                tournament_pb2.WatchTournamentRequest(tournament_id=target.competition_id))
        return arena_pb2_grpc.ArenaServiceStub(channel).WatchArena(
            arena_pb2.WatchArenaRequest(arena_id=target.competition_id))

    async def _watch(self, n: int, channels: dict[str, list[grpc.aio.Channel]]) -> None:
        """One viewer: ask, read the snapshot, read on (or not), ask again after a refusal or a break."""
        rng = random.Random(n)
        while True:
            call = self._open(n, channels)
            self._count(watch_streams_asked=1)
            try:
                if await call.read() is grpc.aio.EOF:
                    return  # the competition is over: nothing to watch
                self._count(watch_streams_served=1)
                if self.readers[n]:
                    while await call.read() is not grpc.aio.EOF:
                        self._count(watch_changes=1)
                # A viewer who does not read holds the stream until the service ends it or the crowd stops.
                code = await call.code()
                if code == grpc.StatusCode.OK:
                    return
                pause = self._pause_after(code, await call.trailing_metadata(), rng)
            except grpc.aio.AioRpcError as error:
                pause = self._pause_after(error.code(), error.trailing_metadata(), rng)
            finally:
                call.cancel()
            await asyncio.sleep(pause)

    def _pause_after(self, code: grpc.StatusCode, trailers: object, rng: random.Random) -> float:
        """Seconds to wait before asking again: the service's retry hint after a refusal, a back-off after a break."""
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            self._count(watch_refused=1)
            hint = dict(trailers or ()).get(RETRY_AFTER_KEY)  # type: ignore[call-overload]  # grpc's Metadata
            with contextlib.suppress(TypeError, ValueError):
                return int(hint) / 1000
            return 5.0
        self._count(watch_broken=1)
        return rng.uniform(*BROKEN_BACKOFF)


def main(argv: Sequence[str]) -> None:
    """The crowd's process, given its plan as JSON (see `WatcherCrowd.start`)."""
    plan = json.loads(argv[0])
    os.nice(19)
    crowd = _Crowd([Watched(**w) for w in plan["watched"]], plan["size"], plan["reading"], plan["seed"])
    asyncio.run(crowd.run())


if __name__ == "__main__":
    main(sys.argv[1:])
