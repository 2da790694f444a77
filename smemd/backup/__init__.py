"""Backups of a running daemon's state dir (a consistent snapshot) and their checked restore."""
