"""Packing one Redis command of many arguments: redis-py's asyncio connection against the services' (hiredis).

Prints figures, asserts nothing (DESIGN: bench scripts never assert timings). Packs, `--repeat`
times each, an EVALSHA of `--arguments` arguments shaped like the busy registry's (player ids and
game ids, as a whole round's seats are sent), with redis-py's own asyncio packing and with
`arbiter.kit.redisclient`'s, and prints the time per command and per argument. Needs no server.

    .venv/bin/python tests/bench/bench_redis_packing.py [--arguments 7500] [--repeat 200]
"""

from __future__ import annotations

import argparse
import time

from redis.asyncio.connection import Connection

from arbiter.kit.redisclient import connect_redis


def main() -> None:
    """Time both packings of the same command."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arguments", type=int, default=7500)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    players = [f"bb1a-player-{n:05d}" for n in range(args.arguments * 2 // 3)]
    games = [f"t_0123456789ab-r3-b{n % 8 + 1}-g1" for n in range(args.arguments - len(players))]
    command = ("EVALSHA", "0123456789abcdef0123456789abcdef01234567", 2, "busy:players", "busy:games",
               *players, *games)
    services = connect_redis("redis://127.0.0.1:1").connection_pool.connection_class()
    print(f"EVALSHA of {len(command) - 2} arguments, {args.repeat} times each")
    for name, connection in (("redis-py asyncio", Connection()), ("services (hiredis)", services)):
        started = time.perf_counter()
        for _ in range(args.repeat):
            packed = connection.pack_command(*command)
        seconds = (time.perf_counter() - started) / args.repeat
        print(f"  {name:18s} {seconds * 1000:6.2f} ms per command, {seconds / len(command) * 1e9:5.0f} ns per "
              f"argument, {len(packed)} buffer(s) to write")


if __name__ == "__main__":
    main()
