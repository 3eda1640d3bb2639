"""Openings: the official italian and english tables, and the draw of each round's opening (O-1..O-11, R-4).

Pure and stdlib-only apart from the project's own rules engine (`arbiter.draughts`),
which plays the random-move openings. The openings service calls `draw_opening`
(seeded with the competition and round, passing the numbers already drawn in a Swiss),
`load_table`/`eligible`/`get_opening` to list, and `rating_allowed` for R-4.
"""

from arbiter.openings.draw import DrawnOpening, Seed, draw_opening, initial_fen, random_opening
from arbiter.openings.fairness import RatingCheck, check_mode, max_opening_level, playable_modes, rating_allowed
from arbiter.openings.modes import MAX_OPENING_LEVEL, PARI_LEVEL, OpeningMode
from arbiter.openings.tables import (
    OFFICIAL_OPENINGS,
    TABLE_VARIANTS,
    Opening,
    OpeningError,
    OpeningTable,
    eligible,
    get_opening,
    has_table,
    load_table,
)

__all__ = [
    "MAX_OPENING_LEVEL",
    "OFFICIAL_OPENINGS",
    "PARI_LEVEL",
    "TABLE_VARIANTS",
    "DrawnOpening",
    "Opening",
    "OpeningError",
    "OpeningMode",
    "OpeningTable",
    "RatingCheck",
    "Seed",
    "check_mode",
    "draw_opening",
    "eligible",
    "get_opening",
    "has_table",
    "initial_fen",
    "load_table",
    "max_opening_level",
    "playable_modes",
    "random_opening",
    "rating_allowed",
]
