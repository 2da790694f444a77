"""Card and node bring-up and take-down as ordered, idempotent steps (filled in with the cards)."""
