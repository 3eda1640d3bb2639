"""Swiss pairing (T-8, T-13, T-18..T-20): the FIDE Dutch engine py4swiss behind our own interface.

Our history in, our pairings out, through TRF: the history becomes a TRF(x) text (see
`trf.py`), py4swiss pairs the next round from it, and the answer comes back in entrant
numbers. The text is handed to py4swiss's own line and section classes in memory, the way
its file parser would, so no temporary file is written.

Every pairing the engine returns is checked against the absolute rules (`check_pairing`):
every entrant paired once (T-20), no rematch (T-2, T-13), at most one bye each while others
have none (T-8), colour rules outside the last round (C.04.1 f/g). What happens when the
engine cannot deliver, in order:

1. py4swiss on the TRF of the history (FIDE Dutch, C.04.3).
2. If it finds no pairing and the bye must go to someone: py4swiss again with forfeits
   written as full/zero-point byes, i.e. without C.04.1 d (a forfeit winner may then take
   the bye; T-8 counts byes only).
3. If it still finds none: py4swiss with everyone counted a topscorer, which lifts C.3 (the
   colour rules) and keeps them as quality criteria, so breaks are as few as possible. C.3
   is exactly our colour rule, so this only happens when no pairing keeps the colour rules.
   C.04.1 lets systems waive them in the last round; outside it, T-13's "never the same
   opponent twice" outranks a colour.
   Steps 2 and 3 say what they waived, and why, in `notes`.
4. If the engine errs or breaks a rule (or finds nothing at all): our fallback
   (`swiss_fallback`), with the colour rules, then without them (noted). `engine` says
   "fallback" and `fallback_reason` why; the service counts these. The property tests have
   never seen it fire.
5. Otherwise `PairingError("no legal pairing ...")`: nobody can be paired without a rematch
   or a second bye (tiny fields late in the event). Like lichess on bbpPairings' "No valid
   pairing exists", the caller should then end the tournament early.

Round 1 is the Dutch round 1 in closed form (`first_round`), identical to py4swiss's answer.

Home-and-away rounds (T-12) are two consecutive TRF rounds with reversed colours; only the
first is paired and the second game of each pair reverses its colours. So the engine's
score and colour maths see every game as it was played.

Deterministic: the TRF is a function of the history, the first board is white (XXC white1),
and py4swiss is deterministic.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace

from py4swiss.dynamicuint import DynamicUint
from py4swiss.engines import DutchEngine
from py4swiss.engines.common import ColorPreference, ColorPreferenceSide, ColorPreferenceStrength
from py4swiss.engines.common import Pairing
from py4swiss.engines.common import PairingError as Py4SwissPairingError
from py4swiss.engines.dutch.bracket import Bracket, BracketPairer, Brackets
from py4swiss.engines.dutch.bracket.bracket_matcher import BracketMatcher
from py4swiss.engines.dutch.player import Player, get_player_infos_from_trf
from py4swiss.engines.dutch.validity_matcher import ValidityMatcher
from py4swiss.trf import ParsedTrf, TrfLine
from py4swiss.trf.codes import PlayerCode, XCode
from py4swiss.trf.exceptions import ConsistencyError, LineError
from py4swiss.trf.exceptions import ParsingError as TrfParsingError
from py4swiss.trf.sections import PlayerSection, XSection

from arbiter.competition.swiss_fallback import SearchGaveUp, fallback_pairing
from arbiter.competition.swiss_model import (
    PairingError,
    PairingState,
    PreparedTournament,
    SwissBye,
    SwissEntrant,
    SwissGame,
    SwissRound,
    SwissRoundPairing,
    colour_problem,
    prepare,
    violations,
)
from arbiter.competition.trf import TrfError, parse_trf, relax_forfeit_wins, render_trf, tournament_to_trf

__all__ = [
    "ENGINE",
    "FALLBACK",
    "PairingError",
    "SwissBye",
    "SwissEntrant",
    "SwissGame",
    "SwissRound",
    "SwissRoundPairing",
    "check_pairing",
    "first_round",
    "pair_swiss_round",
    "pair_trf",
    "run_engine",
    "tournament_to_trf",
]

ENGINE = "py4swiss"
FALLBACK = "fallback"


class EngineNoPairing(Exception):
    """py4swiss found no pairing that keeps the FIDE Dutch absolute criteria (C.1-C.3 and forbidden pairs)."""


def pair_swiss_round(
    entrants: Sequence[SwissEntrant],
    history: Sequence[SwissRound],
    round_number: int,
    total_rounds: int,
    *,
    double: bool = False,
) -> SwissRoundPairing:
    """Pair Swiss round `round_number` of `total_rounds` from the history of the earlier rounds (T-13)."""
    prepared, state = _prepare(entrants, history, round_number, total_rounds, double)
    if round_number == 1:
        pairs, bye = first_round(state)
        if not violations(state, pairs, bye):
            return SwissRoundPairing(round=1, pairs=pairs, bye=bye, engine=ENGINE)
    by_start = {start: number for number, start in prepared.start_numbers().items()}
    # The engine must see the last round as the last (C.04.1 f/g exceptions), and in double
    # rounds it pairs the first of the two TRF rounds: XXR stops there.
    engine_rounds = total_rounds * prepared.legs_per_round - (prepared.legs_per_round - 1)
    text = render_trf(prepared, rounds=engine_rounds)
    return _pair(state, text, lambda start: by_start[start])


def first_round(state: PairingState) -> tuple[list[tuple[int, int]], int | None]:
    """The FIDE Dutch round 1 (C.04.3), in closed form: the lowest-ranked entrant gets the bye when the
    field is odd, the top half meets the bottom half in rank order, and the higher-ranked player has
    white on odd boards (XXC white1).

    It is exactly what py4swiss answers for a first round (tests compare them for many field
    sizes), without its quadratic Python work: 1.4 s of CPU for 200 entrants, here microseconds.
    """
    ranked = sorted(state.players, key=lambda p: p.rank)
    bye = ranked.pop().id if len(ranked) % 2 else None
    half = len(ranked) // 2
    pairs = []
    for board in range(half):
        higher, lower = ranked[board].id, ranked[board + half].id
        pairs.append((higher, lower) if board % 2 == 0 else (lower, higher))
    return pairs, bye


def check_pairing(
    entrants: Sequence[SwissEntrant],
    history: Sequence[SwissRound],
    round_number: int,
    total_rounds: int,
    pairs: Sequence[tuple[int, int]],
    bye: int | None,
    *,
    double: bool = False,
) -> list[str]:
    """The absolute rules a proposed pairing breaks (C.04.1, T-8, T-13, T-20); empty when it is legal."""
    _, state = _prepare(entrants, history, round_number, total_rounds, double)
    return violations(state, pairs, bye)


def pair_trf(text: str, *, strict: bool = False) -> SwissRoundPairing:
    """Pair the next round of any TRF(x) text, in its starting numbers; TrfError if it cannot be read.

    `strict` never relaxes or falls back: bbpPairings' answer, PairingError where it says
    "No valid pairing exists".
    """
    tournament = parse_trf(text)
    try:
        # py4swiss's own checks (points against results, both sides of every game) first, so
        # that a bad file is reported as such rather than "paired" by the fallback.
        _parse_trf_for_engine(text)
    except (TrfParsingError, ConsistencyError, LineError, ValueError) as exc:
        raise TrfError(str(exc)) from exc
    if tournament.rounds is None:
        raise PairingError("the TRF must give the number of rounds (XXR)")
    if tournament.rounds_played >= tournament.rounds:
        raise PairingError(f"all {tournament.rounds} rounds (XXR) are already in the file")
    return _pair(tournament.pairing_state(), text, lambda start: start, strict=strict)


def run_engine(text: str, *, waive_colours: bool = False) -> tuple[list[tuple[int, int]], int | None]:
    """py4swiss's FIDE Dutch pairing of the next round of a TRF text: (white, black) pairs and the bye,
    in starting numbers.

    `waive_colours` treats everyone as a topscorer (C.04.3 A.7), which lifts the absolute colour
    criterion C.3 and leaves the colour rules as quality criteria to minimise.
    """
    result = _dutch_pairings(_parse_trf_for_engine(text), waive_colours=waive_colours)
    pairs = [(p.white, p.black) for p in result if p.black != 0]
    byes = [p.white for p in result if p.black == 0]
    if len(byes) > 1:
        raise RuntimeError(f"py4swiss gave {len(byes)} byes: {byes}")
    return pairs, (byes[0] if byes else None)


def _dutch_pairings(parsed: ParsedTrf, *, waive_colours: bool = False) -> list[Pairing]:
    """`py4swiss.engines.DutchEngine.generate_pairings` (0.3.1, pinned) with its colour preferences corrected.

    py4swiss takes the side of the colour preference from the colour difference whenever it
    is not zero; FIDE C.04.3 A.6 and bbpPairings give a player who had the same colour
    twice in a row the other one (absolute) unless the difference is beyond +-1. With
    colours "bbwbbww" (difference -1) py4swiss would grant white a third time in a row and
    break C.04.1 g; our property tests found it. So the engine's own steps run here, on
    players whose preference follows bbpPairings (and, where no colour can be granted at all,
    is not absolute).
    """
    round_number = min(len(section.results) for section in parsed.player_sections) + 1
    initial_color = parsed.x_section.configuration.first_round_color
    players = get_player_infos_from_trf(parsed)
    for player in players:
        colours = "".join("w" if white else "b" for white in player.colors)  # played games only
        if len(colours) >= 2 and colours[-1] == colours[-2] and abs(player.color_difference) <= 1:
            side = ColorPreferenceSide.BLACK if colours[-1] == "w" else ColorPreferenceSide.WHITE
            player.color_preference = ColorPreference(side=side, strength=ColorPreferenceStrength.ABSOLUTE)
        elif colour_problem(player.id, colours, "w") and colour_problem(player.id, colours, "b"):
            # Only forfeited first games of double rounds lead here ("wwwwbb": white makes +3,
            # black a third in a row). No colour can be granted, so none is absolute: C.3 must
            # not keep such a player from every opponent with the same side.
            player.color_preference = ColorPreference(
                side=player.color_preference.side, strength=ColorPreferenceStrength.STRONG
            )
        if waive_colours:
            player.top_scorer = True
    players.sort(reverse=True)

    validity_matcher = ValidityMatcher(players, parsed.x_section.forbidden_pairs)
    if not validity_matcher.is_valid_matching():
        raise EngineNoPairing("Round can not be paired")
    brackets = Brackets(players, round_number)
    player_pairs = []
    try:
        while not brackets.is_finished():
            bracket_pairer = _BracketPairer(brackets.get_current_bracket(), validity_matcher, initial_color)
            bracket_pairs = DutchEngine._get_bracket_pairs(bracket_pairer)
            if bracket_pairs is None:
                brackets.collapse()
            else:
                brackets.apply_bracket_pairings(bracket_pairs)
                player_pairs.extend(bracket_pairs)
    except Py4SwissPairingError as exc:
        raise EngineNoPairing(str(exc)) from exc
    player_pairs.sort(key=DutchEngine._get_player_pair_score, reverse=True)
    return [DutchEngine._get_pairing(pair) for pair in player_pairs]


class _SharedWeightMatcher(BracketMatcher):
    """py4swiss's B.8 bracket matcher, each quality weight computed once per kind of pair.

    The engine weighs every pair of a bracket (and of the next one, for C.7): 13,000 pairs and
    80% of a 200-entrant round's CPU. The quality criteria C.5-C.19 read only what `_pair_kind`
    holds, and a bracket has few kinds of player, so equal kinds share one computation; the
    absolute criteria (who may meet whom) are still asked of every pair.
    """

    def __init__(self, bracket: Bracket, validity_matcher: ValidityMatcher) -> None:
        # Before the base constructor: it weighs every pair.
        self._kinds: dict[tuple[tuple[object, ...], tuple[object, ...]], DynamicUint] = {}
        super().__init__(bracket, validity_matcher)

    def _get_weight(self, player_1: Player, player_2: Player) -> DynamicUint:
        if not self._validity_matcher.is_allowed_pair(player_1, player_2):
            return DynamicUint(self._zero_weight)
        key = (_pair_kind(player_1), _pair_kind(player_2))
        weight = self._kinds.get(key)
        if weight is None:
            weight = self._kinds[key] = super()._get_weight(player_1, player_2)
        # A copy: the matcher changes stored weights in place (`&=` when it removes an edge).
        return DynamicUint(weight)


def _pair_kind(player: Player) -> tuple[object, ...]:
    """Everything of a player that `BracketMatcher._get_weight` and the quality criteria read (py4swiss 0.3.1)."""
    return (
        player.role, player.points_with_acceleration, player.color_preference.side,
        player.color_preference.strength, player.color_difference, player.color_double, player.float_1,
        player.float_2, player.top_scorer, player.bye_received,
    )


class _BracketPairer(BracketPairer):
    """py4swiss's bracket pairer (0.3.1, pinned) on `_SharedWeightMatcher`; the same steps otherwise."""

    def __init__(self, state: Bracket, validity_matcher: ValidityMatcher, initial_color: bool) -> None:
        # The base constructor with its matcher swapped (it names the class directly).
        self._bracket = state
        self._validity_matcher = validity_matcher
        self._initial_color = initial_color
        self._num = len(state.mdp_list + state.resident_list + state.lower_list)
        self._bracket_matcher = _SharedWeightMatcher(state, validity_matcher)
        self._heterogeneous_s1 = []
        self._heterogeneous_s2 = []
        self._homogeneous_s1 = []
        self._homogeneous_s2 = []
        self._exchanges = 0


