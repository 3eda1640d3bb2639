"""Rating service: Glicko-2 per player, variant and speed (SPEC R-1..R-5)."""
