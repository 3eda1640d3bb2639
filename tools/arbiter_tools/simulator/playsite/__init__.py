"""The simulated play site (`router.PlaySite`), in layers: shared state, live games, instant results, the router.

Its public names are importable from the package as well as from their modules.
"""

from arbiter_tools.simulator.playsite.base import LiveGame, PlaySiteConfig, PlaySiteStats, SimulatorSettings
from arbiter_tools.simulator.playsite.instant import Release
from arbiter_tools.simulator.playsite.live import LONG_ABSENCE_SECONDS, SHORT_ABSENCE_SECONDS
from arbiter_tools.simulator.playsite.router import PlaySite

__all__ = [
    "LONG_ABSENCE_SECONDS", "SHORT_ABSENCE_SECONDS", "LiveGame", "PlaySite", "PlaySiteConfig", "PlaySiteStats",
    "Release", "SimulatorSettings",
]
