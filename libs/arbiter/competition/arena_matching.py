"""Who meets whom in the arena: rematch cooldowns (AR-3) and the matching of waiting players (AR-2).

Pure and stdlib only. The arena service reads who is waiting (a Redis sorted
set), their rank, rating and colour history, and which pairs are still in
their cooldown, then calls `match_waiting` and opens one game per pairing.
It is the counterpart of lichess's `AntmaPairing`, built to pair thousands
of waiting players in one call.

How `match_waiting` pairs (what is optimal, what is heuristic):

1. Waiting players are sorted by (rank, rating, id); neighbours in that order
   are close in rank and rating. Pairs in their cooldown (AR-3) are never
   edges.
2. The objective is lexicographic: first as few players left over as
   possible, then the lowest total of the pair costs (rank distance weighted
   as lichess does, rating distance, colour clash) plus a small charge for
   each player left over that grows with their waiting time, so the one
   left over is preferably a recent arrival.
3. Pass 1 solves that objective EXACTLY among the matchings whose partners
   are at most `reach` places apart in the order, except that a player whose
   next `NEAR_REACH` may all meet them is offered only those (a banded
   dynamic programme, linear in the number of players, up to 2**reach states
   per player where cooldowns cut the band and 2**NEAR_REACH elsewhere: the
   cheap case of a large field, which pairs neighbours anyway). With at most
   `EXACT_UP_TO` players the reach covers everyone and the result is the
   exact optimum over all matchings. With no cooldowns at all, everybody but
   at most one player is paired, whatever the size.
4. Repairs, for the players pass 1 leaves over when cooldowns cut their
   band (heuristic, except where stated): the same programme again among
   the left-over players only (their window widens to whoever else is
   left), up to `_LEFTOVER_PASSES` times; then, if at most `_REPAIR_LEFT`
   are left, a greedy sweep pairing any two of them who may still meet
   (each with the cheapest partner ahead) and augmentations along paths of
   three edges (left-over u, paired v-w, left-over t become u-v and w-t),
   which free the usual case of a player whose neighbours are all in
   cooldown with them; finally, with at most `MAXIMUM_UP_TO` players,
   Edmonds' augmenting paths. Guarantees: with at most `MAXIMUM_UP_TO`
   players, as many games as the cooldowns allow (maximum cardinality);
   with at most `_REPAIR_LEFT` players left after the passes and at most
   `_REPAIR_SCAN` waiting, maximal (no two unpaired players could have
   been paired) and no three-edge augmentation left. Beyond those sizes
   (only when most players are in cooldown with most others, which the
   5*k-minute AR-3 cooldowns of a large arena never produce) some pairs
   may be missed. The cost of repaired pairs is not optimised.
5. A player left over waits for the next call, where their longer wait makes
   them costlier to leave over again.

Colours: the player who had more blacks in this arena gets white. This is
not a SPEC rule (the SPEC is silent on arena colours); it is the lichess
habit. Ties: the one whose last game was with black gets white; then a coin
drawn from a hash of the seed and the two ids (no hidden randomness).
"""

from __future__ import annotations

import hashlib
from collections import Counter, deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, TypeAlias

from arbiter.competition.arena_scoring import ArenaError, ArenaGame, PlayerId
from arbiter.vocabulary import Side

# AR-3: the k-th meeting of a pair blocks it for 5*k minutes, no ceiling.
COOLDOWN_STEP: Final = timedelta(minutes=5)

# Pair cost, after lichess's AntmaPairing/PairingSystem.rankFactorFor: one
# rank apart costs 300 at the bottom of the leaderboard and up to 2000 at the
# top (leaders meeting leaders matters more), one rating point costs 1.
RANK_WEIGHT_BOTTOM: Final = 300
RANK_WEIGHT_TOP: Final = 2000
# Two players who both need the same colour: per unit of the smaller
# imbalance, as much as 150 rating points apart.
COLOUR_CLASH_WEIGHT: Final = 150
# Charge for leaving a player over, per second waited, counted up to
# WAIT_CAP_SECONDS: 10 s of waiting weigh as much as 100 rating points. It
# never costs a pairing: leaving one more player over outweighs it all.
WAIT_WEIGHT: Final = 10
WAIT_CAP_SECONDS: Final = 300

