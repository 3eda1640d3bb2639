"""BrokerContact on a real broker (kit): a paused broker is noticed, and news is held for the grace after."""

from __future__ import annotations

import asyncio
import signal
import time

from faststream.kafka import KafkaBroker

from arbiter.kit.contact import BrokerContact
from arbiter_tools.chaos import paused
from arbiter_tools.devstack.infra import start_tansu
from arbiter_tools.devstack.processes import free_port
from tests.support.polling import eventually


async def test_a_paused_broker_holds_decisions_on_silence_until_the_grace_after_it_is_back(tmp_path) -> None:
    # A broker of its own: pausing the session's one would stall every other test's consumers.
    port = free_port()
    tansu = start_tansu(port, tmp_path / "tansu.log")
    broker = KafkaBroker(f"127.0.0.1:{port}")
    stop = asyncio.Event()
    try:
        await broker.connect()
        # Missing until a first answer and its grace: the wait below is for a real contact.
        contact = BrokerContact(broker.ping, interval=0.2, grace=1.0, missing_at_start=True)
        task = asyncio.create_task(contact.run(stop))
        await eventually(lambda: contact.missing_since() is None, "the first contact")
        assert contact.outages == 0
        before_pause = time.monotonic()
        with paused(tansu):
            await eventually(lambda: contact.missing_since() is not None, "the pause noticed")
            missing_from = contact.missing_since()
            assert missing_from is not None and missing_from <= before_pause + 0.01
            await asyncio.sleep(1.0)
            assert contact.missing_since() == missing_from
        resumed = time.monotonic()
        await eventually(lambda: contact.missing_since() is None, "the broker's return noticed")
        # Released only after the grace that follows the broker's first answer.
        assert time.monotonic() - resumed >= contact.grace
        assert contact.outages == 1
        stop.set()
        await task
    finally:
        stop.set()
        await broker.stop()
        tansu.stop(signal.SIGINT)
