"""Comparison for the chaos suite: what the system published, checked against the pure rules; table snapshots.

`Recorded.read` (every game event read back from the topics), `game_differences` (no game twice,
no player in two games, one result per game), `tournament_points`, `arena_leaderboard` and
`expected_ratings` (recomputed by the pure rules from the recorded games), `rating_differences`,
`snapshot_tables` / `snapshot_differences` (what "nothing changed" compares, set-aside tables
left out), `set_aside_differences` (every poison record set aside by every group that reads it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from arbiter_tools.chaos.redelivery import read_raw

# Tables that hold what was set aside, not what was decided: poison records land there, and a
# redelivery under fresh consumer groups sets them aside again, so "nothing changed" leaves them out.
SET_ASIDE_TABLES = ("consumer_set_aside", "outbox_set_aside")
# What each kind of poison record (arbiter_tools.poison) is set aside as.
REASON_OF_POISON = {"undecodable": "undecodable", "nul": "invalid", "huge_id": "invalid", "unknown_enum": "invalid",
                    "bad_timestamp": "invalid"}


@dataclass
class Recorded:
    """What the system published, read back from the topics."""

    requested: list[Any]
    started: list[Any]
    finished: list[Any]
    round_paired: list[Any]
    flagged: list[Any] = field(default_factory=list)
    abandoned: list[Any] = field(default_factory=list)

    @classmethod
    async def read(cls, bootstrap: str, poison_tags: Iterable[str] = ()) -> Recorded:
        """Every GameRequested, GameStarted, GameFinished, RoundPaired, ClockFlagged and GameAbandoned ever
        published on `bootstrap`, but the poison records (any of `poison_tags` in their key or value)."""
        from arbiter.kit import events

        tags = [tag.encode() for tag in poison_tags]
        found = []
        for topic in (events.GAME_REQUESTED, events.GAME_STARTED, events.GAME_FINISHED, events.ROUND_PAIRED,
                      events.CLOCK_FLAGGED, events.GAME_ABANDONED):
            found.append([topic.message.FromString(value) for _topic, key, value, _headers in
                          await read_raw(bootstrap, [topic])
                          if not any(tag in (key or b"") or tag in value for tag in tags)])
        return cls(*found)

    def first_finished(self) -> dict[str, Any]:
        """The first GameFinished of each game id."""
        out: dict[str, Any] = {}
        for event in self.finished:
            out.setdefault(event.game_id, event)
        return out


def _content(message: Any) -> bytes:
    copy = type(message)()
    copy.CopyFrom(message)
    copy.ClearField("meta")
    return copy.SerializeToString(deterministic=True)


def _seconds(ts: Any) -> float:
    return ts.seconds + ts.nanos / 1e9


def game_differences(recorded: Recorded) -> list[str]:
    """No game requested twice, no player in two games, every requested game finished, one result per game."""
    from arbiter.contracts import common_pb2 as common

    problems: list[str] = []
    contents: dict[str, set[bytes]] = {}
    for event in recorded.requested:
        contents.setdefault(event.game_id, set()).add(_content(event))
    for game_id, variants in sorted(contents.items()):
        if len(variants) > 1:
            problems.append(f"game {game_id} requested {len(variants)} times with different content")
    requests = {e.game_id: e for e in recorded.requested}
    boards: dict[tuple[str, int, frozenset[str]], set[str]] = {}
    for event in requests.values():
        if event.competition.kind == common.COMPETITION_KIND_TOURNAMENT:
            key = (event.competition.id, event.competition.round, frozenset((event.white_id, event.black_id)))
            boards.setdefault(key, set()).add(event.game_id)
    for (competition, round_, players), ids in sorted(boards.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if len(ids) > 1:  # a home-and-away pairing would be 2: the chaos scenarios have none
            problems.append(f"tournament {competition} round {round_}: {sorted(players)} requested as {sorted(ids)}")
    results: dict[str, set[tuple[int, int]]] = {}
    for event in recorded.finished:
        results.setdefault(event.game_id, set()).add((event.result, event.termination))
    for game_id, outcomes in sorted(results.items()):
        if len(outcomes) > 1:
            problems.append(f"game {game_id} finished {len(outcomes)} ways: {sorted(outcomes)}")
    finished = recorded.first_finished()
    # The clock's word and the play site's word on one game must agree (both are final words).
    for flag in recorded.flagged:
        end = finished.get(flag.game_id)
        if end is None:
            continue
        loser_won = (end.result == common.GAME_RESULT_WHITE_WINS and flag.loser_id == end.white_id) or (
            end.result == common.GAME_RESULT_BLACK_WINS and flag.loser_id == end.black_id)
        if loser_won or end.result == common.GAME_RESULT_DRAW:
            problems.append(f"game {flag.game_id}: clock.flagged says {flag.loser_id} lost, game.finished says "
                            f"{common.GameResult.Name(end.result)} by {common.Termination.Name(end.termination)}")
    for gone in recorded.abandoned:
        end = finished.get(gone.game_id)
        if end is not None and end.result != common.GAME_RESULT_BOTH_LOSE:
            problems.append(f"game {gone.game_id}: game.abandoned, but game.finished says "
                            f"{common.GameResult.Name(end.result)} by {common.Termination.Name(end.termination)}")
    flags: dict[str, list[Any]] = {}
    for flag in recorded.flagged:
        flags.setdefault(flag.game_id, []).append(flag)
    per_player: dict[str, list[tuple[float, float, str]]] = {}
    for game_id, request in requests.items():
        if request.competition.kind == common.COMPETITION_KIND_CASUAL:
            continue  # T-18's casual games overlap on purpose
        end = finished.get(game_id)
        if end is None:
            problems.append(f"game {game_id} ({request.white_id} - {request.black_id}) requested, never finished")
            continue
        # The game is over at its first final word: a flag or a double absence may come before the result.
        over = min([_seconds(end.finished_at)] + [_seconds(f.flagged_at) for f in flags.get(game_id, ())]
                   + [_seconds(a.abandoned_at) for a in recorded.abandoned if a.game_id == game_id])
        span = (_seconds(request.requested_at), over, game_id)
        for player in (request.white_id, request.black_id):
            per_player.setdefault(player, []).append(span)
    for player, spans in sorted(per_player.items()):
        spans.sort()
        for before, after in zip(spans, spans[1:], strict=False):
            if after[0] < before[1]:
                problems.append(f"{player} in two games at once: {before[2]} (until {before[1]:.1f}) and "
                                f"{after[2]} (requested {after[0]:.1f})")
    return problems


_POINTS = {1: (2, 0), 2: (0, 2), 3: (1, 1), 4: (0, 0)}  # GAME_RESULT_WHITE_WINS, BLACK_WINS, DRAW, BOTH_LOSE


def tournament_points(recorded: Recorded, tournament_id: str) -> dict[str, int]:
    """Points per entrant from the recorded results and byes (T-7, T-8)."""
    points: dict[str, int] = {}
    for _game_id, event in recorded.first_finished().items():
        if event.competition.id != tournament_id:
            continue
        white, black = _POINTS.get(event.result, (0, 0))
        points[event.white_id] = points.get(event.white_id, 0) + white
        points[event.black_id] = points.get(event.black_id, 0) + black
    byes = {e.round: e.bye_id for e in recorded.round_paired if e.tournament_id == tournament_id and e.bye_id}
    for entrant in byes.values():
        points[entrant] = points.get(entrant, 0) + 2
    return points


def arena_leaderboard(recorded: Recorded, arena_id: str, players: Iterable[str] = ()) -> list[Any]:
    """The arena leaderboard recomputed by the pure rules from the recorded results in finish order."""
    from arbiter.competition.arena_scoring import ArenaGame, recompute_leaderboard
    from arbiter.kit.convert import GAME_RESULT

    games = sorted((e for e in recorded.first_finished().values() if e.competition.id == arena_id),
                   key=lambda e: (_seconds(e.finished_at), e.game_id))
    return recompute_leaderboard([ArenaGame(e.white_id, e.black_id, GAME_RESULT[e.result], e.white_boosted,
                                            e.black_boosted) for e in games], players)


_WHITE_SCORE = {1: 1.0, 2: 0.0, 3: 0.5}  # GAME_RESULT_WHITE_WINS, BLACK_WINS, DRAW


def expected_ratings(recorded: Recorded) -> dict[tuple[str, int, str], Any]:
    """(variant, speed, player) -> PlayerState: every rated game replayed in canonical order (R-5).

    Which games count is decided here by the pure rules alone (R-1, R-3, T-8, T-18, T-19), not by
    the rating service's own code: the suite checks the service, so it must not share its reading.
    """
    from arbiter.draughts.variants import variant_by_name
    from arbiter.kit.convert import GAME_RESULT, TERMINATION
    from arbiter.kit.events import datetime_of
    from arbiter.rating import is_game_rated
    from arbiter.rating.ledger import GameToRate, replay_in_order
    from arbiter.vocabulary import ResultKind

    pools: dict[tuple[str, int], list[Any]] = {}
    for event in recorded.first_finished().values():
        kind = ResultKind.of(TERMINATION.get(event.termination), GAME_RESULT.get(event.result))
        rated, _reason = is_game_rated(event.rated, kind, event.white_sat and event.black_sat,
                                       not event.white_id or not event.black_id)
        finished_at = datetime_of(event.finished_at) if event.HasField("finished_at") else None
        if not rated or event.result not in _WHITE_SCORE or finished_at is None:
            continue  # the rating service ignores a rated GameFinished without its finish time
        pool = (variant_by_name(event.variant).value, event.speed)
        pools.setdefault(pool, []).append(GameToRate(event.game_id, finished_at, event.white_id, event.black_id,
                                                     _WHITE_SCORE[event.result]))
    out: dict[tuple[str, int, str], Any] = {}
    for (variant, speed), games in pools.items():
        for player, state in replay_in_order(games).items():
            out[(variant, speed, player)] = state
    return out


async def rating_differences(database_url: str, recorded: Recorded, tolerance: float = 1e-6) -> list[str]:
    """The rating service's `ratings` table against `expected_ratings`."""
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch("SELECT variant, speed, player_id, rating, deviation, volatility, games "
                                      "FROM rating.ratings")
    finally:
        await connection.close()
    stored = {(r["variant"], r["speed"], r["player_id"]): r for r in rows}
    expected = expected_ratings(recorded)
    problems = [f"rating of {key} stored, no rated game recorded" for key in sorted(set(stored) - set(expected))]
    problems += [f"rating of {key} missing" for key in sorted(set(expected) - set(stored))]
    for key in sorted(set(stored) & set(expected)):
        row, state = stored[key], expected[key]
        got = (row["rating"], row["deviation"], row["volatility"], row["games"])
        want = (state.rating.rating, state.rating.rd, state.rating.vol, state.games)
        if got[3] != want[3] or any(abs(a - b) > tolerance for a, b in zip(got[:3], want[:3], strict=False)):
            problems.append(f"rating of {key}: stored {got}, replay {want}")
    return problems


