"""Pairing's round save in PostgreSQL: rounds of round robins inserted together, with and without the games' key.

Prints figures, asserts nothing (DESIGN: bench scripts never assert timings). One run:
1. on DATABASE_URL's server (else the machine's PostgreSQL) makes a fresh database with pairing's
   schema twice: as migrated ("without key", migration 003) and with the games' foreign key to
   tournaments put back ("with key", as before 003);
2. in each, `--tournaments` running round robins of 16, then `--rounds` rounds of each saved by
   `store.save_rounds`, `--per-save` tournaments per statement as the pairing service saves the rounds
   that end together, each in a transaction holding their row locks; the two schemas take turns
   save by save, so a drift of the machine falls on both alike;
3. prints per schema the mean and median time of one save and the time per game.

    .venv/bin/python tests/bench/bench_round_save.py [--tournaments 640] [--rounds 6] [--per-save 32]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from datetime import UTC, datetime, timedelta

import asyncpg

from arbiter.competition.tournament_flow import PlannedGame
from arbiter.kit.db import create_pool, migrate, migrations_in
from arbiter_tools.devstack.infra import scratch_database
from services.pairing import store
from services.pairing.main import MIGRATIONS

ENTRANTS = 16
SCHEMAS = {"without_key": "bench_round_save_plain", "with_key": "bench_round_save_keyed"}


async def _prepare(url: str, schema: str, tournaments: int, with_key: bool) -> asyncpg.Pool:
    pool = await create_pool(url, schema, max_size=2)
    await migrate(pool, schema, migrations_in(MIGRATIONS, "pairing"))
    if with_key:
        await pool.execute("ALTER TABLE games ADD FOREIGN KEY (tournament_id) REFERENCES tournaments (id)")
    now = datetime.now(UTC)
    await pool.executemany(
        """
        INSERT INTO tournaments (id, creator_id, name, variant, base_seconds, increment_seconds, speed, threshold,
            capacity, minimum_entrants, starts_at, duration_minutes, closes_at, private, rated, opening_mode,
            home_and_away, extra_round, settings, state, format, rounds, games_per_pairing, created_at)
        VALUES ($1, 'bench', $1, 'international', 180, 2, 'blitz', 20, 16, 2, $2, 120, $3, false, true, 'free',
            false, false, '', 'running', 'round_robin', 15, 1, $2)
        """,
        [(f"t_{n:06d}", now, now + timedelta(hours=2)) for n in range(tournaments)],
    )
    return pool


def _round(tournament_id: str, number: int) -> tuple[store.NewRound, list[store.NewGame]]:
    games = [store.NewGame(PlannedGame(f"{tournament_id}-r{number}-b{board}-g1", number, board, 1,
                                       f"{tournament_id}-p{board}", f"{tournament_id}-p{ENTRANTS + 1 - board}"),
                           tournament_id)
             for board in range(1, ENTRANTS // 2 + 1)]
    return store.NewRound(tournament_id, number, b"opening", None, 0, "berger", "[]"), games


async def _save(pool: asyncpg.Pool, tournament_ids: list[str], number: int) -> float:
    rounds, games = [], []
    for tournament_id in tournament_ids:
        new_round, new_games = _round(tournament_id, number)
        rounds.append(new_round)
        games += new_games
    async with pool.acquire() as connection, connection.transaction():
        await store.tournaments_and_open_games(connection, tournament_ids, lock=True)
        started = time.perf_counter()
        await store.save_rounds(connection, rounds, games, datetime.now(UTC))
        return time.perf_counter() - started


async def run(url: str, tournaments: int, rounds: int, per_save: int) -> None:
    pools = {name: await _prepare(url, schema, tournaments, with_key=name == "with_key")
             for name, schema in SCHEMAS.items()}
    seconds: dict[str, list[float]] = {name: [] for name in pools}
    ids = [f"t_{n:06d}" for n in range(tournaments)]
    try:
        for number in range(1, rounds + 1):
            for start in range(0, tournaments, per_save):
                for name, pool in pools.items():
                    seconds[name].append(await _save(pool, ids[start:start + per_save], number))
    finally:
        for pool in pools.values():
            await pool.close()
    games_per_save = per_save * ENTRANTS // 2
    print(f"{tournaments} round robins of {ENTRANTS}, {rounds} rounds, {per_save} rounds "
          f"({games_per_save} games) per save, {len(seconds['with_key'])} saves each")
    for name, values in seconds.items():
        mean = statistics.fmean(values)
        print(f"  {name:12s} mean {mean * 1000:6.2f} ms, median {statistics.median(values) * 1000:6.2f} ms per save;"
              f" {mean / games_per_save * 1e6:5.1f} µs per game")


def main() -> None:
    """Parse the options and run on a fresh database."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tournaments", type=int, default=640)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--per-save", type=int, default=32)
    args = parser.parse_args()
    environ = dict(os.environ)
    with scratch_database(environ, prefix="arbiter_bench_round_save"):
        if "DATABASE_URL" not in environ:
            raise SystemExit("no PostgreSQL: set DATABASE_URL or start the machine's")
        asyncio.run(run(environ["DATABASE_URL"], args.tournaments, args.rounds, args.per_save))


if __name__ == "__main__":
    main()
