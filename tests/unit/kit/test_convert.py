"""The shared contract translations of arbiter.kit.convert."""

from __future__ import annotations

from arbiter.contracts import common_pb2 as common
from arbiter.kit.convert import termination_name


def test_a_known_termination_keeps_its_name_and_an_unknown_one_is_unspecified() -> None:
    """A newer play site's ending must not make a result unreadable (proto3 lets any number through)."""
    assert termination_name(common.TERMINATION_RESIGNATION) == "TERMINATION_RESIGNATION"
    assert termination_name(common.TERMINATION_UNSPECIFIED) == "TERMINATION_UNSPECIFIED"
    assert termination_name(999) == "TERMINATION_UNSPECIFIED"
