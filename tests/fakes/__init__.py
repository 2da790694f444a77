"""Fakes of what smemd talks to, as real servers on loopback addresses."""
