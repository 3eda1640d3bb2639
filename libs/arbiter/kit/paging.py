"""Page tokens: opaque text a service hands out with a page and reads back for the next one."""

from __future__ import annotations

import base64
from typing import Final

# A page token longer than this is refused before it is decoded. Tokens that name a game id (the
# rating history's) grow with it: this leaves ids of several thousand characters room.
MAX_PAGE_TOKEN_LENGTH: Final = 8192


def token_bytes(token: str) -> bytes:
    """What a page token carries (urlsafe base64, padding optional); ValueError when it cannot be one of ours."""
    if len(token) > MAX_PAGE_TOKEN_LENGTH:
        raise ValueError(f"page token of {len(token)} characters")
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
