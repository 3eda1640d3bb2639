"""Creates keyed by a caller's request id (arbiter.kit.idempotency.create_once): once per request id, a racing
retry gets the first attempt's, a call without an id always creates, a malformed id is refused first."""

from __future__ import annotations

import asyncpg
import pytest

from arbiter.kit.errors import FailedPrecondition, InvalidArgument
from arbiter.kit.idempotency import create_once


class Store:
    """Rows by request id, as a table with UNIQUE (creator, request_id) keeps them."""

    def __init__(self) -> None:
        self.rows: dict[str, str] = {}
        self.creates = 0

    async def find(self, request_id: str) -> str | None:
        return self.rows.get(request_id)

    async def create(self, request_id: str) -> str:
        self.creates += 1
        if request_id in self.rows:
            raise asyncpg.UniqueViolationError("duplicate key value violates unique constraint")
        row = self.rows[request_id] = f"row-{self.creates}"
        return row


async def test_a_retry_gets_the_first_attempts_row_and_creates_nothing() -> None:
    store = Store()
    first = await create_once("r-1", lambda: store.find("r-1"), lambda: store.create("r-1"))
    again = await create_once("r-1", lambda: store.find("r-1"), lambda: store.create("r-1"))
    assert first == again == "row-1" and store.creates == 1


async def test_a_retry_racing_its_first_attempt_gets_the_first_attempts_row() -> None:
    store = Store()
    looks = []

    async def find_before_the_first_commits() -> str | None:
        looks.append(len(store.rows))
        return None if len(looks) == 1 else await store.find("r-1")

    async def first_attempt_commits_meanwhile() -> str:
        await store.create("r-1")
        return await store.create("r-1")  # the retry's own insert meets the unique key

    assert await create_once("r-1", find_before_the_first_commits, first_attempt_commits_meanwhile) == "row-1"
    assert looks == [0, 1]


async def test_a_refusal_with_nothing_made_under_the_id_is_raised() -> None:
    async def refused() -> str:
        raise FailedPrecondition("A-2: one live competition at a time")

    async def nothing() -> None:
        return None

    with pytest.raises(FailedPrecondition, match="A-2"):
        await create_once("r-2", nothing, refused)


async def test_without_a_request_id_every_call_creates_and_nothing_is_looked_up() -> None:
    store = Store()

    async def never() -> str | None:
        raise AssertionError("no request id: nothing to look up")

    made = [await create_once("", never, lambda n=n: store.create(f"anonymous-{n}")) for n in range(2)]
    assert made == ["row-1", "row-2"]


async def test_a_malformed_request_id_is_refused_before_anything_is_looked_up_or_made() -> None:
    store = Store()
    with pytest.raises(InvalidArgument, match="request_id"):
        await create_once("x" * 129, lambda: store.find("x"), lambda: store.create("x"))
    assert store.creates == 0
