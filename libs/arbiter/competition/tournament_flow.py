"""The life of a round-based tournament between the rule modules: start, rounds, results, close.

Pure: standard library and the other rule modules only. The pairing service fetches what
these functions need, calls them, and saves and publishes what they return; every decision
on the way from the start time to the final standings is made here, with its rule:

- at the start: the minimum (T-3), format and rounds (T-2, T-9..T-12), Berger numbers
  (T-14) and initial ranks (T-13);
- each round: its pairing (Berger table or FIDE Dutch Swiss), its games with deterministic
  ids, two per pairing with colours reversed in home-and-away rounds (T-12, O-11), the bye
  (T-8), busy forfeits (T-18);
- each result: which ending it is (T-15..T-19) and its points (T-7);
- after each round: pair the next one, or finish (T-9, T-15).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final

from arbiter.competition.berger import berger_round, draw_berger_numbers
from arbiter.competition.formats import RoundPlan, plan_rounds
from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.scoring import GameScore, bye_points, score_game
from arbiter.competition.standings import StandingRow, compute_standings
from arbiter.competition.swiss import pair_swiss_round, tournament_to_trf
from arbiter.competition.swiss_model import PairingError, initial_order
from arbiter.competition.types import Format
from arbiter.vocabulary import GameResult, ResultKind, Side, Termination

__all__ = [
    "CLOSING_GRACE",
    "Closing",
    "FlowError",
    "NextStep",
    "OpenGame",
    "PairingError",
    "PlannedGame",
    "RoundDraw",
    "ScoredResult",
    "StartDecision",
    "berger_numbers",
    "busy_forfeit",
    "check_live_time_control",
    "close_tournament",
    "closing_deadline",
    "closing_draw",
    "decide_start",
    "final_standings",
    "game_id",
    "initial_ranks",
    "may_close",
    "meets_minimum_rating",
    "next_step",
    "pair_round",
    "result_of_abandon",
    "result_of_finish",
    "result_of_flag",
    "round_bye_points",
    "swiss_trf",
]

# T-15: games still running when the announced duration ends get 10 more minutes.
CLOSING_GRACE: Final = timedelta(minutes=10)
# R-6 names no bounds; these keep a live tournament live (a day per move is correspondence).
MAX_LIVE_BASE_SECONDS: Final = 3 * 3600
MAX_LIVE_INCREMENT_SECONDS: Final = 180


class FlowError(ValueError):
    """A tournament step that the rules cannot take; the message is written for people."""


# ---------------------------------------------------------------------------
# Creation helpers
# ---------------------------------------------------------------------------


def check_live_time_control(base_seconds: int, increment_seconds: int) -> None:
    """Raise FlowError unless base+increment is a live Fischer control a tournament can use (R-6)."""
    if base_seconds < 0 or increment_seconds < 0:
        raise FlowError(f"time control {base_seconds}+{increment_seconds}: base and increment must be >= 0 (R-6)")
    if base_seconds == 0 and increment_seconds == 0:
        raise FlowError("time control 0+0: a game needs some time on the clock (R-6)")
    if base_seconds > MAX_LIVE_BASE_SECONDS or increment_seconds > MAX_LIVE_INCREMENT_SECONDS:
        raise FlowError(
            f"time control {base_seconds}+{increment_seconds}: a live tournament allows at most "
            f"{MAX_LIVE_BASE_SECONDS} s base and {MAX_LIVE_INCREMENT_SECONDS} s increment (R-6)"
        )


def meets_minimum_rating(rating: float, minimum: int | None) -> bool:
    """Does an entrant's rating for the tournament's variant and speed reach its minimum (R-2; never a maximum)?"""
    return minimum is None or rating >= minimum


# ---------------------------------------------------------------------------
# The start
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartDecision:
    """What the start time decides: cancel (with the reason) or the round plan."""

    cancel_reason: str | None
    plan: RoundPlan | None


def decide_start(
    entrants: int, minimum_entrants: int, threshold: int, *, extra_round: bool, home_and_away: bool
) -> StartDecision:
    """Count the entrants at the start: cancel below the minimum (T-3), else fix format and rounds (T-2, T-9..T-12)."""
    if entrants < minimum_entrants:
        return StartDecision(
            cancel_reason=(
                f"{entrants} entrant{'s' if entrants != 1 else ''} registered at the start time, "
                f"fewer than the minimum of {minimum_entrants}: the tournament cancels itself (T-3)"
            ),
            plan=None,
        )
    return StartDecision(
        cancel_reason=None,
        plan=plan_rounds(entrants, threshold, extra_round=extra_round, double=home_and_away),
    )


def initial_ranks(ratings: Mapping[str, float]) -> dict[str, int]:
    """Initial rank 1..n of each entrant: rating descending, then name (T-13)."""
    order = initial_order({
        number: Entrant(player, rating=ratings[player]) for number, player in enumerate(sorted(ratings), start=1)
    })
    return {entrant.player: rank for rank, (_, entrant) in enumerate(order, start=1)}


def berger_numbers(entrants: Sequence[str], seed: str) -> dict[str, int]:
    """Berger numbers drawn at the start, reproducible from the tournament's seed (T-14)."""
    return draw_berger_numbers(entrants, seed)


