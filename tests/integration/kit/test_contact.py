"""BrokerContact on a real broker (kit): a paused broker is noticed, and news is held for the grace after."""

from __future__ import annotations

import asyncio
import signal
import time

from faststream.kafka import KafkaBroker

from arbiter.devstack.chaos import paused
from arbiter.devstack.infra import start_tansu
from arbiter.devstack.processes import free_port
from arbiter.kit.contact import BrokerContact


async def wait_for(predicate, timeout: float) -> float:
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"not within {timeout} s")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def test_a_paused_broker_holds_decisions_on_silence_until_the_grace_after_it_is_back(tmp_path) -> None:
    # A broker of its own: pausing the session's one would stall every other test's consumers.
    port = free_port()
    tansu = start_tansu(port, tmp_path / "tansu.log")
    broker = KafkaBroker(f"127.0.0.1:{port}")
    stop = asyncio.Event()
    try:
        await broker.connect()
        contact = BrokerContact(broker.ping, interval=0.2, grace=1.0)
        task = asyncio.create_task(contact.run(stop))
        await asyncio.sleep(0.5)
        assert contact.missing_since() is None and contact.outages == 0
        before_pause = time.monotonic()
        with paused(tansu):
            noticed = await wait_for(lambda: contact.missing_since() is not None, 3.0)
            missing_from = contact.missing_since()
            assert missing_from is not None and missing_from <= before_pause + 0.01
            await asyncio.sleep(1.0)
            assert contact.missing_since() == missing_from
        resumed = time.monotonic()
        await wait_for(lambda: contact.missing_since() is None, 10.0)
        # Released only after the grace that follows the broker's first answer.
        assert time.monotonic() - resumed >= contact.grace
        assert contact.outages == 1 and noticed < 3.0
        stop.set()
        await task
    finally:
        stop.set()
        await broker.stop()
        tansu.stop(signal.SIGINT)
