"""The VCA 2 cards: driving vcactl, bringing nodes up and down, and watching them over ssh."""
