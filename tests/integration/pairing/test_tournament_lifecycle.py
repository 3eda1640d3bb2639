"""Tournaments played to the end in-process, with the play-site stand-in on the real broker (T-2..T-22)."""

from __future__ import annotations

import asyncio
import urllib.request
import uuid
from datetime import timedelta

import grpc
import pytest
import redis.asyncio as aioredis

from arbiter.competition.records import Entrant
from arbiter.competition.types import Format
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit import events
from arbiter.kit.events import timestamp
from arbiter.kit.metrics import Metrics
from services.pairing.busy import BusyRegistry
from services.pairing.handlers import ResultDesk, from_finished, from_flag
from services.pairing.metrics import PairingMetrics
from services.pairing.watch import WatchHub
from tests.integration.pairing.pairing_support import player, registered
from tests.support.kafka import consumed
from tests.support.pairing_checks import assert_finished_as_the_rules_say, core_rows, replay_with_the_rules, rows_of
from tests.support.playsite import Behaviour, PlaySite
from tests.support.polling import eventually


@pytest.fixture(scope="module")
async def site(infra_env, pairing):
    play_site = PlaySite(infra_env["KAFKA_BOOTSTRAP_SERVERS"])
    await play_site.start()
    yield play_site
    await play_site.stop()


async def open_tournament(pairing, site, entrants: list[str], behaviour: Behaviour | None = None,
                          **overrides) -> str:
    values = {
        "name": "Lifecycle", "variant": "international", "capacity": 40, "duration_minutes": 600,
        "time_control": common.TimeControl(fischer=common.FischerControl(base_seconds=60, increment_seconds=1)),
        # 7 minutes (3.5 real seconds): room for the creation (T-4 wants 5) and the joins on a loaded machine.
        "starts_at": timestamp(pairing.starts_in(7)),
    }
    values.update(overrides)
    reply = await pairing.stub.CreateTournament(tp.CreateTournamentRequest(
        actor=registered(player("creator")), settings=tp.TournamentSettings(**values)))
    tournament_id = reply.tournament.id
    site.follow(tournament_id, behaviour)
    for p in entrants:
        await pairing.stub.JoinTournament(tp.JoinTournamentRequest(actor=registered(p), tournament_id=tournament_id,
                                                                   invite_token=reply.invite_token))
    return tournament_id


def metric(pairing, name: str, **labels: str) -> float:
    """One sample of the service's /metrics (0 when absent)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{pairing.settings.metrics_port}/metrics").read().decode()
    wanted = [f'{k}="{v}"' for k, v in labels.items()]
    for line in text.splitlines():
        if line.startswith(name + "{") and all(w in line for w in wanted):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def test_four_entrants_play_a_double_round_robin_watched_live(pairing, site) -> None:
    """T-10: exactly 4 entrants always play double: 3 rounds, 6 games each, colours reversed (T-12, O-11)."""
    entrants = [player("rr4") for _ in range(4)]
    tournament_id = await open_tournament(pairing, site, entrants, Behaviour(seed=4),
                                          variant="italian", opening_mode=common.OPENING_MODE_TABLE_UP_TO_1)
    changes: list[tp.TournamentChange] = []

    async def watch() -> None:
        async for change in pairing.stub.WatchTournament(tp.WatchTournamentRequest(tournament_id=tournament_id)):
            changes.append(change)

    watcher = asyncio.create_task(watch())
    log = await site.wait_end(tournament_id, timeout=90)
    await asyncio.wait_for(watcher, 10)  # the stream ends with the tournament

    assert log.started.format == "round_robin" and log.started.rounds == 3 and log.started.games_per_pairing == 2
    pairings = await assert_finished_as_the_rules_say(pairing.stub, log, tournament_id)
    for number, paired in log.rounds.items():
        requests = [r[0] for r in log.requests.values() if r[0].competition.round == number]
        assert len(requests) == 4 and len({r.opening.number for r in requests}) == 1  # O-10: one per round
        for line in paired.pairings:
            first, second = (log.requests[g][0] for g in line.game_ids)
            assert (first.white_id, first.black_id) == (second.black_id, second.white_id)  # T-12
            assert first.opening == second.opening  # O-11
    per_player = {p: sum(1 for r in pairings.rounds for g in r.games if p in (g.white_id, g.black_id))
                  for p in entrants}
    assert set(per_player.values()) == {6}
    kinds = [c.change for c in changes]
    assert kinds[0] == "snapshot" and kinds[-1] == "finished"
    assert kinds.count("round_paired") == 3 and kinds.count("result") == 12 and "started" in kinds
    assert changes[-1].tournament.state == tp.TOURNAMENT_STATE_FINISHED


async def test_swiss_tournaments_starting_together_are_paired_round_for_round_as_the_rules_say(pairing, site) -> None:
    """T-13: Swiss rounds that end at once are paired together (issue 41), each draw the rules core's own."""
    starts_at = timestamp(pairing.starts_in(9))
    fields = {size: [player(f"sw{size}") for _ in range(size)] for size in (7, 8, 9)}
    behaviours = {size: Behaviour(seed=size) for size in fields}
    ids = {size: await open_tournament(pairing, site, entrants, behaviours[size], rated=False, starts_at=starts_at)
           for size, entrants in fields.items()}
    logs = await asyncio.gather(*(site.wait_end(tournament_id, timeout=180) for tournament_id in ids.values()))
    for (size, tournament_id), log in zip(ids.items(), logs, strict=True):
        pairings = await assert_finished_as_the_rules_say(pairing.stub, log, tournament_id)
        assert log.started.format == "swiss", log.started
        seats = [Entrant(e.player_id, e.berger_number, e.initial_rank, e.rating) for e in pairings.entrants]
        draws, standings = replay_with_the_rules(tournament_id, seats, Format.SWISS, log.started.rounds,
                                                 log.started.games_per_pairing, behaviours[size])
        assert [(n, [(line.white_id, line.black_id) for line in log.rounds[n].pairings], log.rounds[n].bye_id or None)
                for n in sorted(log.rounds)] == [(n, list(pairs), bye) for n, pairs, bye in draws]
        assert rows_of(log.finished.standings) == core_rows(standings)


