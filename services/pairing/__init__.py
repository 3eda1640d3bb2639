"""Pairing service: tournaments, entrants, rounds, pairings, standings (SPEC T-, A-, R-, O-10, O-11)."""
