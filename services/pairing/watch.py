"""Live changes of one tournament: TournamentChange messages over the kit's Watch hub (arbiter.kit.watch).

Any replica may serve WatchTournament for changes committed by another one.
"""

from __future__ import annotations

from collections.abc import Sequence

from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit import watch
from arbiter.kit.watch import FINAL_CHANGES as FINAL_CHANGES


class WatchHub(watch.WatchHub[tp.TournamentChange]):
    """Publishes and subscribes to TournamentChange messages, a channel per tournament."""

    channel_prefix = "pairing:watch:"
    message_type = tp.TournamentChange
    noun = "tournament"

    async def publish(self, tournament_id: str, change: str, *, round_number: int = 0,
                      game: tp.GameRecord | None = None) -> None:
        """Announce a committed change; best effort (watchers re-read the state they are sent)."""
        message = _change(tournament_id, change, round_number)
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


def _change(tournament_id: str, change: str, round_number: int) -> tp.TournamentChange:
    message = tp.TournamentChange(change=change, round=round_number)
    message.tournament.id = tournament_id
    return message


def _result_change(tournament_id: str, game: tp.GameRecord) -> tp.TournamentChange:
    message = tp.TournamentChange(change="result", round=game.round)
    message.game.CopyFrom(game)
    message.tournament.id = tournament_id
    return message