async def test_absences_busy_forfeits_and_byes(pairing, site) -> None:
    """T-8 byes; T-16 never sat (clock's flag decides, the play site's relay is ignored); T-18 busy forfeit,
    never opened; T-19 both absent 0-0; T-20 nobody dropped."""
    entrants = [player("abs") for _ in range(5)]
    absent, busy = entrants[0], entrants[1]
    ignored_before = metric(pairing, "arbiter_results_ignored_total", reason="already_scored")
    await site.occupy(busy)  # T-18: in a casual game elsewhere for the whole tournament
    tournament_id = await open_tournament(pairing, site, entrants, Behaviour(seed=5, absent=frozenset({absent})),
                                          rated=False)
    log = await site.wait_end(tournament_id, timeout=120)
    pairings = await assert_finished_as_the_rules_say(pairing.stub, log, tournament_id)

    assert log.started.format == "round_robin" and log.started.rounds == 5
    assert sorted(r.bye_id for r in log.rounds.values()) == sorted(entrants)  # T-8, T-14: one bye each
    games = [g for r in pairings.rounds for g in r.games]
    busy_games = [g for g in games if busy in (g.white_id, g.black_id)]
    assert len(busy_games) == 4  # T-20: still paired every round but the bye
    for game in busy_games:
        assert not game.opened and game.game_id not in log.requests  # never opened
        assert game.termination == common.TERMINATION_BUSY_FORFEIT
        assert log.pairing_results[game.game_id].termination == common.TERMINATION_BUSY_FORFEIT
        loser_points = game.white_points if game.white_id == busy else game.black_points
        if absent not in (game.white_id, game.black_id):
            assert loser_points == 0 and game.white_points + game.black_points == 2
    for game in games:
        if absent in (game.white_id, game.black_id) and busy not in (game.white_id, game.black_id):
            assert game.termination == common.TERMINATION_NEVER_SAT and not game.rated
            assert (game.white_points if game.white_id == absent else game.black_points) == 0
    # The play site's GameFinished after each flag came second: counted, not applied.
    flagged = sum(1 for d in log.decided.values() if d.source == "flagged")
    assert flagged == 3
    # The relays may still be on their way when the tournament ends: wait for them.
    await eventually(lambda: metric(pairing, "arbiter_results_ignored_total", reason="already_scored")
                     >= ignored_before + flagged, "the play site's relays counted as already scored")


