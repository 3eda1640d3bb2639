"""ClockService: read a clock; refuel, claim and resolve claims on Triple Block clocks (TB-3, TB-7).

Reads come from Redis (live clocks, and the mirror of Triple Block ones), or from PostgreSQL when
Redis does not hold the game (lost, not rebuilt yet, or a game finished a while ago). Every Triple Block
change is a row-locked PostgreSQL transaction with its ClockState in the outbox. Refusals
change nothing and say why, with the rule.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from arbiter.clocks import CLOCK_CAP_S, ClaimKind, ClockError, TripleBlockClock
from arbiter.contracts import clock_pb2 as cp
from arbiter.contracts import clock_pb2_grpc
from arbiter.kit.actors import player_id_of, registered_player
from arbiter.kit.auth import PLAYERS, READERS, Role, RpcRoles
from arbiter.kit.db import Connection
from arbiter.kit.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from arbiter.kit.fields import GAME_ID, check_id
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from arbiter.vocabulary import Side
from services.clock.clocked_game import ClockedGame, Kind, Status, clocked_game_of
from services.clock.convert import clock_message, clock_state
from services.clock.hot import LiveStore
from services.clock.store import CorrespondenceStore, LiveCopies

_DAY_S = 86_400


def _days(seconds: int) -> str:
    return f"{seconds / _DAY_S:.2f} days ({seconds} s)"


def _game_id(request: Any) -> str:
    return check_id(request.game_id, GAME_ID, "game_id")


# Who may call what (arbiter.kit.auth): pairing reads who sat in the games it closes (T-15, R-3);
# refuels, claims and their decisions are players' and arbiters' acts relayed by the play site.
RPC_ROLES: RpcRoles = {
    "GetClock": READERS | {Role.PAIRING},
    "Refuel": PLAYERS,
    "FileClaim": PLAYERS,
    "ResolveClaim": PLAYERS,
}


class ClockServicer(clock_pb2_grpc.ClockServiceServicer):
    """The gRPC face of the clock service."""

    def __init__(
        self, live: LiveStore, correspondence: CorrespondenceStore, copies: LiveCopies, outbox: Outbox,
        time_source: TimeSource,
    ) -> None:
        self.live = live
        self.correspondence = correspondence
        self.copies = copies
        self.outbox = outbox
        self.time_source = time_source

    def now_ms(self) -> int:
        """Competition time now, in ms."""
        return self.time_source.now_ms()

    async def _record(self, game_id: str) -> ClockedGame:
        record = await self.live.load(game_id)
        if record is None:
            copy = await self.copies.load(game_id)
            record = clocked_game_of(copy, self.live.metas) if copy is not None else None
        if record is None:
            record = await self.correspondence.load(game_id)
        if record is None or record.status is Status.NEW:
            raise NotFound(f"no clock for game {game_id}: neither GameRequested nor GameStarted was seen for it")
        return record

    async def GetClock(self, request: cp.GetClockRequest, context: Any) -> cp.Clock:
        """The remaining times as of now, with the server time they refer to."""
        record = await self._record(_game_id(request))
        return clock_message(record, self.now_ms())

    async def _correspondence_change(self, game_id: str, what: str, change: Any) -> cp.Clock:
        """Check the game is a Triple Block one, then lock, change and save it (with a ClockState)."""
        record = await self._record(game_id)
        if record.kind is Kind.FISCHER:
            raise InvalidArgument(
                f"game {game_id} plays a live Fischer clock; {what} exists only for Triple Block clocks (TB-3, TB-7)"
            )
        if record.kind is not Kind.TRIPLE_BLOCK:
            raise FailedPrecondition(f"game {game_id} has no time control yet: its GameRequested was not seen")

        async def apply(connection: Connection, stored: ClockedGame) -> int:
            now = self.now_ms()
            cause = change(stored, now)
            await self.outbox.add(connection, clock_state(stored, now, now, cause=f"{cause}:{now}"))
            return now

        outcome = await self.correspondence.change(game_id, apply)
        if outcome is None:
            raise NotFound(f"no Triple Block clock stored for game {game_id}")
        changed_at, record = outcome
        # The reply is the clock as of the change, so its server time is the instant it took effect.
        return clock_message(record, changed_at)

    async def Refuel(self, request: cp.RefuelRequest, context: Any) -> cp.Clock:
        """TB-3: move bank time to the clock, on one's own turn, while the clock shows time."""
        game_id = _game_id(request)
        player_id = player_id_of(request.actor, "refuel")
        if request.amount_seconds < 0:
            raise InvalidArgument(f"amount_seconds must be >= 0 (0 fills the clock up to 50 days), not "
                                  f"{request.amount_seconds}")

        def refuel(record: ClockedGame, now_ms: int) -> str:
            side = _player_side(record, player_id, game_id)
            clock = _running_tb(record, game_id)
            now_s = now_ms // 1000
            if clock.claim is not None:
                raise FailedPrecondition(f"game {game_id}: a {clock.claim.kind} is pending, the clocks are stopped "
                                         "(TB-7); refuel after it is resolved")
            if side is not clock.to_move:
                raise FailedPrecondition(
                    f"it is {clock.to_move}'s turn in game {game_id}: {player_id} ({side}) can refuel only during "
                    "their own turn (TB-3)"
                )
            left = clock.remaining(side, now_s)
            bank = clock.side(side).bank_s
            if left <= 0:
                raise FailedPrecondition(f"{player_id}'s clock shows zero: the game is lost on time (TB-4); a refuel "
                                         "must come before the clock runs out (TB-3)")
            if bank <= 0:
                raise FailedPrecondition(f"nothing to refuel: {player_id}'s bank is empty (TB-3)")
            if left >= CLOCK_CAP_S:
                raise FailedPrecondition(f"nothing to refuel: {player_id}'s clock already shows 50 days (TB-1, TB-3)")
            amount = request.amount_seconds or None
            try:
                record.clock = clock.manual_refuel(side, now_s, amount)
            except ClockError as error:
                raise FailedPrecondition(f"{error}; clock {_days(left)}, bank {_days(bank)}") from None
            return "refuel"

        return await self._correspondence_change(game_id, "refuelling", refuel)

    async def FileClaim(self, request: cp.FileClaimRequest, context: Any) -> cp.Clock:
        """TB-7: the player to move files a claim, which stops their clock."""
        game_id = _game_id(request)
        player_id = player_id_of(request.actor, "file a claim")

        def file(record: ClockedGame, now_ms: int) -> str:
            side = _player_side(record, player_id, game_id)
            clock = _running_tb(record, game_id)
            try:
                record.clock = clock.file_claim(side, now_ms // 1000)
            except ClockError as error:
                raise FailedPrecondition(f"game {game_id}: {error} (TB-7)") from None
            record.claim_reason = request.reason
            return "claim"

        return await self._correspondence_change(game_id, "a claim", file)

    async def ResolveClaim(self, request: cp.ResolveClaimRequest, context: Any) -> cp.Clock:
        """TB-7: decide the pending claim (upheld, rejected with its penalty, unresolved) or appeal.

        REJECTED charges the claimant's clock with the whole time the claim took (it may empty
        it: a loss on time, TB-4). UNRESOLVED and APPEALED stop both clocks. APPEALED with no
        claim pending is a player's appeal of a past decision (both clocks stop). Neither player
        decides a claim; the play site checks that the acting account is the event's arbiter.
        """
        game_id = _game_id(request)
        decision = request.decision
        if decision not in _DECISIONS:
            # proto3 lets any number through: an unknown one must not be taken for REJECTED's penalty.
            raise InvalidArgument("decision is required: UPHELD, REJECTED, UNRESOLVED or APPEALED (TB-7)")
        # Deciding someone's claim is an arbiter's act: a registered account, never a guest or a bot.
        player_id = (player_id_of(request.actor, "appeal") if decision == cp.CLAIM_DECISION_APPEALED
                     else registered_player(request.actor, "decide a claim"))

        def resolve(record: ClockedGame, now_ms: int) -> str:
            clock = _running_tb(record, game_id)
            now_s = now_ms // 1000
            claim = clock.claim
            if decision != cp.CLAIM_DECISION_APPEALED and record.meta.side_of(player_id) is not None:
                # A player acts only for themselves: deciding a claim in their own game is judging their own case.
                raise PermissionDenied(f"{player_id} plays game {game_id}; only an arbiter decides its claims (TB-7)")
            try:
                if decision == cp.CLAIM_DECISION_APPEALED:
                    side = _player_side(record, player_id, game_id)
                    if claim is None:
                        record.clock = clock.file_appeal(side, now_s)
                    elif claim.kind is ClaimKind.APPEAL:
                        raise FailedPrecondition(f"game {game_id}: an appeal is already pending (TB-7)")
                    else:
                        escalated = clock.escalate_claim(now_s)
                        assert escalated.claim is not None
                        record.clock = replace(escalated, claim=replace(escalated.claim, kind=ClaimKind.APPEAL))
                    return "appeal"
                if claim is None:
                    raise FailedPrecondition(f"game {game_id}: no claim or appeal is pending (TB-7)")
                if decision == cp.CLAIM_DECISION_UNRESOLVED:
                    record.clock = clock.escalate_claim(now_s)
                    return "unresolved"
                record.clock = clock.resolve_claim(now_s, upheld=decision == cp.CLAIM_DECISION_UPHELD)
                record.claim_reason = ""
                return "resolved"
            except ClockError as error:
                raise FailedPrecondition(f"game {game_id}: {error} (TB-7)") from None

        return await self._correspondence_change(game_id, "a claim", resolve)


_DECISIONS = frozenset({cp.CLAIM_DECISION_UPHELD, cp.CLAIM_DECISION_REJECTED, cp.CLAIM_DECISION_UNRESOLVED,
                        cp.CLAIM_DECISION_APPEALED})


def _player_side(record: ClockedGame, player_id: str, game_id: str) -> Side:
    side = record.meta.side_of(player_id)
    if side is None:
        raise PermissionDenied(f"{player_id} does not play game {game_id}")
    return side


def _running_tb(record: ClockedGame, game_id: str) -> TripleBlockClock:
    clock = record.clock
    if record.status is Status.OVER or record.status is Status.DECIDED:
        raise FailedPrecondition(f"game {game_id} is over")
    if record.status is not Status.RUNNING or not isinstance(clock, TripleBlockClock):
        raise FailedPrecondition(f"game {game_id} has not started yet: its clock does not run")
    return clock
