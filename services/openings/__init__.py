"""Openings service: the nine opening modes and the official tables (SPEC O-1..O-11, R-4)."""