async def test_a_result_for_an_unknown_game_or_twice_is_counted_and_ignored(pairing, site) -> None:
    before_unknown = metric(pairing, "arbiter_results_ignored_total", reason="unknown_game")
    ghost = ev.GameFinished(
        game_id="t_000000000000-r1-b1-g1", white_id=player(), black_id=player(),
        competition=common.CompetitionRef(kind=common.COMPETITION_KIND_TOURNAMENT, id="t_000000000000", round=1),
        result=common.GAME_RESULT_WHITE_WINS, termination=common.TERMINATION_RESIGNATION,
    )
    await site.publish(ghost)
    await eventually(lambda: metric(pairing, "arbiter_results_ignored_total", reason="unknown_game") > before_unknown,
                     "the unknown game counted")
    assert metric(pairing, "arbiter_results_ignored_total", reason="unknown_game") == before_unknown + 1


async def test_closed_by_its_duration_with_open_games_drawn(pairing, site) -> None:
    """T-15: at the announced end + 10 minutes every open game is drawn and the tournament closes."""
    entrants = [player("late") for _ in range(6)]
    tournament_id = await open_tournament(pairing, site, entrants, Behaviour(hold=True), duration_minutes=1,
                                          rated=True)
    # Who sat, as the clock service would say: board 1 both, board 2 white only, board 3 nobody (never opened).
    pairing.clocks.moves.update({f"{tournament_id}-r1-b1-g1": (3, 2), f"{tournament_id}-r1-b2-g1": (1, 0)})
    log = await site.wait_end(tournament_id, timeout=60)
    await assert_finished_as_the_rules_say(pairing.stub, log, tournament_id)
    assert len(log.rounds) == 1  # rounds not yet started are not played
    drawn = list(log.pairing_results.values())
    assert len(drawn) == 3 and all(e.termination == common.TERMINATION_CLOSED_AT_DEADLINE for e in drawn)
    assert all(e.result == common.GAME_RESULT_DRAW for e in drawn)
    # only the game both players sat at is rated; the events say who sat.
    by_board = {int(e.game_id.split("-b")[1].split("-")[0]): e for e in drawn}
    assert [(by_board[b].white_sat, by_board[b].black_sat, by_board[b].rated) for b in (1, 2, 3)] == [
        (True, True, True), (True, False, False), (False, False, False)]
    assert {e.game_id for e in drawn} <= set(pairing.clocks.asked)
    t = await pairing.stub.GetTournament(tp.GetTournamentRequest(tournament_id=tournament_id))
    assert t.state == tp.TOURNAMENT_STATE_FINISHED and "T-15" in t.finish_note
    elapsed = t.finished_at.ToDatetime() - t.settings.starts_at.ToDatetime()
    assert elapsed >= timedelta(minutes=11)


async def test_cancelled_below_its_minimum(pairing, site) -> None:
    """T-3: fewer than the minimum at the start time: the tournament cancels itself and frees the creator (A-2)."""
    tournament_id = await open_tournament(pairing, site, [player("few") for _ in range(4)], minimum_entrants=5)
    log = await site.wait_end(tournament_id, timeout=60)
    assert log.cancelled is not None and "T-3" in log.cancelled.reason and log.started is None
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await pairing.stub.GetPairings(tp.GetPairingsRequest(tournament_id=tournament_id, round=1))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


