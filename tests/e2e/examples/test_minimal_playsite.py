"""examples/minimal_playsite run as a developer runs it, against the whole system with service tokens: to the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "minimal_playsite" / "main.py"
# Two hours of competition time in under a minute; the bots' clocks (3 minutes + 2 s) still hold
# several real seconds' worth of moves in transit.
TIME_SCALE = 120.0
PLAYERS = 6

pytestmark = pytest.mark.timeout(300)


def test_the_minimal_playsite_plays_its_tournament_and_arena_to_the_end(start_system) -> None:
    stack = start_system(time_scale=TIME_SCALE, auth=True)
    # The token as the example's README mints it.
    token = subprocess.run(
        [sys.executable, "-m", "arbiter_tools.cli.main", "auth", "token", "--key", stack.auth_signing_key,
         "--role", "play-site", "--caller", "my-play-site"], capture_output=True, text=True, check=True).stdout.strip()
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": stack.kafka_bootstrap, "TIME_SCALE": repr(stack.time_scale),
           "TIME_ORIGIN": stack.time_origin, "PAIRING_GRPC_ADDR": stack.services["pairing"].grpc_address,
           "ARENA_GRPC_ADDR": stack.services["arena"].grpc_address, "ARBITER_TOKEN": token}
    run = subprocess.run([sys.executable, str(EXAMPLE), "--players", str(PLAYERS), "--json"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)

    tournament, arena, games = report["tournament"], report["arena"], report["games"]
    # T-2, T-9: 6 entrants under the default threshold play a round robin of 5 rounds, 15 games.
    assert tournament["state"] == "TOURNAMENT_STATE_FINISHED" and tournament["final"], tournament
    assert tournament["format"] == "round_robin"
    rows = tournament["standings"]
    assert [row["rank"] for row in rows] == sorted(row["rank"] for row in rows) and len(rows) == PLAYERS
    assert all(row["games"] == PLAYERS - 1 for row in rows), rows
    # T-7: every game hands out 2 points (the bots always move, so no game ends 0-0).
    assert sum(row["points"] for row in rows) == 2 * 15, rows
    # AR-1: the arena finished once its last game had a result; everyone who joined has a row.
    assert arena["state"] == "ARENA_STATE_FINISHED", arena
    assert len(arena["leaderboard"]) == PLAYERS and arena["games_played"] > 0
    assert games["without_result"] == [] and games["requested"] == 15 + arena["games_played"], games

    # The services agree: every game of every round has its result.
    metadata = (("authorization", f"Bearer {token}"),)
    with grpc.insecure_channel(stack.services["pairing"].grpc_address) as channel:
        pairings = tournament_pb2_grpc.TournamentServiceStub(channel).GetPairings(
            tp.GetPairingsRequest(tournament_id=tournament["id"]), metadata=metadata, timeout=10)
    played = [game for pairing_round in pairings.rounds for game in pairing_round.games]
    assert len(pairings.rounds) == PLAYERS - 1 and len(played) == 15 and all(game.finished for game in played)
