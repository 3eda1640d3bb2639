"""Arbiter: the competition backend of a draughts play site."""
