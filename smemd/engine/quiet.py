"""How long the models have been left alone: dreaming waits for quiet before it uses them."""

from __future__ import annotations

import time


class QuietClock:
    """When the engine last used a model for somebody: a search, an ingest job."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def touch(self) -> None:
        self.last = time.monotonic()

    def quiet_for(self) -> float:
        return time.monotonic() - self.last