# How many places apart two partners may be in pass 1. The programme keeps
# up to 2**reach states per player where cooldowns cut the band; a wider
# reach costs time and barely lowers the total cost
# (tests/bench/bench_arena_matching.py; figures in docs/performance.md).
DEFAULT_REACH: Final = 4
# Where nobody among a player's next NEAR_REACH is in cooldown with them, only those are
# partners for pass 1 (a farther partner there barely lowers the total cost: bench_arena_matching.py).
NEAR_REACH: Final = 2
# Up to this many players the reach covers the whole list: exact, and still quick.
EXACT_UP_TO: Final = 16
MAX_REACH: Final = 24
_LEFTOVER_PASSES: Final = 3
# Up to this many players the repairs end with Edmonds' augmenting paths:
# as many games as the cooldowns allow, always (bench_arena_matching.py times
# the worst case: every player in cooldown with nearly all the others).
MAXIMUM_UP_TO: Final = 200
# Bounds on the cheap repairs, so that a pathological input (thousands of
# players all in cooldown with each other) cannot make a call slow.
_REPAIR_LEFT: Final = 32
_REPAIR_SCAN: Final = 256

# Blocked pairs (AR-3), in any of three forms: a symmetric predicate
# answering "is this pair in its cooldown?", a mapping player -> opponents
# they may not meet yet (either side's entry blocks), or a collection of
# frozenset({a, b}) pairs.
Cooldowns: TypeAlias = (
    Callable[[PlayerId, PlayerId], bool]
    | Mapping[PlayerId, Collection[PlayerId]]
    | Collection[frozenset[PlayerId]]
)


def rematch_cooldown(games_played_together: int) -> timedelta:
    """How long after their last game two players who met k times must wait (AR-3)."""
    if games_played_together < 0:
        raise ArenaError(f"games played together cannot be negative, got {games_played_together}")
    return COOLDOWN_STEP * games_played_together


def next_allowed_meeting(games_played_together: int, last_game_ended_at: datetime) -> datetime:
    """The first moment two players who met k times may meet again (AR-3)."""
    return last_game_ended_at + rematch_cooldown(games_played_together)


def may_meet_again(games_played_together: int, last_game_ended_at: datetime | None, now: datetime) -> bool:
    """Is the pair's cooldown over at `now` (AR-3)? The exact end moment counts as over."""
    if games_played_together == 0 or last_game_ended_at is None:
        return True
    return now >= next_allowed_meeting(games_played_together, last_game_ended_at)


@dataclass(frozen=True, slots=True)
class Meetings:
    """How often a pair met in this arena, and when their last game ended (AR-3)."""

    count: int
    last_ended_at: datetime

    @property
    def next_allowed(self) -> datetime:
        """The first moment the pair may meet again: 5*k minutes after the last of k games (AR-3)."""
        return next_allowed_meeting(self.count, self.last_ended_at)


def meetings(games: Iterable[ArenaGame]) -> dict[frozenset[PlayerId], Meetings]:
    """Every pair's meetings in the recorded games (AR-3), whatever the colours and the order given."""
    # Every recorded game counts as a meeting, also one a player never sat:
    # both were paired and the pairing is what the cooldown spaces out.
    met: dict[frozenset[PlayerId], Meetings] = {}
    for game in games:
        if game.ended_at is None:
            raise ArenaError(f"arena game {game.white} vs {game.black} has no end time; AR-3 needs one")
        pair = frozenset(game.players())
        before = met.get(pair)
        met[pair] = (Meetings(1, game.ended_at) if before is None
                     else Meetings(before.count + 1, max(before.last_ended_at, game.ended_at)))
    return met