async def test_the_play_sites_final_word_replaces_a_differing_flag(pairing, site) -> None:
    """A flag scores a game at once; the play site's GameFinished, the final word, replaces it when it differs
    (after a broker outage the clock can flag moves it had not received); later flags change nothing."""
    entrants = [player("word") for _ in range(4)]
    tournament_id = await open_tournament(pairing, site, entrants, Behaviour(seed=6, hold=True), rated=True)
    log = site.logs[tournament_id]
    await site.wait_for(lambda: len(log.requests) >= 2, 60, "round 1's games")
    request = next(iter(log.requests.values()))[0]
    game_id = request.game_id
    corrected_before = metric(pairing, "arbiter_results_corrected_total", source="game.finished")

    async def game_row() -> tp.GameRecord:
        pairings = await pairing.stub.GetPairings(tp.GetPairingsRequest(tournament_id=tournament_id))
        return next(g for r in pairings.rounds for g in r.games if g.game_id == game_id)

    async def until(predicate, what: str) -> tp.GameRecord:
        return await eventually(game_row, what, until=predicate)

    flag = ev.ClockFlagged(game_id=game_id, loser_id=request.white_id, reason=common.TERMINATION_TIME)
    flag.meta.event_id = f"test-flag-{game_id}"
    await site.publish(flag)
    flagged = await until(lambda g: g.finished, "the flag")
    assert flagged.result == common.GAME_RESULT_BLACK_WINS and (flagged.white_points, flagged.black_points) == (0, 2)

    final = ev.GameFinished(
        game_id=game_id, white_id=request.white_id, black_id=request.black_id, competition=request.competition,
        variant=request.variant, speed=request.speed, result=common.GAME_RESULT_WHITE_WINS,
        termination=common.TERMINATION_RESIGNATION, white_sat=True, black_sat=True, rated=True, plies=30,
    )
    final.meta.event_id = f"test-final-{game_id}"
    await site.publish(final)
    corrected = await until(lambda g: g.result == common.GAME_RESULT_WHITE_WINS, "the correction")
    assert (corrected.white_points, corrected.black_points) == (2, 0)
    assert corrected.termination == common.TERMINATION_RESIGNATION and corrected.rated
    assert metric(pairing, "arbiter_results_corrected_total", source="game.finished") == corrected_before + 1
    standings = await pairing.stub.GetStandings(tp.GetStandingsRequest(tournament_id=tournament_id))
    assert {r.player_id: r.points for r in standings.rows}[request.white_id] == 2

    # A later flag, and the final word delivered again, change nothing more.
    late = ev.ClockFlagged(game_id=game_id, loser_id=request.black_id, reason=common.TERMINATION_TIME)
    late.meta.event_id = f"test-late-flag-{game_id}"
    await site.publish(late)
    await site.publish(final)
    # Handled (the pairing service's group has committed past both) and nothing changed.
    await consumed(pairing.settings.kafka_bootstrap_servers, pairing.settings.pairing_consumer_group,
                   [events.CLOCK_FLAGGED, events.GAME_FINISHED])
    assert (await game_row()).result == common.GAME_RESULT_WHITE_WINS
    assert metric(pairing, "arbiter_results_corrected_total", source="game.finished") == corrected_before + 1


class DeskUnderTest:
    """A ResultDesk of its own on the service's database and Redis, with metrics to read back."""

    def __init__(self, pairing, redis, poke) -> None:
        self.metrics = Metrics("pairing-batch-test")
        self.results = ResultDesk(pairing.db, pairing.clock, BusyRegistry(redis, 600), WatchHub(redis),
                                  PairingMetrics.create(self.metrics), poke, "pairing", alone=lambda: True)

    def ignored(self, reason: str) -> float:
        """arbiter_results_ignored_total of one reason."""
        return self.metrics.registry.get_sample_value(
            "arbiter_results_ignored_total", {"service": self.metrics.service, "reason": reason}) or 0.0


def finished(request: ev.GameRequested, result: int, event_id: str,
             termination: int = common.TERMINATION_RESIGNATION) -> ev.GameFinished:
    """The play site's GameFinished of a requested game, both players seated."""
    event = ev.GameFinished(
        game_id=request.game_id, white_id=request.white_id, black_id=request.black_id,
        competition=request.competition, result=result, termination=termination, white_sat=True, black_sat=True)
    event.meta.event_id = event_id
    return event


