"""The clock service's meta merge: taking a first event's meta whole gives what the field rules give."""

from __future__ import annotations

import itertools
import random

from arbiter.vocabulary import Side
from services.clock import operations as ops
from services.clock.clocked_game import ClockedGame, GameMeta, Kind


def metas(seed: int, count: int) -> list[GameMeta]:
    """Metas as events give them: time control fields only with a known kind."""
    rng = random.Random(seed)
    made = []
    for _ in range(count):
        kind = rng.choice(list(Kind))
        timed = kind is not Kind.UNKNOWN
        made.append(GameMeta(
            white_id=rng.choice(("", "w")), black_id=rng.choice(("", "b")),
            variant=rng.choice(("", "international", "english")), first=rng.choice((Side.WHITE, Side.BLACK)),
            competition_kind=rng.choice((0, 1)), competition_id=rng.choice(("", "t")), round=rng.choice((0, 2)),
            rated=rng.random() < 0.5, boost_allowed=rng.random() < 0.5, requested=rng.random() < 0.5, kind=kind,
            base_s=rng.choice((0.0, 60.0)) if timed else 0.0, increment_s=rng.choice((0.0, 1.0)) if timed else 0.0,
            tb_increment_days=rng.choice((0, 1)) if timed else 0, tb_bank_days=rng.choice((0, 2)) if timed else 0,
            guaranteed_time=rng.random() < 0.5 if timed else False,
        ))
    return made


def test_a_first_meta_taken_whole_equals_the_field_by_field_merge() -> None:
    taken_whole = 0
    for incoming in metas(7, 3000):
        record = ClockedGame("g")
        ops.merge_meta(record, incoming)
        reference = ClockedGame("g")
        ops._merge_fields(reference, reference.meta, incoming)
        assert record.meta == reference.meta, incoming
        taken_whole += record.meta is incoming
    assert taken_whole > 0


def test_a_second_meta_fills_only_what_is_missing() -> None:
    for first, second in itertools.islice(zip(metas(1, 500), metas(2, 500), strict=True), 500):
        record = ClockedGame("g")
        ops.merge_meta(record, first)
        ops.merge_meta(record, second)
        reference = ClockedGame("g")
        ops._merge_fields(reference, reference.meta, first)
        ops._merge_fields(reference, reference.meta, second)
        assert record.meta == reference.meta
