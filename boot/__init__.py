"""Card and node bring-up and take-down as ordered, idempotent steps (used by smemd.cards, or alone)."""

from __future__ import annotations

from boot.context import Context, Timeouts
from boot.sequence import NodeReport, Outcome, down, run_all, status, up
from boot.steps import Step, StepDone, StepFailed
from boot.target import Target, targets_from_config

__all__ = [
    "Context",
    "NodeReport",
    "Outcome",
    "Step",
    "StepDone",
    "StepFailed",
    "Target",
    "Timeouts",
    "down",
    "run_all",
    "status",
    "targets_from_config",
    "up",
]
