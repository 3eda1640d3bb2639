"""BrokerContact's bookkeeping (kit): since when news may be missing, through an outage and its grace."""

from __future__ import annotations

import math

import pytest

from arbiter.kit.contact import BrokerContact


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def never(timeout: float) -> bool:
    return False


def contact(clock: FakeClock) -> BrokerContact:
    return BrokerContact(never, interval=0.5, grace=5.0, time_source=clock)


def test_everything_is_heard_while_the_broker_answers() -> None:
    clock = FakeClock()
    watch = contact(clock)
    for _ in range(10):
        clock.now += 0.5
        watch.heard()
        assert watch.missing_since() is None


def test_news_is_missing_from_the_last_answer_through_the_outage_and_the_grace() -> None:
    clock = FakeClock()
    watch = contact(clock)
    watch.heard()
    last_answer = clock.now
    clock.now += 1.0
    watch.unanswered()
    assert watch.missing_since() == last_answer
    clock.now += 30.0
    watch.unanswered()
    assert watch.missing_since() == last_answer and watch.outages == 1
    watch.heard()  # back: the backlog of the outage is still on its way
    for _ in range(9):
        clock.now += 0.5
        watch.heard()
        assert watch.missing_since() == last_answer
    clock.now += 0.6
    watch.heard()
    assert watch.missing_since() is None


def test_a_hanging_ping_counts_as_an_outage_before_its_timeout() -> None:
    clock = FakeClock()
    watch = contact(clock)
    watch.heard()
    last_answer = clock.now
    clock.now += 1.4
    assert watch.missing_since() is None
    clock.now += 0.2
    assert watch.missing_since() == last_answer


def test_a_second_outage_holds_from_its_own_start() -> None:
    clock = FakeClock()
    watch = contact(clock)
    watch.unanswered()
    clock.now += 2
    watch.heard()
    clock.now += 10
    watch.heard()
    second = clock.now
    clock.now += 1
    watch.unanswered()
    assert watch.missing_since() == second and watch.outages == 2


@pytest.mark.parametrize(("interval", "grace"), [(0, 1), (-1, 1), (1, -0.5)])
def test_settings_out_of_range_are_refused(interval: float, grace: float) -> None:
    with pytest.raises(ValueError, match="interval"):
        BrokerContact(never, interval=interval, grace=grace)


def test_a_process_just_started_misses_everything_until_the_grace_after_its_first_answer() -> None:
    clock = FakeClock()
    watch = BrokerContact(never, interval=0.5, grace=5.0, time_source=clock, missing_at_start=True)
    assert watch.missing_since() == -math.inf
    clock.now += 1
    watch.heard()
    for _ in range(9):
        clock.now += 0.5
        watch.heard()
        assert watch.missing_since() == -math.inf
    clock.now += 0.6
    watch.heard()
    assert watch.missing_since() is None and watch.outages == 0


def test_a_stalled_consumer_holds_news_from_its_last_batch_through_its_recovery_and_the_grace() -> None:
    """A clock's moves consumer failing on lost Redis still holds moves it has not applied: no flag on them."""
    clock = FakeClock()
    watch = contact(clock)
    watch.heard()
    watch.handled("clock.game.move_made")
    last_batch = clock.now
    clock.now += 2.0
    watch.heard()
    watch.stalled("clock.game.move_made")
    for _ in range(20):  # the broker answers throughout: it is not the one missing
        clock.now += 0.5
        watch.heard()
        assert watch.missing_since() == last_batch
    watch.handled("clock.game.move_made")
    recovered = clock.now
    while clock.now < recovered + 5.0:
        assert watch.missing_since() == last_batch
        clock.now += 0.5
        watch.heard()
    assert watch.missing_since() is None


def test_the_earliest_stall_holds_and_the_other_consumers_batches_do_not_release_it() -> None:
    clock = FakeClock()
    watch = contact(clock)
    watch.heard()
    watch.handled("moves")
    moves_at = clock.now
    clock.now += 1.0
    watch.handled("lifecycle")
    watch.stalled("lifecycle")
    watch.stalled("moves")
    watch.stalled("moves")  # a batch failing again changes nothing
    clock.now += 1.0
    watch.heard()
    watch.handled("lifecycle")
    assert watch.missing_since() == moves_at
    watch.handled("moves")
    assert watch.missing_since() == moves_at


def test_a_consumer_stalled_before_its_first_batch_holds_everything_since_the_start() -> None:
    clock = FakeClock()
    watch = contact(clock)
    started = clock.now
    clock.now += 30.0
    watch.heard()
    watch.stalled("moves")
    assert watch.missing_since() == started


def test_a_broker_outage_and_a_stall_together_hold_from_the_earlier() -> None:
    clock = FakeClock()
    watch = contact(clock)
    watch.heard()
    watch.handled("moves")
    clock.now += 1.0
    watch.heard()
    broker_last = clock.now
    clock.now += 1.0
    watch.unanswered()
    assert watch.missing_since() == broker_last
    watch.stalled("moves")
    assert watch.missing_since() == broker_last - 1.0