def cooldowns(games: Iterable[ArenaGame], now: datetime) -> dict[frozenset[PlayerId], datetime]:
    """The pairs still inside their AR-3 cooldown at `now`, each with the moment it ends."""
    return {pair: meeting.next_allowed for pair, meeting in meetings(games).items() if meeting.next_allowed > now}


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitingPlayer:
    """A player waiting for an arena game: leaderboard rank (1 = best), rating, colour history."""

    player_id: PlayerId
    # Ties on the leaderboard should share a rank (see `rank_records`), so
    # that the id never decides closeness between equal scores.
    rank: int
    rating: int
    # Whites minus blacks in this arena so far.
    colour_balance: int = 0
    last_colour: Side | None = None
    waiting_since: datetime


@dataclass(frozen=True, slots=True)
class ArenaPairing:
    """One arena game to open: who has white, who has black."""

    white: PlayerId
    black: PlayerId


def assign_colours(a: WaitingPlayer, b: WaitingPlayer, seed: int = 0) -> ArenaPairing:
    """Colours for a pair: more blacks so far gets white, then last had black, then a seeded coin."""
    if a.colour_balance != b.colour_balance:
        white_first = a.colour_balance < b.colour_balance
    elif a.last_colour != b.last_colour:
        white_first = _LAST_COLOUR_ORDER[a.last_colour] < _LAST_COLOUR_ORDER[b.last_colour]
    else:
        # A fixed "lower id gets white" would favour the same players all
        # arena long; a hash of seed and pair is fair and reproducible.
        low, high = (a.player_id, b.player_id) if a.player_id < b.player_id else (b.player_id, a.player_id)
        digest = hashlib.blake2b(f"{seed}\x00{low}\x00{high}".encode(), digest_size=1).digest()
        white_first = (digest[0] & 1 == 0) == (a.player_id == low)
    return ArenaPairing(a.player_id, b.player_id) if white_first else ArenaPairing(b.player_id, a.player_id)


# Whoever last had black is first in line for white; no game yet sits between.
_LAST_COLOUR_ORDER: Final[dict[Side | None, int]] = {Side.BLACK: 0, None: 1, Side.WHITE: 2}


def match_waiting(
    players: Sequence[WaitingPlayer],
    cooldowns: Cooldowns,
    now: datetime,
    *,
    seed: int = 0,
    reach: int = DEFAULT_REACH,
) -> list[ArenaPairing]:
    """Pair waiting players close in rank and rating, colours balanced, none in cooldown (AR-2, AR-3)."""
    if not 1 <= reach <= MAX_REACH:
        raise ArenaError(f"the matching reach must be within 1..{MAX_REACH}, got {reach}")
    if len({p.player_id for p in players}) != len(players):
        seen = Counter(p.player_id for p in players)
        twice = sorted(player for player, count in seen.items() if count > 1)
        raise ArenaError(f"players waiting twice in the same arena: {', '.join(twice)}")
    # Sorting on a total key makes the result independent of the input order.
    order = sorted(players, key=lambda p: (p.rank, p.rating, p.player_id))
    if not order:
        return []
    if order[0].rank < 1:
        raise ArenaError(f"player {order[0].player_id} has rank {order[0].rank}; ranks start at 1")

    blocked, involved = _blocked_predicate(cooldowns)
    pair_cost = _pair_cost_function(order)
    # Thousands of players often share a waiting instant: compute each one's charge once.
    charges: dict[datetime, int] = {}
    leave_cost = []
    for p in order:
        charge = charges.get(p.waiting_since)
        if charge is None:
            charge = charges[p.waiting_since] = WAIT_WEIGHT * _waited_seconds(p, now)
        leave_cost.append(charge)
    ids = [p.player_id for p in order]
    # Who appears in some cooldown (everybody, for a predicate): only their pairs need the lookup.
    in_cooldown = [True] * len(ids) if involved is None else [player in involved for player in ids]

    near = min(reach, NEAR_REACH)
    if len(order) <= EXACT_UP_TO:
        reach = near = max(reach, len(order) - 1)
    pairs: list[tuple[int, int]] = []
    left = list(range(len(order)))
    # Pass 1 over everybody, then the leftover passes (heuristic, see above).
    for _ in range(1 + _LEFTOVER_PASSES):
        if len(left) < 2:
            break
        found, left = _band_matching(left, reach, near, ids, blocked, in_cooldown, pair_cost, leave_cost)
        if not found:
            break
        pairs.extend(found)
    if 2 <= len(left) <= _REPAIR_LEFT:
        found, left = _greedy_sweep(left, ids, blocked, pair_cost)
        pairs.extend(found)
        pairs, left = _augment_three(pairs, left, ids, blocked, pair_cost)
    if len(left) >= 2 and len(order) <= MAXIMUM_UP_TO:
        pairs = _augment_all(len(order), pairs, left, ids, blocked)

    # Best-ranked pairs first: the service opens the games in this order.
    pairs.sort()
    return [assign_colours(order[i], order[j], seed) for i, j in pairs]