def _parse_trf_for_engine(text: str) -> ParsedTrf:
    """py4swiss's TrfParser.parse on a string; lines it cannot read (other tools' codes) are skipped."""
    by_code = defaultdict(list)
    for index, raw in enumerate(text.splitlines()):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            trf_line = TrfLine(index, line)
        except TrfParsingError:
            continue
        by_code[trf_line.code_type].append(trf_line)
    # The tournament header (012..132) does not affect pairing; leaving it out keeps
    # free-text header lines from other tools from failing the parse.
    parsed = ParsedTrf(
        player_sections=[PlayerSection.from_string(str(line)) for line in by_code[PlayerCode]],
        x_section=XSection.from_lines(by_code[XCode]),
    )
    parsed.validate_contents()
    return parsed


def _prepare(
    entrants: Sequence[SwissEntrant],
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


def _pair(
    state: PairingState,
    text: str,
    to_ours: Callable[[int], int],
    *,
    strict: bool = False,
) -> SwissRoundPairing:
    """The policy of the module docstring: engine, engine with waivers, fallback, fallback without colours."""
    # Each attempt: TRF text, colour rules waived, and the relaxations it makes (for the notes).
    attempts: list[tuple[str, bool, tuple[str, ...]]] = [(text, False, ())]
    if not strict:
        relaxed_text, relaxed = text, ()
        if len(state.players) % 2 == 1 and any(p.forfeit_wins for p in state.players):
            relaxed_text, relaxed = relax_forfeit_wins(text), ("C.04.1 d",)
            attempts.append((relaxed_text, False, relaxed))
        attempts.append((relaxed_text, True, (*relaxed, "C.04.1 f/g")))
    reasons: list[str] = []
    for attempt_text, waive_colours, relaxed in attempts:
        try:
            raw_pairs, raw_bye = run_engine(attempt_text, waive_colours=waive_colours)
        except EngineNoPairing as exc:
            waived = f" without {', '.join(relaxed)}" if relaxed else ""
            reasons.append(f"py4swiss found no pairing{waived} ({exc})")
            continue
        except Exception as exc:  # an engine bug must not stop the tournament: fall back
            reasons.append(f"py4swiss failed: {type(exc).__name__}: {exc}")
            break
        pairs = [(to_ours(w), to_ours(b)) for w, b in raw_pairs]
        bye = None if raw_bye is None else to_ours(raw_bye)
        problems = violations(replace(state, last_round=True) if waive_colours else state, pairs, bye)
        if problems:
            reasons.append("py4swiss broke a rule: " + "; ".join(problems))
            break
        notes: list[str] = []
        if "C.04.1 d" in relaxed and bye is not None and state.by_id()[bye].forfeit_wins:
            notes.append(
                f"C.04.1 d waived: the bye goes to {bye}, who won by forfeit (T-18), because no legal"
                " pairing keeps forfeit winners from the bye"
            )
        if waive_colours:
            # The engine's C.3 is our colour rule (same absolute preference = no legal colours),
            # so its failure proves that no pairing keeps them; topscorer rules then keep the
            # breaks to a minimum (C.04.3 C.10, C.11).
            when = " in the last round" if state.last_round else ""
            notes.append(
                f"colour rules (C.04.1 f/g) waived{when}:"
                " no pairing keeps them without a rematch or a second bye"
            )
        return SwissRoundPairing(round=state.round, pairs=pairs, bye=bye, engine=ENGINE, notes=tuple(notes))

    reason = "; then ".join(reasons)
    if strict:
        raise PairingError(f"no legal pairing: {reason}")
    try:
        pairs, bye = fallback_pairing(state, colour_rules=True)
        notes = ()
    except PairingError as with_colours:
        try:
            pairs, bye = fallback_pairing(state, colour_rules=False)
        except PairingError as exc:
            raise PairingError(
                f"no legal pairing for round {state.round}: {reason}; fallback: {exc}"
            ) from None
        when = " in the last round" if state.last_round else ""
        if isinstance(with_colours, SearchGaveUp):
            why = "the search for a pairing that keeps them without a rematch or a second bye gave up"
        else:
            why = "no pairing keeps them without a rematch or a second bye"
        notes = (f"colour rules (C.04.1 f/g) waived{when}: {why}",)
    # The fallback is checked like the engine: only the rules it was told to waive may break.
    problems = violations(state if not notes else replace(state, last_round=True), pairs, bye)
    if problems:
        broken = "; ".join(problems)
        raise PairingError(f"no legal pairing for round {state.round}: the fallback broke {broken}")
    return SwissRoundPairing(
        round=state.round, pairs=pairs, bye=bye, engine=FALLBACK, fallback_reason=reason, notes=notes
    )
