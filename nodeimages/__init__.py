"""What goes onto each VCA node's OS image (filled in with the cards)."""