def _waited_seconds(player: WaitingPlayer, now: datetime) -> int:
    """Whole seconds waited, within 0..WAIT_CAP_SECONDS (a clock skew never makes it negative)."""
    return min(WAIT_CAP_SECONDS, max(0, int((now - player.waiting_since).total_seconds())))


def _blocked_predicate(
    cooldowns: Cooldowns,
) -> tuple[Callable[[PlayerId, PlayerId], bool], frozenset[PlayerId] | None]:
    """One predicate for the three accepted forms of AR-3 cooldowns, and everybody it names (None: unknown)."""
    if callable(cooldowns):
        return cooldowns, None
    if isinstance(cooldowns, Mapping):
        table = {player: opponents for player, opponents in cooldowns.items() if opponents}
        empty: frozenset[PlayerId] = frozenset()

        def in_table(a: PlayerId, b: PlayerId) -> bool:
            # Either side's entry is enough: a half-written table still blocks.
            return b in table.get(a, empty) or a in table.get(b, empty)

        return in_table, frozenset(table).union(*table.values())
    pairs = cooldowns
    if not pairs:
        return (lambda a, b: False), frozenset()
    return (lambda a, b: frozenset((a, b)) in pairs), frozenset().union(*pairs)


def _pair_cost_function(order: list[WaitingPlayer]) -> Callable[[int, int], int]:
    """Cost of pairing order[i] with order[j], i < j (so rank[i] <= rank[j])."""
    ranks = [p.rank for p in order]
    ratings = [p.rating for p in order]
    balances = [p.colour_balance for p in order]
    max_rank = ranks[-1]
    span = RANK_WEIGHT_TOP - RANK_WEIGHT_BOTTOM

    def cost(i: int, j: int) -> int:
        # lichess's rankFactorFor: the better rank of the two sets the weight.
        weight = RANK_WEIGHT_BOTTOM + span * (max_rank - ranks[i]) // max_rank
        value = (ranks[j] - ranks[i]) * weight + abs(ratings[j] - ratings[i])
        bi, bj = balances[i], balances[j]
        if bi * bj > 0:
            # Both had more of the same colour: one of them gets it again.
            value += COLOUR_CLASH_WEIGHT * min(abs(bi), abs(bj))
        return value

    return cost


