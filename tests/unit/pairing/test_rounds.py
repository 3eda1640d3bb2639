"""The Swiss round as a worker process receives it: plain tuples pair exactly as the records do (T-13).

`pair_from_rows(as_rows(...))` is what the pairing service sends to its engine processes; it must
give the very draw `pair_round` gives, round after round of a tournament with every kind of
result (T-15..T-19) and byes (T-8), and its rows must survive the trip (pickling).
"""

from __future__ import annotations

import multiprocessing
import pickle
import random
from concurrent.futures import ProcessPoolExecutor

from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.tournament_flow import pair_round
from arbiter.competition.types import Format
from arbiter.vocabulary import ResultKind
from services.pairing.rounds import as_rows, pair_from_rows, start_engine_workers

# (white points, black points, kind) of a game: a win either way, a draw, and each unplayed ending.
OUTCOMES = (
    (2, 0, ResultKind.NORMAL), (1, 1, ResultKind.NORMAL), (0, 2, ResultKind.NORMAL),
    (2, 0, ResultKind.NEVER_SAT), (0, 2, ResultKind.BUSY_FORFEIT), (0, 0, ResultKind.BOTH_ABSENT),
    (1, 1, ResultKind.CLOSED_DRAW),
)


def test_a_swiss_paired_from_rows_draws_every_round_as_from_the_records() -> None:
    rng = random.Random(41)
    seats = [Entrant(f"p{n:02d}", None, n, 1500.0 + 10 * n) for n in range(1, 24)]
    history: list[PlayedGame[str]] = []
    byes: list[Bye[str]] = []
    rounds = 7
    for number in range(1, rounds + 1):
        rows = pickle.loads(pickle.dumps(as_rows(seats, history, byes)))
        draw = pair_round(Format.SWISS, seats, history, byes, number, rounds, 1)
        assert pair_from_rows(Format.SWISS, *rows, number, rounds, 1) == draw
        for white, black in draw.pairs:
            white_points, black_points, kind = rng.choice(OUTCOMES)
            history.append(PlayedGame(number, white, black, white_points, black_points, kind, 1))
        if draw.bye is not None:
            byes.append(Bye(number, draw.bye, 2))
    assert {game.kind for game in history} == set(ResultKind)


def test_the_engine_workers_start_before_any_round_is_paired() -> None:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=context) as executor:
        start_engine_workers(executor, 2)
        # Started by the call itself, not by a round's task: two live workers, none of them asked to pair.
        assert len(multiprocessing.active_children()) >= 2
        rows = as_rows([Entrant(f"p{n}", None, n, 1500.0) for n in range(1, 9)], [], [])
        draw = executor.submit(pair_from_rows, Format.SWISS, *rows, 1, 3, 1).result(timeout=120)
        assert draw == pair_round(Format.SWISS, [Entrant(f"p{n}", None, n, 1500.0) for n in range(1, 9)], [], [],
                                  1, 3, 1)
