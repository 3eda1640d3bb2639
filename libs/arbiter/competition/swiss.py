"""Swiss pairing (T-8, T-12, T-13, T-18..T-20): our history in, the FIDE Dutch pairing out.

The history of a tournament becomes the same TRF model that `arbiter pair` reads from a file
(`trf.prepared_model`), and `dutch.pair_round` pairs the next round from it: so a tournament
exported with `tournament_to_trf` re-pairs to exactly what the service paired, with our own
engine or any other that implements the 2025 Dutch system.

Home-and-away rounds (T-12) are two TRF rounds with reversed colours; only the first is
paired and the second game of each pair reverses its colours, so the engine's score and
colour arithmetic sees every game as it was played. Pairs that met only through a forfeit are
forbidden pairs of the model, as T-13 wants ("never the same opponent twice").

Every pairing the engine returns is checked against the absolute criteria (`violations`):
a breach is a fault of the engine, reported as `RuleBreach` (an `EngineFault`) and never
handed on.
When no pairing complies, `NoValidPairing` says so; like lichess on bbpPairings' "No valid
pairing exists", the caller then ends the tournament.

Deterministic: the model is a function of the history (first board white, XXC white1).
"""

from __future__ import annotations

from collections.abc import Sequence

from arbiter.competition.dutch import EngineFault, NoValidPairing, pair_round, round_players
from arbiter.competition.swiss_model import (
    NumberedEntrants,
    PairingError,
    PairingState,
    PlayerState,
    PreparedTournament,
    SwissRound,
    SwissRoundPairing,
    prepare,
    violations,
)
from arbiter.competition.trf import TrfTournament, parse_trf, prepared_model, tournament_to_trf

__all__ = [
    "ENGINE",
    "EngineFault",
    "NoValidPairing",
    "PairingError",
    "NumberedEntrants",
    "RuleBreach",
    "SwissRound",
    "SwissRoundPairing",
    "check_pairing",
    "pair_swiss_round",
    "pair_trf",
    "trf_state",
    "tournament_to_trf",
]

ENGINE = "fide-dutch-2025"


class RuleBreach(EngineFault):
    """The engine proposed a pairing that breaks an absolute criterion: an engine fault, never used."""


def pair_swiss_round(
    entrants: NumberedEntrants,
    history: Sequence[SwissRound],
    round_number: int,
    total_rounds: int,
    *,
    double: bool = False,
) -> SwissRoundPairing:
    """Pair Swiss round `round_number` of `total_rounds` from the history of the earlier rounds (T-13)."""
    prepared, state = _prepare(entrants, history, round_number, total_rounds, double)
    model = prepared_model(prepared, rounds=_engine_rounds(total_rounds, prepared))
    pairing = pair_round(model)
    entrant_of = {start: number for number, start in prepared.start_numbers().items()}
    pairs = [(entrant_of[white], entrant_of[black]) for white, black in pairing.pairs]
    bye = None if pairing.bye is None else entrant_of[pairing.bye]
    _guard(state, pairs, bye)
    return SwissRoundPairing(round=round_number, pairs=pairs, bye=bye, engine=ENGINE)


def check_pairing(
    entrants: NumberedEntrants,
    history: Sequence[SwissRound],
    round_number: int,
    total_rounds: int,
    pairs: Sequence[tuple[int, int]],
    bye: int | None,
    *,
    double: bool = False,
) -> list[str]:
    """The absolute criteria a proposed pairing breaks (C.04.1, T-8, T-13, T-20); empty when it complies."""
    _, state = _prepare(entrants, history, round_number, total_rounds, double)
    return violations(state, pairs, bye)


def pair_trf(text: str) -> SwissRoundPairing:
    """Pair the next round of a TRF text, in its starting numbers, as the reference engine would.

    TrfError when the text cannot be read, NoValidPairing when no pairing complies (bbpPairings'
    "No valid pairing exists"), PairingError when the file cannot be paired at all.
    """
    tournament = parse_trf(text)
    pairing = pair_round(tournament)
    pairs = list(pairing.pairs)
    _guard(trf_state(tournament), pairs, pairing.bye)
    return SwissRoundPairing(round=pairing.round, pairs=pairs, bye=pairing.bye, engine=ENGINE)


def trf_state(tournament: TrfTournament, played_rounds: int | None = None) -> PairingState:
    """The state the absolute criteria read before round `played_rounds + 1` of a TRF (the next by default)."""
    played_rounds = tournament.played_rounds if played_rounds is None else played_rounds
    players = round_players(tournament, played_rounds)
    forbidden: set[frozenset[int]] = set()
    for group in tournament.forbidden:
        if group.first <= played_rounds + 1 <= group.last:
            forbidden.update(frozenset((a, b)) for a in group.players for b in group.players if a != b)
    return PairingState(
        round=played_rounds + 1,
        last_round=played_rounds >= tournament.rounds - 1,
        players=tuple(
            PlayerState(
                id=p.number, rank=p.rank, score=p.score, colours=p.colours, opponents=p.opponents,
                bye_eligible=p.eligible_for_bye, topscorer=p.topscorer,
            )
            for p in players.values()
            if p.present
        ),
        forbidden=frozenset(forbidden),
    )


def _guard(state: PairingState, pairs: Sequence[tuple[int, int]], bye: int | None) -> None:
    """Refuse a pairing that breaks an absolute criterion (C.04.1): it would be an engine fault."""
    problems = violations(state, pairs, bye)
    if problems:
        raise RuleBreach(f"round {state.round}: the engine's pairing breaks " + "; ".join(problems))


def _engine_rounds(total_rounds: int, prepared: PreparedTournament) -> int:
    """The engine must see the last round as the last ([C3]'s topscorers); in double rounds it pairs
    the first of the two TRF rounds, so the count stops there."""
    legs = prepared.legs_per_round
    return total_rounds * legs - (legs - 1)


def _prepare(
    entrants: NumberedEntrants,
    history: Sequence[SwissRound],
    round_number: int,
    total_rounds: int,
    double: bool,
) -> tuple[PreparedTournament, PairingState]:
    """Validate the request and build the pairing state."""
    if total_rounds < 1:
        raise PairingError(f"a tournament has at least 1 round, not {total_rounds}")
    if round_number != len(history) + 1:
        raise PairingError(
            f"round {round_number} cannot be paired from a history of {len(history)} rounds;"
            f" the next round is {len(history) + 1}"
        )
    if round_number > total_rounds:
        raise PairingError(f"round {round_number} is past the last round ({total_rounds})")
    prepared = prepare(entrants, history, double=double)
    return prepared, prepared.state(round_number, total_rounds)