def _band_matching(
    seq: list[int],
    reach: int,
    near: int,
    ids: list[PlayerId],
    blocked: Callable[[PlayerId, PlayerId], bool],
    in_cooldown: list[bool],
    pair_cost: Callable[[int, int], int],
    leave_cost: list[int],
) -> tuple[list[tuple[int, int]], list[int]]:
    """Exact optimum (fewest left over, then cost) among pairs at most `reach` apart in `seq`."""
    n = len(seq)
    # Edges first, each charged to its earlier member: (step code, mask bit, cost). A player
    # whose `near` next ones may all meet them gets edges to those only; the full `reach` is
    # for players a cooldown cuts off a neighbour. Unblocked stretches then keep at most
    # 2**near states per player instead of 2**reach: the optimum is exact over this edge set.
    edges: list[list[tuple[int, int, int]]] = []
    bound = 1
    for pos in range(n):
        i = seq[pos]
        row: list[tuple[int, int, int]] = []
        top = 0
        listed = in_cooldown[i]
        for k in range(1, min(reach, n - 1 - pos) + 1):
            j = seq[pos + k]
            if (listed or in_cooldown[j]) and blocked(ids[i], ids[j]):
                continue
            c = pair_cost(i, j)
            row.append((k + _PAIRED, 1 << k, c))
            if c > top:
                top = c
            if k == near and len(row) == near:
                break
        edges.append(row)
        bound += top + leave_cost[i]
    # Leaving a player over costs more than any difference in the rest, so
    # the programme first minimises the number left over.
    big = bound

    # A state is the mask of the next positions already taken (bit 0 is
    # `pos`) -> the best value so far. Back links are ints, (mask << 5) |
    # step, rather than tuples: this loop is the whole cost of a call.
    states: dict[int, int] = {0: 0}
    backs: list[dict[int, int]] = []
    taken_code, left_code = _TAKEN, _LEFT_OVER
    for pos in range(n):
        nxt: dict[int, int] = {}
        back: dict[int, int] = {}
        get = nxt.get
        leave = big + leave_cost[seq[pos]]
        row = edges[pos]
        for mask, value in states.items():
            new = mask >> 1
            if mask & 1:
                old = get(new)
                if old is None or value < old:
                    nxt[new] = value
                    back[new] = mask << 5 | taken_code
                continue
            candidate = value + leave
            old = get(new)
            if old is None or candidate < old:
                nxt[new] = candidate
                back[new] = mask << 5 | left_code
            for step, bit, c in row:
                if mask & bit:
                    continue
                new = (mask | bit) >> 1
                candidate = value + c
                old = get(new)
                if old is None or candidate < old:
                    nxt[new] = candidate
                    back[new] = mask << 5 | step
        states = nxt
        backs.append(back)

    pairs: list[tuple[int, int]] = []
    left: list[int] = []
    mask = 0
    for pos in range(n - 1, -1, -1):
        code = backs[pos][mask]
        mask, step = code >> 5, code & 31
        if step >= _PAIRED + 1:
            pairs.append((seq[pos], seq[pos + step - _PAIRED]))
        elif step == _LEFT_OVER:
            left.append(seq[pos])
    left.reverse()
    return pairs, left


# Steps of the banded programme: `pos` already taken, left over, or paired
# with the player `step - _PAIRED` places further (5 bits: reach <= MAX_REACH).
_TAKEN: Final = 0
_LEFT_OVER: Final = 1
_PAIRED: Final = 1


def _greedy_sweep(
    left: list[int],
    ids: list[PlayerId],
    blocked: Callable[[PlayerId, PlayerId], bool],
    pair_cost: Callable[[int, int], int],
) -> tuple[list[tuple[int, int]], list[int]]:
    """Pair any two left-over players who may meet, each with their cheapest partner ahead."""
    taken = [False] * len(left)
    pairs: list[tuple[int, int]] = []
    for a in range(len(left)):
        if taken[a]:
            continue
        best: tuple[int, int] | None = None
        for b in range(a + 1, len(left)):
            if taken[b] or blocked(ids[left[a]], ids[left[b]]):
                continue
            c = pair_cost(left[a], left[b])
            if best is None or c < best[0]:
                best = (c, b)
        if best is not None:
            taken[a] = taken[best[1]] = True
            pairs.append((left[a], left[best[1]]))
    return pairs, [player for player, done in zip(left, taken, strict=True) if not done]


def _augment_three(
    pairs: list[tuple[int, int]],
    left: list[int],
    ids: list[PlayerId],
    blocked: Callable[[PlayerId, PlayerId], bool],
    pair_cost: Callable[[int, int], int],
) -> tuple[list[tuple[int, int]], list[int]]:
    """One more pair per path u, v-w, t (u and t left over): v-w becomes u-v and w-t."""
    mate = dict(pairs) | {b: a for a, b in pairs}
    free = list(left)
    progress = True
    while progress and len(free) >= 2:
        progress = False
        for u in free:
            # Walk outwards from u in the (rank, rating) order: the first
            # paired neighbour v that u may meet and whose partner w may
            # meet another left-over t gives the nearest repair.
            for v in _outwards(u, len(ids), _REPAIR_SCAN):
                w = mate.get(v)
                if w is None or blocked(ids[u], ids[v]):
                    continue
                partners = [t for t in free if t != u and not blocked(ids[w], ids[t])]
                if not partners:
                    continue
                t = min(partners, key=lambda x: (pair_cost(min(w, x), max(w, x)), x))
                mate[u], mate[v], mate[w], mate[t] = v, u, t, w
                free = [x for x in free if x not in (u, t)]
                progress = True
                break
            if progress:
                break
    return sorted({(min(a, b), max(a, b)) for a, b in mate.items()}), free


