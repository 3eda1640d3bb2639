"""Translation between the protobuf contracts and the openings library, refusing bad input for people."""

from __future__ import annotations

from typing import Literal, cast, overload

from arbiter.contracts import common_pb2, events_pb2
from arbiter.kit.errors import InvalidArgument
from arbiter.kit.fields import COMPETITION_ID, check_id
from arbiter.openings import OFFICIAL_OPENINGS, Opening
from arbiter.openings.modes import OpeningMode
from arbiter.openings.tables import variant_name
from services.openings.store import DrawKey, StoredDraw

_MODE_PREFIX = "OPENING_MODE_"
_KIND_PREFIX = "COMPETITION_KIND_"


def variant_of(text: str) -> str:
    """The engine's name of the requested variant; INVALID_ARGUMENT when missing or unknown."""
    if not text.strip():
        raise InvalidArgument("the variant is required, e.g. italian, english or international")
    return variant_name(text)


@overload
def mode_of(value: int, *, required: Literal[True] = True) -> OpeningMode: ...


@overload
def mode_of(value: int, *, required: bool) -> OpeningMode | None: ...


def mode_of(value: int, *, required: bool = True) -> OpeningMode | None:
    """The library's mode for a protobuf OpeningMode; INVALID_ARGUMENT when unknown (or missing if required)."""
    if value == common_pb2.OPENING_MODE_UNSPECIFIED:
        if required:
            raise InvalidArgument(f"the opening mode is required: {_mode_choices()} (O-1..O-9)")
        return None
    try:
        name = common_pb2.OpeningMode.Name(value)
    except ValueError:
        raise InvalidArgument(f"unknown opening mode {value}; the modes are {_mode_choices()} (O-1..O-9)") from None
    return OpeningMode(name.removeprefix(_MODE_PREFIX).lower())


def mode_to_proto(mode: OpeningMode | None) -> common_pb2.OpeningMode:
    """The protobuf OpeningMode for a library mode (UNSPECIFIED for None)."""
    if mode is None:
        return common_pb2.OPENING_MODE_UNSPECIFIED
    # protobuf's stubs type Value() as plain int: the cast names the enum it is.
    return cast(common_pb2.OpeningMode, common_pb2.OpeningMode.Value(_MODE_PREFIX + mode.value.upper()))


def thematic_of(value: int, mode: OpeningMode) -> int | None:
    """The chosen opening number of a thematic request (O-9); INVALID_ARGUMENT when it does not fit the mode."""
    if mode is OpeningMode.THEMATIC:
        if not 1 <= value <= OFFICIAL_OPENINGS:
            raise InvalidArgument(
                f"a thematic tournament plays one official opening, numbered 1..{OFFICIAL_OPENINGS}; got {value} (O-9)"
            )
        return value
    if value != 0:
        raise InvalidArgument(
            f"thematic_opening {value} is only for the thematic mode; mode {mode} ({mode.rule}) draws its openings"
        )
    return None


def draw_key_of(ref: common_pb2.CompetitionRef) -> DrawKey:
    """The draw key of a competition reference; INVALID_ARGUMENT for a missing kind or id or a bad round."""
    if ref.kind == common_pb2.COMPETITION_KIND_UNSPECIFIED:
        raise InvalidArgument("competition.kind is required: tournament, arena or casual")
    try:
        kind = common_pb2.CompetitionKind.Name(ref.kind).removeprefix(_KIND_PREFIX).lower()
    except ValueError:
        raise InvalidArgument(f"unknown competition kind {ref.kind}; use tournament, arena or casual") from None
    if not ref.id:
        raise InvalidArgument(f"competition.id is required: which {kind} is the opening for?")
    competition_id = check_id(ref.id, COMPETITION_ID, "competition.id")
    if kind == "tournament" and ref.round < 1:
        raise InvalidArgument(
            f"tournament {competition_id}: rounds are numbered from 1, got round {ref.round} (O-10)"
        )
    if ref.round < 0:
        raise InvalidArgument(f"{kind} {competition_id}: the round cannot be negative, got {ref.round}")
    return DrawKey(kind, competition_id, ref.round)


def draw_message(draw: StoredDraw) -> common_pb2.Opening:
    """The protobuf Opening of a stored draw (number 0 and no class for free and random moves)."""
    return common_pb2.Opening(
        variant=draw.variant, mode=mode_to_proto(draw.mode), number=draw.number or 0, moves=draw.moves,
        class_label=draw.class_label or "", level=draw.level or 0, fen=draw.fen, name=draw.name or "",
    )


def opening_message(opening: Opening, mode: OpeningMode | None = None) -> common_pb2.Opening:
    """The protobuf Opening of an official table entry."""
    return common_pb2.Opening(
        variant=opening.variant, mode=mode_to_proto(mode), number=opening.number, moves=opening.moves,
        class_label=opening.class_label, level=opening.level, fen=opening.fen_after, name=opening.name or "",
    )


def _mode_choices() -> str:
    return ", ".join(mode.value for mode in OpeningMode)


def drawn_event(draw: StoredDraw) -> events_pb2.OpeningDrawn:
    """The OpeningDrawn event of a new draw, for the play site and the audit trail (O-10)."""
    kind = getattr(common_pb2, f"{_KIND_PREFIX}{draw.key.kind.upper()}")
    return events_pb2.OpeningDrawn(
        competition_id=draw.key.competition_id,
        competition=common_pb2.CompetitionRef(kind=kind, id=draw.key.competition_id, round=draw.key.round),
        opening=draw_message(draw), no_repeat=draw.no_repeat,
    )