# ---------------------------------------------------------------------------
# Rounds
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlannedGame:
    """One game of a round: board, leg (1 or 2, T-12), colours, and its id."""

    game_id: str
    round: int
    board: int
    leg: int
    white: str
    black: str


@dataclass(frozen=True, slots=True)
class RoundDraw:
    """The pairing of one round: (white, black) of the first game per board, and who rests (T-8)."""

    round: int
    pairs: tuple[tuple[str, str], ...]
    bye: str | None
    # "berger" or the Swiss engine's name (swiss.ENGINE)
    engine: str
    notes: tuple[str, ...] = ()

    def games(self, tournament_id: str, games_per_pairing: int) -> tuple[PlannedGame, ...]:
        """Every game of the round; with home and away the second reverses the colours (T-12, O-11)."""
        if games_per_pairing not in (1, 2):
            raise FlowError(f"games per pairing is 1 or 2 (T-12), not {games_per_pairing}")
        games = []
        for board, (white, black) in enumerate(self.pairs, start=1):
            games.append(PlannedGame(game_id(tournament_id, self.round, board, 1), self.round, board, 1, white, black))
            if games_per_pairing == 2:
                games.append(
                    PlannedGame(game_id(tournament_id, self.round, board, 2), self.round, board, 2, black, white)
                )
        return tuple(games)


def game_id(tournament_id: str, round_number: int, board: int, leg: int) -> str:
    """The id of a round game: a function of its place, so re-pairing after a crash names the same games."""
    return f"{tournament_id}-r{round_number}-b{board}-g{leg}"


def pairing_reads_history(fmt: Format) -> bool:
    """Whether pairing a round needs the games and byes so far: a Swiss does (T-13), a Berger table does not (T-14)."""
    return fmt is Format.SWISS


def pair_round(
    fmt: Format,
    seats: Sequence[Entrant],
    history: Sequence[PlayedGame[str]],
    byes: Sequence[Bye[str]],
    round_number: int,
    total_rounds: int,
    games_per_pairing: int,
) -> RoundDraw:
    """Pair round `round_number`: Berger tables in a round robin (T-14), FIDE Dutch in a Swiss (T-13).

    Deterministic: the same seats and history give the same draw. Raises PairingError when
    a Swiss cannot be paired without a rematch or a second bye (the tournament then ends).
    """
    if not 1 <= round_number <= total_rounds:
        raise FlowError(f"round {round_number} is outside 1..{total_rounds} (T-9)")
    if fmt is Format.ROUND_ROBIN:
        return _berger_draw(seats, round_number)
    by_rank = {_initial_rank(seat): seat.player for seat in seats}
    entrants, rounds = _swiss_history(seats, history, byes, round_number - 1)
    pairing = pair_swiss_round(entrants, rounds, round_number, total_rounds, double=games_per_pairing == 2)
    return RoundDraw(
        round=round_number,
        pairs=tuple((by_rank[white], by_rank[black]) for white, black in pairing.pairs),
        bye=None if pairing.bye is None else by_rank[pairing.bye],
        engine=pairing.engine,
    )


def swiss_trf(
    seats: Sequence[Entrant],
    history: Sequence[PlayedGame[str]],
    byes: Sequence[Bye[str]],
    rounds_done: int,
    total_rounds: int,
    games_per_pairing: int,
    name: str,
) -> str:
    """A Swiss tournament's first `rounds_done` rounds as a TRF file (T-13), entrants named by player id.

    It is the model the rounds were paired from: `arbiter pair --check` re-pairs every round to
    the same pairing. PairingError when the history cannot come from our rules.
    """
    entrants, rounds = _swiss_history(seats, history, byes, rounds_done)
    return tournament_to_trf(entrants, rounds, total_rounds, double=games_per_pairing == 2, name=name)


