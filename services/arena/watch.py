"""Live changes of one arena: ArenaChange messages over the kit's Watch hub (arbiter.kit.watch).

Any replica may serve WatchArena for changes committed by another one.
"""

from __future__ import annotations

from arbiter.contracts import arena_pb2 as ap
from arbiter.kit import watch
from arbiter.kit.watch import FINAL_CHANGES as FINAL_CHANGES


class WatchHub(watch.WatchHub[ap.ArenaChange]):
    """Publishes and subscribes to ArenaChange messages, a channel per arena."""

    channel_prefix = "arena:watch:"
    message_type = ap.ArenaChange
    noun = "arena"

    async def publish(self, arena_id: str, change: str, *, player_id: str = "", game_id: str = "") -> None:
        """Announce a committed change; best effort (watchers re-read the state they are sent)."""
        message = ap.ArenaChange(change=change, player_id=player_id, game_id=game_id)
        message.arena.id = arena_id
        await self.publish_message(arena_id, message)
