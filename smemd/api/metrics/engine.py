"""The engine's series: ingest (jobs by phase, phase seconds, jobs ended and retried, facts read,
reconcile decisions), recall (seconds by purpose and mode, results, the cross-encoder used or
not), the indexes (loaded by kind and state, loads), the store (its files, free space, the
writer's wait, faults) and dreaming (backlog, work done)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from smemd.api.metrics.families import counter, gauge, histogram, one
from smemd.engine.core import Engine
from smemd.store.opening import DATABASE_NAME
from smemd.store.records import OPEN_PHASES
from smemd.tallies import Tally

# What dreaming's progress counts, by its work: what it looked at, and what it did of that.
_DREAMT = {
    "typing": ("typing_asked", "typed"),
    "linking": ("links_looked", "linked"),
    "aliases": ("aliases_asked", "aliases_merged"),
    "inference": ("inference_looked", "inferred"),
}


class EngineCollector(Collector):
    def __init__(self, engine: Engine, state_dir: Path) -> None:
        self.engine = engine
        self.state_dir = state_dir
        self.open_jobs: dict[str, int] = {}  # by phase, as `refresh` last read them
        self.backlog: dict[str, int] = {}  # dreaming's, by work

    async def refresh(self) -> None:
        """Read what takes the store: the open jobs by phase, and dreaming's backlog."""
        engine = self.engine
        if not engine.store_open:
            return
        self.open_jobs = await engine.open_job_phases()
        untyped, unlinked, uninferred = await engine.dreamer.backlog()
        self.backlog = {"typing": untyped, "linking": unlinked, "inference": uninferred}

    def collect(self) -> Iterator[Metric]:
        yield from self._ingest()
        yield from self._recall()
        yield from self._store()
        yield from self._dreaming()

    def _ingest(self) -> Iterator[Metric]:
        worker = self.engine.worker
        yield gauge(
            "smem_ingest_jobs", "Ingest jobs open, by the phase they are in.", ["phase"],
            (([phase], self.open_jobs.get(phase, 0)) for phase in OPEN_PHASES),
        )  # fmt: skip
        yield histogram(
            "smem_ingest_phase_seconds", "Seconds one job spent in one phase.", ["phase"],
            worker.phase_seconds,
        )  # fmt: skip
        yield counter(
            "smem_ingest_jobs_ended", "Ingest jobs ended: done (the document written) or failed.",
            ["outcome"], worker.ended,
        )  # fmt: skip
        yield counter(
            "smem_ingest_retries", "Job attempts that failed and were tried again, by phase.",
            ["phase"], worker.retried,
        )  # fmt: skip
        yield counter(
            "smem_extracted_facts", "Facts read from documents, by the model or the rules.",
            ["reader"], worker.extracted,
        )  # fmt: skip
        yield counter(
            "smem_reconcile_decisions",
            "What reconciling decided for each new fact, and whether the model or the rules did.",
            ["decision", "by"], worker.decisions,
        )  # fmt: skip
        kept = (
            n for (decision, _), n in worker.decisions.counts.items() if decision != "duplicate"
        )
        yield counter(
            "smem_memories_written", "Memories written by ingest (every decision but duplicate).",
            [], _one(sum(kept)),
        )  # fmt: skip

    def _recall(self) -> Iterator[Metric]:
        recall, indexes = self.engine.recall, self.engine.indexes
        yield histogram(
            "smem_recall_seconds",
            "Seconds of one recall, by what it served (search, ask, compress, a profile's bucket,"
            " graph, forget; and a whole profile, plain or with buckets) and its mode.",
            ["purpose", "mode"], recall.latency,
        )  # fmt: skip
        yield counter(
            "smem_recall_results", "Results recall returned, by what it served.", ["purpose"],
            recall.results,
        )  # fmt: skip
        yield counter(
            "smem_recall_reranked", "Searches re-scored by the cross-encoder (yes) or not (no).",
            ["reranked"], recall.reranked,
        )  # fmt: skip
        yield gauge(
            "smem_index_namespaces",
            "Namespaces' indexes in memory, by kind and how their vectors are searched.",
            ["kind", "state"], ((list(key), n) for key, n in sorted(indexes.states().items())),
        )  # fmt: skip
        yield one("smem_index_loading", "Namespaces loading their indexes now.", indexes.loading)
        yield histogram(
            "smem_index_load_seconds", "Seconds one namespace's indexes took to load.", [],
            indexes.load_seconds,
        )  # fmt: skip

    def _store(self) -> Iterator[Metric]:
        kind, _, _ = self.engine.store_identity()
        writer_wait, faults = self.engine.store_tallies()
        if kind == "sqlite":
            database = self.state_dir / DATABASE_NAME
            for name, path in (("database", database), ("wal", Path(f"{database}-wal"))):
                with contextlib.suppress(OSError):
                    yield one(
                        f"smem_store_{name}_bytes", f"Bytes of the SQLite {name} file.",
                        os.stat(path).st_size,
                    )  # fmt: skip
        with contextlib.suppress(OSError):
            yield one(
                "smem_state_dir_free_bytes", "Free bytes on the state dir's file system.",
                shutil.disk_usage(self.state_dir).free,
            )  # fmt: skip
        yield histogram(
            "smem_store_writer_wait_seconds", "Seconds a write waited for the store's writer.", [],
            writer_wait,
        )  # fmt: skip
        yield counter(
            "smem_store_faults",
            "The store's faults: disk full, store unavailable, a statement stopped at its"
            " deadline (timed_out).",
            ["code"], faults,
        )  # fmt: skip

    def _dreaming(self) -> Iterator[Metric]:
        progress = self.engine.dreamer.progress
        yield gauge(
            "smem_dreaming_backlog", "Memories dreaming has still to look at, by work.", ["work"],
            (([work], n) for work, n in sorted(self.backlog.items())),
        )  # fmt: skip
        looked, done = Tally(), Tally()
        for work, (seen, made) in _DREAMT.items():
            looked.add(work, n=getattr(progress, seen))
            done.add(work, n=getattr(progress, made))
        yield counter(
            "smem_dreaming_looked", "What dreaming looked at (or asked the model), by work.",
            ["work"], looked,
        )  # fmt: skip
        yield counter(
            "smem_dreaming_done",
            "What dreaming did: memories typed, links made, aliases merged, inferences kept.",
            ["work"], done,
        )  # fmt: skip
        yield counter(
            "smem_dreaming_errors", "Dreaming steps that failed.", [], _one(progress.errors)
        )


def _one(n: int) -> Tally:
    tally = Tally()
    tally.add(n=n)
    return tally