def _swiss_history(
    seats: Sequence[Entrant], history: Sequence[PlayedGame[str]], byes: Sequence[Bye[str]], rounds_done: int
) -> tuple[dict[int, Entrant], list[list[PlayedGame[int] | Bye[int]]]]:
    """The entrants numbered by initial rank (T-13) and their first `rounds_done` rounds, for the engine."""
    rank_of = {seat.player: _initial_rank(seat) for seat in seats}
    rounds: list[list[PlayedGame[int] | Bye[int]]] = [[] for _ in range(rounds_done)]
    for game in history:
        if game.round <= rounds_done:
            rounds[game.round - 1].append(
                PlayedGame(
                    game.round, rank_of[game.white], rank_of[game.black], game.white_points, game.black_points,
                    game.kind, game.leg,
                )
            )
    for bye in byes:
        if bye.round <= rounds_done:
            rounds[bye.round - 1].append(Bye(bye.round, rank_of[bye.entrant], bye.points))
    return {rank_of[seat.player]: seat for seat in seats}, rounds


def _initial_rank(seat: Entrant) -> int:
    """The entrant's initial rank; a Swiss is paired only once the start has given every entrant one (T-13)."""
    if seat.initial_rank is None:
        raise FlowError(f"{seat.player} has no initial rank: a Swiss numbers its entrants at the start (T-13)")
    return seat.initial_rank


def _berger_draw(seats: Sequence[Entrant], round_number: int) -> RoundDraw:
    """T-14: the FIDE Berger table for n entrants; with an odd n the highest number's partner rests (T-8)."""
    by_number = {seat.berger_number: seat.player for seat in seats if seat.berger_number is not None}
    if sorted(by_number) != list(range(1, len(seats) + 1)):
        raise FlowError("Berger numbers must be 1..n, one per entrant (T-14)")
    table_round = berger_round(len(seats), round_number)
    return RoundDraw(
        round=round_number,
        pairs=tuple((by_number[board.white], by_number[board.black]) for board in table_round.boards),
        bye=None if table_round.bye is None else by_number[table_round.bye],
        engine="berger",
    )


def round_bye_points(games_per_pairing: int) -> int:
    """Points of the round's bye: 2, or 4 when every pairing plays two games (T-8, T-12)."""
    return bye_points(games_per_pairing)


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScoredResult:
    """A round game's result, scored: kind, winner and points (T-7, T-15..T-19), and rated-ness (R-3)."""

    score: GameScore

    @property
    def kind(self) -> ResultKind:
        """The result kind."""
        return self.score.kind

    @property
    def result(self) -> GameResult:
        """The game's result: the winner's, a draw, or 0-0 (T-19)."""
        if self.score.kind is ResultKind.BOTH_ABSENT:
            return GameResult.BOTH_LOSE
        return GameResult.won_by(self.score.winner)


def result_of_finish(
    result: GameResult, termination: Termination | None, *, white_sat: bool, black_sat: bool,
    tournament_rated: bool,
) -> ScoredResult:
    """Score the play site's final word on a game (T-7, T-15..T-19, R-3); FlowError if it cannot be ours.

    `termination` is None when the play site named none this build knows: the game counts as played.
    """
    kind = ResultKind.of(termination, result)
    if kind is ResultKind.BOTH_ABSENT:
        # T-19: both absent, 0-0 (no automatic draw).
        if result not in (GameResult.BOTH_LOSE, GameResult.DRAW):
            raise FlowError(f"a game both players missed has no winner, not {result} (T-19)")
        return _scored(kind, None, tournament_rated, both_sat=False)
    return _scored(kind, result.winner, tournament_rated, both_sat=white_sat and black_sat)


def result_of_flag(loser: Side, *, loser_never_sat: bool, tournament_rated: bool) -> ScoredResult:
    """Score a flag from the clock service: the loser loses on time or disconnection (T-16, T-17); R-3 if never sat."""
    kind = ResultKind.NEVER_SAT if loser_never_sat else ResultKind.NORMAL
    return _scored(kind, loser.other, tournament_rated, both_sat=not loser_never_sat)


def result_of_abandon(*, tournament_rated: bool) -> ScoredResult:
    """Score a game neither player sat at: 0-0, no automatic draw (T-19)."""
    return _scored(ResultKind.BOTH_ABSENT, None, tournament_rated, both_sat=False)


