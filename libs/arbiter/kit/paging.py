"""Page tokens: opaque text a service hands out with a page and reads back for the next one."""

from __future__ import annotations

import base64

from arbiter.kit.fields import TOKEN

# A page token longer than this is refused before it is decoded (the token rule of kit.fields).
MAX_PAGE_TOKEN_LENGTH = TOKEN.max_length


def token_bytes(token: str) -> bytes:
    """What a page token carries (urlsafe base64, padding optional); ValueError when it cannot be one of ours."""
    if len(token) > MAX_PAGE_TOKEN_LENGTH:
        raise ValueError(f"page token of {len(token)} characters")
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
