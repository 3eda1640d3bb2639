"""Arena service: continuous re-pairing, cooldowns, streaks, boost, leaderboards (SPEC AR-1..AR-6)."""