def busy_forfeit(white_busy: bool, black_busy: bool, *, tournament_rated: bool) -> ScoredResult | None:
    """T-18: a player already in another game loses the round game by forfeit and it is not opened.

    None when both are free (the game opens). When both are busy neither is there to
    collect the win, which is T-19's "both absent": 0-0.
    """
    if white_busy and black_busy:
        return _scored(ResultKind.BOTH_ABSENT, None, tournament_rated, both_sat=False)
    if white_busy:
        return _scored(ResultKind.BUSY_FORFEIT, Side.BLACK, tournament_rated, both_sat=False)
    if black_busy:
        return _scored(ResultKind.BUSY_FORFEIT, Side.WHITE, tournament_rated, both_sat=False)
    return None


def closing_draw(*, white_sat: bool, black_sat: bool, tournament_rated: bool) -> ScoredResult:
    """T-15: a game still open when the tournament closes is scored a draw; rated only if both sat (R-3).

    The same score as the play site's own closed-at-deadline draw (`result_of_finish`).
    """
    return _scored(ResultKind.CLOSED_DRAW, None, tournament_rated, both_sat=white_sat and black_sat)


def _scored(kind: ResultKind, winner: Side | None, tournament_rated: bool, both_sat: bool) -> ScoredResult:
    return ScoredResult(score_game(kind, winner, tournament_rated=tournament_rated, both_sat=both_sat))


# ---------------------------------------------------------------------------
# After a round, and the close
# ---------------------------------------------------------------------------


class NextStep(StrEnum):
    """What a running tournament does next."""

    WAIT = "wait"  # games of the current round are still open
    PAIR = "pair"  # pair the next round
    FINISH = "finish"  # the last round is complete, or the duration is over (T-15)


def closing_deadline(closes_at: datetime) -> datetime:
    """When still-open games are drawn and the tournament closes: the announced end + 10 minutes (T-15)."""
    return closes_at + CLOSING_GRACE


def next_step(current_round: int, total_rounds: int, open_games: int, now: datetime, closes_at: datetime) -> NextStep:
    """Pair the next round once every game of this one has a result, unless it was the last or too late (T-9, T-15)."""
    if now >= closing_deadline(closes_at):
        return NextStep.FINISH
    if open_games > 0:
        return NextStep.WAIT
    if current_round >= total_rounds:
        return NextStep.FINISH
    if now >= closes_at:
        # T-15: the announced duration is over; rounds not yet started are not played.
        return NextStep.FINISH
    return NextStep.PAIR


def may_close(open_games: int, now: datetime, closes_at: datetime) -> bool:
    """T-15: whether the tournament may close now: at once when no game is open, else at the deadline."""
    return open_games == 0 or now >= closing_deadline(closes_at)


@dataclass(frozen=True, slots=True)
class OpenGame:
    """A game still open when the tournament closes, with who made a move in it (R-3)."""

    game_id: str
    white_sat: bool
    black_sat: bool


@dataclass(frozen=True, slots=True)
class Closing:
    """How a tournament closes (T-15): each open game's draw, in the order given, and the note it finishes with."""

    draws: tuple[tuple[OpenGame, ScoredResult], ...]
    note: str


def close_tournament(
    open_games: Sequence[OpenGame], current_round: int, total_rounds: int, *, tournament_rated: bool, note: str = ""
) -> Closing:
    """T-15: every still-open game is scored a draw; rounds not yet started are not played.

    `note` is why the tournament ends when it is not the close itself (a round that cannot be paired);
    without one, the note says what the close did.
    """
    draws = tuple(
        (game, closing_draw(white_sat=game.white_sat, black_sat=game.black_sat, tournament_rated=tournament_rated))
        for game in open_games
    )
    if open_games:
        count = len(open_games)
        note = note or (
            f"closed at the announced end + 10 minutes; {count} open game{'s' if count != 1 else ''} scored as"
            " draws (T-15)"
        )
    elif current_round < total_rounds and not note:
        note = (f"the announced duration ended after round {current_round} of {total_rounds}; "
                "rounds not yet started are not played (T-15)")
    return Closing(draws, note)


def final_standings(
    fmt: Format, seats: Iterable[Entrant], games: Iterable[PlayedGame[str]], byes: Iterable[Bye[str]]
) -> tuple[StandingRow, ...]:
    """Standings with the tie-breaks of the format (T-21 Swiss, T-22 round robin)."""
    return compute_standings(fmt, list(seats), games, byes)