async def snapshot_tables(database_url: str, schemas: Iterable[str],
                          skip: Iterable[str] = ("outbox", *SET_ASIDE_TABLES),
                          ) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of `schemas` (but `skip`: the outboxes, `SET_ASIDE_TABLES`), sorted:
    what "nothing changed" compares."""
    skipped = set(skip)
    connection = await asyncpg.connect(database_url)
    try:
        tables = await connection.fetch(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema = ANY($1::text[]) AND table_type = 'BASE TABLE'", list(schemas))
        out: dict[str, list[tuple[Any, ...]]] = {}
        for row in tables:
            if row["table_name"] in skipped:
                continue
            name = f'"{row["table_schema"]}"."{row["table_name"]}"'
            records = await connection.fetch(f"SELECT * FROM {name}")
            out[name] = sorted((tuple(r.values()) for r in records), key=repr)
        return out
    finally:
        await connection.close()


def snapshot_differences(before: dict[str, list[tuple[Any, ...]]],
                         after: dict[str, list[tuple[Any, ...]]]) -> list[str]:
    """Tables whose rows differ between two snapshots, with a sample of what differs."""
    problems: list[str] = []
    for table in sorted(set(before) | set(after)):
        old, new = before.get(table, []), after.get(table, [])
        if old != new:
            gone = [r for r in old if r not in new][:3]
            came = [r for r in new if r not in old][:3]
            problems.append(f"{table}: {len(old)} rows before, {len(new)} after; gone {gone}; new {came}")
    return problems


async def set_aside_differences(database_url: str, tag: str, published: dict[str, list[Any]],
                                consumer_groups: dict[str, dict[str, tuple[str, ...]]]) -> list[str]:
    """Every consumer group set aside each poison record (`tag` in its key or value) of its topics, once.

    `consumer_groups`: per service, each group id and the topics it reads (`SystemStack.consumer_groups()`).
    """
    connection = await asyncpg.connect(database_url)
    try:
        problems: list[str] = []
        for service, groups in sorted(consumer_groups.items()):
            rows = await connection.fetch(
                f'SELECT consumer_group, topic, reason FROM "{service}".consumer_set_aside'
                " WHERE position($1::bytea in coalesce(key, '')) > 0 OR position($1::bytea in coalesce(value, '')) > 0",
                tag.encode())
            got = sorted((r["consumer_group"], r["topic"], r["reason"]) for r in rows)
            want = sorted((group, topic, REASON_OF_POISON[record.kind]) for group, topics in groups.items()
                          for topic in topics for record in published.get(topic, ()))
            if got != want:
                missing = [row for row in want if row not in got][:5]
                extra = [row for row in got if row not in want][:5]
                problems.append(f"{service} set aside {len(got)} poison records, expected {len(want)}: "
                                f"missing {missing}, unexpected {extra}")
        return problems
    finally:
        await connection.close()
