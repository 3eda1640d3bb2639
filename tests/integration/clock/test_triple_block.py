"""A Triple Block game of ~175 days played in ~30 real seconds through the service (TB-1..TB-7).

60 moves each: white thinks long enough to empty the bank, so past move 50 (no increment,
TB-2) Guaranteed Time resets the clock to 3 days after every move (TB-6); black refuels by hand
(TB-3) and files claims that are upheld, rejected (charged, TB-7) and left unresolved (both
clocks stop). Every ClockState the service publishes is compared with the pure
`TripleBlockClock` replayed at the same instants; the game ends with white's clock running out
(TB-4). Redis is wiped twice for this game: the service carries on from PostgreSQL.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import asyncpg
import grpc
import pytest
import redis.asyncio as aioredis

from arbiter.clocks import GUARANTEED_TIME_S, TripleBlockClock
from arbiter.contracts import clock_pb2
from arbiter.contracts import common_pb2 as common
from arbiter.vocabulary import Side
from tests.integration.clock.conftest import actor, launch, ms, open_tools, whole_ms
from tests.support.polling import eventually

# One competition day is ~288 real ms. White's tightest margin below (2.9 days, under Guaranteed
# Time) is ~840 ms: room for the embedded broker holding a consumer's fetch for ~250 ms and for a
# stall of the host. At ~500 ms (x500,000) a host stealing a quarter of the CPU flagged white once.
TIME_SCALE = 300_000.0
DAY = 86_400


@pytest.fixture(scope="module")
def stack(infra_env, tmp_path_factory):
    system = launch(infra_env, tmp_path_factory.mktemp("clock-tb"), TIME_SCALE, RECONCILE_SECONDS="0.3")
    yield system
    system.stop()


@pytest.fixture(scope="module")
async def tools(stack):
    async for items in open_tools(stack):
        yield items


def days(n: float) -> timedelta:
    return timedelta(seconds=n * DAY)


class Game:
    """The test's side of the game: publishes moves at planned instants and replays the pure clock."""

    def __init__(self, game_id: str, site, client, time, t0: datetime) -> None:
        self.game_id = game_id
        self.site = site
        self.client = client
        self.time = time
        self.players = {Side.WHITE: f"{game_id}-w", Side.BLACK: f"{game_id}-b"}
        self.model = TripleBlockClock.new(1 * DAY, 50 * DAY, True, Side.WHITE).start(ms(t0) // 1000)
        self.now = t0
        self.ply = 0
        self.expected: dict[int, tuple[int, int, int, int]] = {}

    async def move(self, side: Side, think_days: float, not_before: datetime | None = None) -> None:
        """Think, then move (published when competition time reaches the planned instant)."""
        at = self.now + days(think_days)
        if not_before is not None and at < not_before:
            at = not_before
        await self.time.sleep_until(at)
        self.ply += 1
        await self.site.move(self.game_id, self.players[side], self.ply, at=at)
        instant = ms(at) // 1000
        self.model = self.model.after_move(side, instant)
        self.expected[self.ply] = (
            self.model.remaining(Side.WHITE, instant) * 1000, self.model.remaining(Side.BLACK, instant) * 1000,
            self.model.white.bank_s * 1000, self.model.black.bank_s * 1000,
        )
        self.now = at

    async def applied(self) -> None:
        """Wait until the service has taken the last move."""
        async def taken() -> bool:
            return (await self.client.get(self.game_id)).ply == self.ply
        await eventually(taken, f"ply {self.ply} applied")

    async def call(self, method: str, request) -> clock_pb2.Clock:  # type: ignore[no-untyped-def]
        """A ClockService call; returns the reply (its server time is when the change took effect)."""
        return await getattr(self.client.stub, method)(request, timeout=10)

    async def refused(self, method: str, request, code: grpc.StatusCode) -> str:  # type: ignore[no-untyped-def]
        """A call that must be refused with `code`; returns the reason given."""
        with pytest.raises(grpc.aio.AioRpcError) as refusal:
            await self.call(method, request)
        assert refusal.value.code() == code, refusal.value.details()
        return refusal.value.details() or ""


def at_of(reply: clock_pb2.Clock) -> int:
    """The instant (s) a change took effect."""
    return reply.server_time.ToMilliseconds() // 1000


async def test_triple_block_game_of_60_moves(stack, tools, unique) -> None:
    site, tap, client, time = tools
    game_id = unique("g-tb")
    prefix = stack.extra_env["CLOCK_REDIS_PREFIX"]
    redis = aioredis.from_url(stack.redis_url)
    t0 = whole_ms(time.now())
    game = Game(game_id, site, client, time, t0)
    white, black = game.players[Side.WHITE], game.players[Side.BLACK]
    await site.request(game_id, white, black, tb=(1, 50, True))
    await site.start_game(game_id, white, black, at=t0)

    async def black_refuels() -> datetime:
        """TB-3: only on one's own turn, only what fits under 50 days, only from the bank."""
        await game.applied()
        turn = game.now
        await game.refused("Refuel", clock_pb2.RefuelRequest(actor=actor(white), game_id=game_id),
                           grpc.StatusCode.FAILED_PRECONDITION)
        await game.refused("Refuel", clock_pb2.RefuelRequest(actor=actor("stranger"), game_id=game_id),
                           grpc.StatusCode.PERMISSION_DENIED)
        reason = await game.refused(
            "Refuel", clock_pb2.RefuelRequest(actor=actor(black), game_id=game_id, amount_seconds=10 * DAY),
            grpc.StatusCode.FAILED_PRECONDITION)
        assert "50 days" in reason
        await time.sleep_until(turn + days(3))
        reply = await game.call("Refuel", clock_pb2.RefuelRequest(actor=actor(black), game_id=game_id,
                                                                  amount_seconds=DAY))
        game.model = game.model.manual_refuel(Side.BLACK, at_of(reply), DAY)
        assert reply.black.remaining_ms == game.model.remaining(Side.BLACK, at_of(reply)) * 1000
        assert reply.black.bank_ms == game.model.black.bank_s * 1000
        await time.sleep_until(turn + days(5))
        reply = await game.call("Refuel", clock_pb2.RefuelRequest(actor=actor(black), game_id=game_id))
        game.model = game.model.manual_refuel(Side.BLACK, at_of(reply))
        assert reply.black.remaining_ms == 50 * DAY * 1000, "a refuel of 0 fills the clock to 50 days"
        return turn + days(7)

    async def white_has_no_bank() -> datetime:
        await game.applied()
        reason = await game.refused("Refuel", clock_pb2.RefuelRequest(actor=actor(white), game_id=game_id),
                                    grpc.StatusCode.FAILED_PRECONDITION)
        assert "bank is empty" in reason
        return game.now

    async def black_claims(decision: int, unresolved_first: bool = False) -> datetime:
        """TB-7: a claim stops the claimant's clock; rejected, the whole claim time is charged."""
        await game.applied()
        await time.sleep_until(game.now + days(1))
        await game.refused("FileClaim", clock_pb2.FileClaimRequest(actor=actor(white), game_id=game_id),
                           grpc.StatusCode.FAILED_PRECONDITION)
        reply = await game.call("FileClaim", clock_pb2.FileClaimRequest(actor=actor(black), game_id=game_id,
                                                                        reason="opponent's move not received"))
        game.model = game.model.file_claim(Side.BLACK, at_of(reply))
        assert reply.claim_state == "pending" and reply.claimant_id == black and not reply.black.running
        filed = datetime.fromtimestamp(reply.server_time.ToMilliseconds() / 1000, t0.tzinfo)
        for player in (black, white):  # neither the claimant nor the opponent judges the claim
            await game.refused("ResolveClaim", clock_pb2.ResolveClaimRequest(
                actor=actor(player), game_id=game_id, decision=clock_pb2.CLAIM_DECISION_UPHELD),
                grpc.StatusCode.PERMISSION_DENIED)
        # Refused before anything changes: a decision this build does not know (not REJECTED's penalty),
        # and a guest deciding. The replayed model below would catch any change.
        await game.refused("ResolveClaim", clock_pb2.ResolveClaimRequest(
            actor=actor("arbiter"), game_id=game_id, decision=99), grpc.StatusCode.INVALID_ARGUMENT)
        await game.refused("ResolveClaim", clock_pb2.ResolveClaimRequest(
            actor=common.Actor(player_id="guest-arbiter", kind=common.ACCOUNT_KIND_GUEST), game_id=game_id,
            decision=clock_pb2.CLAIM_DECISION_UPHELD), grpc.StatusCode.PERMISSION_DENIED)
        if unresolved_first:
            await time.sleep_until(filed + days(0.5))
            reply = await game.call("ResolveClaim", clock_pb2.ResolveClaimRequest(
                actor=actor("arbiter"), game_id=game_id, decision=clock_pb2.CLAIM_DECISION_UNRESOLVED))
            game.model = game.model.escalate_claim(at_of(reply))
            assert reply.claim_both_stopped and not reply.white.running and not reply.black.running
        await time.sleep_until(filed + days(2))
        reply = await game.call("ResolveClaim", clock_pb2.ResolveClaimRequest(
            actor=actor("arbiter"), game_id=game_id, decision=decision))
        game.model = game.model.resolve_claim(at_of(reply), upheld=decision == clock_pb2.CLAIM_DECISION_UPHELD)
        assert reply.claim_state == "" and reply.black.running
        assert reply.black.remaining_ms == game.model.remaining(Side.BLACK, at_of(reply)) * 1000
        return datetime.fromtimestamp(reply.server_time.ToMilliseconds() / 1000, t0.tzinfo) + days(1)

    async def wipe_redis() -> None:
        """Lose this game's Redis copy: PostgreSQL is its system of record."""
        await redis.delete(f"{prefix}:g:{game_id}")
        await redis.zrem(f"{prefix}:deadlines", game_id)

    for number in range(1, 61):
        # White: two 40-day thinks and one of 16 empty the bank (7 days left); then 1 day a move,
        # earning 1 day, until move 50; move 51 ends under 3 days with no bank and no increment any
        # more: Guaranteed Time resets the clock to 3 days, and again after every later move (TB-6).
        white_think = {1: 40, 2: 40, 3: 16, 51: 4.1}.get(number, 1 if number <= 50 else 0.1)
        not_before = await white_has_no_bank() if number == 3 else None
        await game.move(Side.WHITE, white_think, not_before)
        not_before = None
        if number == 5:
            not_before = await black_refuels()
        elif number == 8:
            not_before = await black_claims(clock_pb2.CLAIM_DECISION_REJECTED)
        elif number == 9:
            not_before = await black_claims(clock_pb2.CLAIM_DECISION_UPHELD)
        elif number == 10:
            not_before = await black_claims(clock_pb2.CLAIM_DECISION_REJECTED, unresolved_first=True)
        elif number == 30:
            await game.applied()
            await wipe_redis()
            assert (await client.get(game_id)).ply == game.ply, "read from PostgreSQL when Redis lost it"
        await game.move(Side.BLACK, 0.1, not_before)

    await game.applied()
    # White's 3 days run out (TB-4); the Redis copy is lost once more and rebuilt by the reconciler.
    await wipe_redis()
    deadline_ms = game.model.flag_deadline() * 1000
    await eventually(lambda: tap.flags(game_id), "white loses on time")
    flagged = tap.flags(game_id)[0]
    assert flagged.loser_id == white and flagged.reason == common.TERMINATION_TIME and not flagged.loser_never_sat
    assert flagged.flagged_at.ToMilliseconds() == deadline_ms

    await eventually(lambda: all(f"state:{game_id}:{p}" in _ids(tap, game_id) for p in game.expected),
                     "a clock state per move")
    states = {s.meta.event_id: s for s in tap.states(game_id)}
    for ply, (white_ms, black_ms, white_bank, black_bank) in game.expected.items():
        state = states[f"state:{game_id}:{ply}"]
        assert (state.white_remaining_ms, state.black_remaining_ms, state.white_bank_ms, state.black_bank_ms) == (
            white_ms, black_ms, white_bank, black_bank), f"ply {ply}"
    for number in range(51, 61):
        after_white = states[f"state:{game_id}:{2 * number - 1}"]
        assert after_white.white_remaining_ms == GUARANTEED_TIME_S * 1000 and after_white.white_bank_ms == 0
    assert states[f"state:{game_id}:2"].white_remaining_ms > GUARANTEED_TIME_S * 1000

    connection = await asyncpg.connect(stack.database_url)
    try:
        status = await connection.fetchval("SELECT status FROM clock.tb_games WHERE game_id = $1", game_id)
        verdict = await connection.fetchrow("SELECT loser_id, reason FROM clock.verdicts WHERE game_id = $1", game_id)
    finally:
        await connection.close()
    assert status == "over" and verdict["loser_id"] == white and verdict["reason"] == common.TERMINATION_TIME
    await redis.aclose()


def _ids(tap, game_id: str) -> set[str]:  # type: ignore[no-untyped-def]
    return {s.meta.event_id for s in tap.states(game_id)}
