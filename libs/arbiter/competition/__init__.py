"""Competition rules: formats, Berger tables, Swiss pairing, scoring, tie-breaks, creation."""