async def test_one_batch_with_a_flag_and_the_final_word_applies_once_even_delivered_again(pairing, site) -> None:
    """A batch that holds a game's flag and then its final word scores the final word (T-16..T-19), completes
    the round once, and the same batch delivered again (after a crash) changes nothing."""
    entrants = [player("batch") for _ in range(4)]
    tournament_id = await open_tournament(pairing, site, entrants, Behaviour(hold=True))
    log = site.logs[tournament_id]
    # Round 1: two boards, a game each way (T-8 for four entrants: a double round robin).
    await site.wait_for(lambda: len(log.requests) >= 4, 60, "round 1's games")
    first, second, *others = sorted((requests[0] for requests in log.requests.values()), key=lambda r: r.game_id)
    redis = aioredis.from_url(pairing.settings.redis_url)
    woken: list[str] = []
    desk = DeskUnderTest(pairing, redis, woken.append)
    ignored = desk.ignored

    flag = ev.ClockFlagged(game_id=first.game_id, loser_id=first.white_id, reason=common.TERMINATION_TIME)
    flag.meta.event_id = f"batch-flag-{first.game_id}"
    batch = [from_flag(flag), from_finished(finished(first, common.GAME_RESULT_WHITE_WINS, f"batch-{first.game_id}")),
             from_finished(finished(second, common.GAME_RESULT_DRAW, f"batch-{second.game_id}")),
             from_finished(finished(second, common.GAME_RESULT_BLACK_WINS, f"batch-late-{second.game_id}")),
             *(from_finished(finished(other, common.GAME_RESULT_DRAW, f"batch-{other.game_id}")) for other in others)]
    # Another game of the site whose event has no id: not ours to deduplicate, so it blocks nothing.
    casual = ev.GameFinished(game_id=f"casual-{uuid.uuid4().hex[:8]}", white_id=player(), black_id=player(),
                             competition=common.CompetitionRef(kind=common.COMPETITION_KIND_CASUAL),
                             result=common.GAME_RESULT_DRAW, termination=common.TERMINATION_DRAW_AGREED)
    batch.insert(1, from_finished(casual))
    try:
        assert await desk.results.apply(batch) == "handled"
        rows = {r["game_id"]: r for r in await pairing.db.fetch(
            "SELECT * FROM games WHERE game_id = ANY($1::text[])", [first.game_id, second.game_id])}
        assert rows[first.game_id]["result"] == "white_wins" and rows[first.game_id]["decided_by"].startswith(
            "game.finished:")
        assert rows[second.game_id]["result"] == "draw"
        assert woken == [tournament_id]  # the round is complete: its last results wake the scheduler once
        # The flag the final word replaced and the second game's later result came too late.
        assert ignored("already_scored") == 2
        assert await desk.results.apply(batch) == "duplicate"
        again = {r["game_id"]: r for r in await pairing.db.fetch(
            "SELECT * FROM games WHERE game_id = ANY($1::text[])", [first.game_id, second.game_id])}
        assert again == rows and woken == [tournament_id]
        assert ignored("already_scored") == 2, "a redelivered event is a duplicate, not a late result"
        # A redelivered event ahead of a new one for the same game: only the new one is late.
        retry = finished(second, common.GAME_RESULT_WHITE_WINS, f"batch-retry-{second.game_id}")
        assert await desk.results.apply([batch[2], batch[3], from_finished(retry)]) == "ignored"
        assert ignored("already_scored") == 3
        assert (await pairing.db.fetchval("SELECT result FROM games WHERE game_id = $1", second.game_id)) == "draw"
    finally:
        await redis.aclose()


async def test_a_redelivered_final_word_does_not_stand_in_the_way_of_a_new_one(pairing, site) -> None:
    """A game decided by a flag keeps it when the play site's final word agrees; a later, different final
    word corrects it (T-16) even when it arrives behind the first one delivered again."""
    entrants = [player("again") for _ in range(4)]
    tournament_id = await open_tournament(pairing, site, entrants, Behaviour(hold=True))
    log = site.logs[tournament_id]
    await site.wait_for(lambda: len(log.requests) >= 4, 60, "round 1's games")
    game = min((requests[0] for requests in log.requests.values()), key=lambda r: r.game_id)
    redis = aioredis.from_url(pairing.settings.redis_url)
    desk = DeskUnderTest(pairing, redis, lambda _tournament: None)

    async def decided_by() -> tuple[str, str]:
        row = await pairing.db.fetchrow("SELECT result, decided_by FROM games WHERE game_id = $1", game.game_id)
        return row["result"], row["decided_by"]

    flag = ev.ClockFlagged(game_id=game.game_id, loser_id=game.white_id, reason=common.TERMINATION_TIME)
    flag.meta.event_id = f"again-flag-{game.game_id}"
    agreeing = from_finished(finished(game, common.GAME_RESULT_BLACK_WINS, f"again-agree-{game.game_id}",
                                      common.TERMINATION_TIME))
    differing = from_finished(finished(game, common.GAME_RESULT_WHITE_WINS, f"again-differ-{game.game_id}"))
    try:
        assert await desk.results.apply([from_flag(flag)]) == "handled"
        assert await desk.results.apply([agreeing]) == "ignored"
        assert await decided_by() == ("black_wins", f"clock.flagged:{flag.meta.event_id}")
        assert await desk.results.apply([agreeing, differing]) == "handled"
        assert await decided_by() == ("white_wins", f"game.finished:{differing.event_id}")
        assert desk.ignored("already_scored") == 1  # the agreeing word, once: its redelivery is a duplicate
    finally:
        await redis.aclose()
