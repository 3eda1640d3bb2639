"""The gRPC boundary refuses NUL characters in any string field, however deep (found by the fuzzer)."""

from __future__ import annotations

from arbiter.contracts import common_pb2, openings_pb2, rating_pb2, tournament_pb2
from arbiter.kit.fields import nul_field


def test_nul_is_found_in_plain_nested_and_repeated_fields() -> None:
    assert nul_field(openings_pb2.GetOpeningRequest(variant="italian", number=3)) is None
    assert nul_field(openings_pb2.GetOpeningRequest(variant="ital\x00ian")) == "variant"
    nested = tournament_pb2.JoinTournamentRequest(actor=common_pb2.Actor(player_id="a\x00b"), tournament_id="t")
    assert nul_field(nested) == "actor.player_id"
    repeated = rating_pb2.GetRatingsRequest(player_ids=["p1", "p\x002"], variant="italian")
    assert nul_field(repeated) == "player_ids"
    deep = tournament_pb2.CreateTournamentRequest(settings=tournament_pb2.TournamentSettings(name="x\x00"))
    assert nul_field(deep) == "settings.name"
