"""tests.support.polling: the one wait-until of the suite returns the first accepted value and names what failed."""

from __future__ import annotations

import pytest

from tests.support.polling import eventually, eventually_blocking


class Counter:
    """A condition that holds from its `holds_from`-th call on, counting calls."""

    def __init__(self, holds_from: int) -> None:
        self.calls = 0
        self.holds_from = holds_from

    def __call__(self) -> int:
        self.calls += 1
        return self.calls if self.calls >= self.holds_from else 0


async def test_eventually_returns_the_first_truthy_value_of_a_plain_or_async_condition() -> None:
    counter = Counter(3)
    assert await eventually(counter, every=0) == 3

    async def later() -> str:
        return "done" if counter() >= 5 else ""

    assert await eventually(later, every=0) == "done"


async def test_until_decides_which_value_is_awaited_even_a_falsy_one() -> None:
    counter = Counter(1)
    assert await eventually(counter, until=lambda n: n == 4, every=0) == 4
    assert await eventually(lambda: 0, until=lambda n: n == 0) == 0


async def test_a_condition_that_never_holds_fails_naming_what_and_the_last_value() -> None:
    with pytest.raises(AssertionError, match=r"not within 0\.05 s: the flag \(last seen: \[\]\)"):
        await eventually(lambda: [], "the flag", timeout=0.05, every=0.01)


async def test_without_what_the_failure_quotes_the_condition_as_written() -> None:
    with pytest.raises(AssertionError, match=r"lambda: \{\}\.get\('missing'\)"):
        await eventually(lambda: {}.get('missing'), timeout=0.05, every=0.01)


async def test_tolerated_errors_mean_not_yet_and_others_propagate() -> None:
    calls = []

    async def restarting() -> bool:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("restarting")
        return True

    assert await eventually(restarting, tolerate=(OSError,), every=0) is True
    with pytest.raises(ValueError):
        await eventually(lambda: int("x"), tolerate=(OSError,))
    with pytest.raises(AssertionError, match="ConnectionError"):
        await eventually(lambda: restarting_forever(), timeout=0.05, every=0.01, tolerate=(OSError,))


async def restarting_forever() -> bool:
    raise ConnectionError("still restarting")


def test_the_blocking_flavour_behaves_alike() -> None:
    assert eventually_blocking(Counter(2), every=0) == 2
    assert eventually_blocking(Counter(1), until=lambda n: n == 3, every=0) == 3
    with pytest.raises(AssertionError, match="the exporter's word"):
        eventually_blocking(lambda: "", "the exporter's word", timeout=0.05, every=0.01)