def _outwards(center: int, size: int, limit: int) -> Iterable[int]:
    """Positions 1, 2, 3, ... places away from `center`, nearer first, at most `limit` away."""
    for distance in range(1, min(size, limit + 1)):
        if center - distance >= 0:
            yield center - distance
        if center + distance < size:
            yield center + distance


def _augment_all(
    n: int,
    pairs: list[tuple[int, int]],
    left: list[int],
    ids: list[PlayerId],
    blocked: Callable[[PlayerId, PlayerId], bool],
) -> list[tuple[int, int]]:
    """Grow the matching to maximum cardinality by augmenting paths (Edmonds' blossoms)."""
    # The O(n**3) textbook search (Edmonds 1965, shrinking odd cycles), run
    # once from each left-over player: a player with no augmenting path now
    # never gets one later (Berge), so one pass reaches the maximum.
    # Neighbours are visited nearest first so that the paths found stay short
    # in the (rank, rating) order; their cost is not optimised.
    match = [-1] * n
    for a, b in pairs:
        match[a], match[b] = b, a
    neighbours: list[list[int] | None] = [None] * n

    def adjacent(v: int) -> list[int]:
        row = neighbours[v]
        if row is None:
            row = [u for u in _outwards(v, n, n) if not blocked(ids[v], ids[u])]
            neighbours[v] = row
        return row

    for root in left:
        if match[root] != -1:
            continue
        end, parent = _find_augmenting_path(root, n, match, adjacent)
        # Flip the path: every other edge enters the matching.
        while end != -1:
            previous = parent[end]
            following = match[previous]
            match[end], match[previous] = previous, end
            end = following
    return sorted((a, b) for a, b in enumerate(match) if a < b)


def _find_augmenting_path(
    root: int, n: int, match: list[int], adjacent: Callable[[int], list[int]]
) -> tuple[int, list[int]]:
    """The free end of an augmenting path from `root` (or -1) and the parent links to walk it back."""
    used = [False] * n
    parent = [-1] * n
    base = list(range(n))
    used[root] = True
    queue = deque([root])

    def common_base(a: int, b: int) -> int:
        seen = [False] * n
        while True:
            a = base[a]
            seen[a] = True
            if match[a] == -1:
                break
            a = parent[match[a]]
        while True:
            b = base[b]
            if seen[b]:
                return b
            b = parent[match[b]]

    def mark_path(v: int, stem: int, child: int, in_blossom: list[bool]) -> None:
        while base[v] != stem:
            in_blossom[base[v]] = in_blossom[base[match[v]]] = True
            parent[v] = child
            child = match[v]
            v = parent[match[v]]

    while queue:
        v = queue.popleft()
        for to in adjacent(v):
            if base[v] == base[to] or match[v] == to:
                continue
            if to == root or (match[to] != -1 and parent[match[to]] != -1):
                # An odd cycle: shrink it onto its base and keep searching.
                stem = common_base(v, to)
                in_blossom = [False] * n
                mark_path(v, stem, to, in_blossom)
                mark_path(to, stem, v, in_blossom)
                for i in range(n):
                    if in_blossom[base[i]]:
                        base[i] = stem
                        if not used[i]:
                            used[i] = True
                            queue.append(i)
            elif parent[to] == -1:
                parent[to] = v
                if match[to] == -1:
                    return to, parent
                used[match[to]] = True
                queue.append(match[to])
    return -1, parent
