"""Live changes of one tournament: TournamentChange messages over the kit's Watch hub (arbiter.kit.watch).

Any replica may serve WatchTournament for changes committed by another one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Final

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit import watch
from arbiter.kit.watch import FINAL_CHANGES as FINAL_CHANGES  # noqa: PLC0414 (the servicer's name for it)

log = logging.getLogger(__name__)

# ARGV: channel, message, channel, message... One command instead of a pipeline of PUBLISH: redis-py
# packs and parses each pipelined command apart, which made announcing results about a twentieth
# of the service's CPU under load (py-spy, 500 results/s).
_PUBLISH_ALL: Final = """
for i = 1, #ARGV, 2 do redis.call('PUBLISH', ARGV[i], ARGV[i + 1]) end
return 1
"""
# Messages per script call: a call blocks Redis while it runs, so a huge batch is cut in slices.
_MESSAGES_PER_CALL: Final = 500


class WatchHub(watch.WatchHub[tp.TournamentChange]):
    """Publishes and subscribes to TournamentChange messages, a channel per tournament."""

    channel_prefix = "pairing:watch:"
    message_type = tp.TournamentChange
    noun = "tournament"

    def __init__(self, redis: aioredis.Redis, *, max_queued: int = watch.DEFAULT_WATCH_MAX_QUEUED,
                 max_watchers: int = watch.DEFAULT_WATCH_MAX_WATCHERS) -> None:
        super().__init__(redis, max_queued=max_queued, max_watchers=max_watchers)
        self._publish_all = redis.register_script(_PUBLISH_ALL)

    async def publish(self, tournament_id: str, change: str, *, round_number: int = 0,
                      game: tp.GameRecord | None = None) -> None:
        """Announce a committed change; best effort (watchers re-read the state they are sent)."""
        message = tp.TournamentChange(change=change, round=round_number)
        message.tournament.id = tournament_id
        if game is not None:
            message.game.CopyFrom(game)
        await self.publish_message(tournament_id, message)

    async def publish_changes(self, changes: Sequence[tuple[str, str, int]]) -> None:
        """Announce many committed changes at once, (tournament id, change, round) each, in one round trip."""
        await self.publish_messages((tournament, _change(tournament, change, round_number))
                                    for tournament, change, round_number in changes)

    async def publish_results(self, games: list[tuple[str, tp.GameRecord]]) -> None:
        """Announce many committed results at once, (tournament id, game) each, in one round trip."""
        await self.publish_messages((tournament, _result_change(tournament, game)) for tournament, game in games)

    async def publish_messages(self, messages: Iterable[tuple[str, tp.TournamentChange]]) -> None:
        """Announce many committed changes, (tournament id, message) each, in one script call; best effort."""
        args = [part for key, message in messages
                for part in (self.channel_prefix + key, message.SerializeToString())]
        per_call = 2 * _MESSAGES_PER_CALL
        try:
            for start in range(0, len(args), per_call):
                await self._publish_all(args=args[start:start + per_call])
        except (RedisError, OSError) as error:
            log.warning("watch publish failed", extra={"changes": len(args) // 2, "error": repr(error)})


def _change(tournament_id: str, change: str, round_number: int) -> tp.TournamentChange:
    message = tp.TournamentChange(change=change, round=round_number)
    message.tournament.id = tournament_id
    return message


def _result_change(tournament_id: str, game: tp.GameRecord) -> tp.TournamentChange:
    message = tp.TournamentChange(change="result", round=game.round, game=game)
    message.tournament.id = tournament_id
    return message
