"""ArenaFinished always fits the broker: the top standings that fit half its limit, every player counted.

An arena takes any number of players (AR-2). Its final event once carried every row, so a large
enough arena made an event the broker refuses: it was set aside and nobody heard the arena end.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from aiokafka import AIOKafkaConsumer
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.competition.arena import LeaderboardRow
from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.events import timestamp
from arbiter.kit.outbox import Outbox
from arbiter.kit.settings import BROKER_MAX_MESSAGE_BYTES
from services.arena.convert import finished_event
from services.arena.lifecycle import finish_if_done
from tests.integration.arena.arena_support import ArenaUnderTest, actor, arena_finished, arena_settings

FINISHED_AT = datetime(2026, 12, 2, 20, 0, tzinfo=UTC)
# The smallest limit settings take (KAFKA_MAX_MESSAGE_BYTES): the event then holds at most half of it.
SMALLEST_LIMIT = 16 * 1024

player_ids = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FFFF, exclude_categories=("Cs",),
                                   exclude_characters=","),
                     min_size=1, max_size=128).filter(str.isprintable)


@st.composite
def boards(draw: st.DrawFn) -> list[LeaderboardRow]:
    """A ranked board (points, then wins, descending) of distinct players."""
    ids = draw(st.lists(player_ids, min_size=0, max_size=300, unique=True))
    records = sorted(((draw(st.integers(0, 400)), draw(st.integers(0, 200)), player) for player in ids),
                     key=lambda record: (-record[0], -record[1], record[2]))
    rows: list[LeaderboardRow] = []
    for index, (points, wins, player) in enumerate(records):
        tied = rows and (rows[-1].points, rows[-1].wins) == (points, wins)
        rank = rows[-1].rank if tied else index + 1
        rows.append(LeaderboardRow(rank, player, points, wins, wins + draw(st.integers(0, 50)), 0))
    return rows


@settings(max_examples=150, deadline=None)
@given(boards(), st.integers(min_value=200, max_value=64 * 1024))
def test_the_event_keeps_the_top_rows_that_fit_and_counts_every_player(
        board: list[LeaderboardRow], max_bytes: int) -> None:
    event = finished_event("a_1", board, FINISHED_AT, max_bytes)
    assert event.ByteSize() <= max_bytes
    assert event.total_players == len(board)
    kept = [(row.rank, row.player_id, row.points, row.wins, row.games) for row in event.standings]
    assert kept == [(row.rank, row.player_id, row.points, row.wins, row.games) for row in board[:len(kept)]]
    if len(kept) < len(board):
        # The next row would not have fitted: nothing is cut that had room.
        one_more = ev.ArenaFinished()
        one_more.CopyFrom(event)
        one_more.standings.append(finished_event("a_1", board, FINISHED_AT, 1 << 30).standings[len(kept)])
        assert one_more.ByteSize() > max_bytes


def test_a_usual_arena_carries_every_row_and_wins_still_say_when_they_separated_a_tie() -> None:
    board = [LeaderboardRow(1, "ann", 10, 5, 6, 0), LeaderboardRow(2, "bob", 10, 4, 7, 0),
             LeaderboardRow(3, "cid", 4, 2, 5, 0)]
    event = finished_event("a_1", board, FINISHED_AT, BROKER_MAX_MESSAGE_BYTES // 2)
    assert [(row.player_id, row.tie_break) for row in event.standings] == [
        ("ann", ""), ("bob", "wins (AR-6)"), ("cid", "")]
    assert event.total_players == 3


async def test_an_arena_too_large_for_one_message_still_finishes_and_is_heard(arena: ArenaUnderTest) -> None:
    """At the smallest broker limit: the event is published (not set aside) and GetLeaderboard has the rest."""
    tag = uuid.uuid4().hex[:6]
    # Scheduled for later: the service pairs nobody while the players are put in directly.
    created = await arena.stub.CreateArena(ap.CreateArenaRequest(actor=actor(f"c{tag}"), settings=arena_settings(
        minutes=10, starts_at=timestamp(arena.clock.now() + timedelta(minutes=30)))))
    # Long ids of three-byte characters: about 300 bytes a row, so some 27 rows fit 8 KiB.
    players = [f"{tag}-{index:03d}-" + "漢" * 100 for index in range(120)]
    await arena.db.executemany(
        "INSERT INTO arena_players (arena_id, player_id, joined_at) VALUES ($1, $2, $3)",
        [(created.id, player, arena.clock.now()) for player in players])
    set_aside_before = await arena.db.fetchval("SELECT count(*) FROM outbox_set_aside")
    consumer = AIOKafkaConsumer(events.ARENA_FINISHED.name, bootstrap_servers=arena.settings.kafka_bootstrap_servers,
                                auto_offset_reset="earliest", group_id=f"test-{tag}")
    await consumer.start()
    try:
        async with arena.db.acquire() as connection, connection.transaction():
            # Closed and finished in one transaction, so the service's own safety net cannot finish it first.
            await connection.execute("UPDATE arenas SET state = 'closing' WHERE id = $1", created.id)
            assert await finish_if_done(connection, Outbox("arena", arena.clock, SMALLEST_LIMIT), created.id,
                                        arena.clock.now())
        finished = await arena_finished(consumer, created.id)
    finally:
        await consumer.stop()
    assert finished.total_players == len(players)
    assert 0 < len(finished.standings) < len(players)
    assert finished.ByteSize() <= SMALLEST_LIMIT // 2
    board = await arena.pure_board(created.id)
    assert [(row.rank, row.player_id) for row in finished.standings] == \
        [(rank, player) for rank, player, *_ in board[:len(finished.standings)]]
    assert await arena.db.fetchval("SELECT count(*) FROM outbox_set_aside") == set_aside_before
    # Every player is still in the final table the API pages through.
    assert {player for _, player, *_ in await arena.service_board(created.id, page_size=50)} == set(players)
