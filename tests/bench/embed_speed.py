"""Builtin embedder throughput: batches of 32 typical sentences through MiniLM and the fallback.

Prints one line: for each embedder, the median ms per batch of 32 sentences (about 15 words) over
20 batches after a warm-up, the texts per second that median implies, and the median CPU ms per
batch (all threads), which other load on the machine does not inflate.
Target: MiniLM <= 50 ms per batch on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time

from smemd.fleet.builtin import Embedder, HashedEmbedder, MiniLM

BATCH = 32
_SUBJECTS = ["Alex", "The deploy script", "Our team lead", "The staging cluster", "My sister"]
_VERBS = ["mentioned that", "decided last week that", "keeps forgetting that", "wrote down that"]
_CLAUSES = [
    "the quarterly report is due on the second Friday of every month",
    "the database migration must run before the new API version ships",
    "she prefers tea over coffee when working late in the office",
    "the GPU node in rack three overheats whenever the fans are throttled",
    "we should book the flight to Seattle before prices go up again",
    "the recipe needs two eggs, a cup of flour and some butter",
]


def sentences(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_CLAUSES)}."
        for _ in range(count)
    ]


async def time_batches(embedder: Embedder, batches: int) -> tuple[list[float], list[float]]:
    await embedder.embed(sentences(BATCH, seed=-1))  # warm-up
    wall, cpu = [], []
    for index in range(batches):
        texts = sentences(BATCH, seed=index)
        started, started_cpu = time.perf_counter(), time.process_time()
        await embedder.embed(texts)
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return wall, cpu


def summary(name: str, samples: tuple[list[float], list[float]]) -> str:
    wall, cpu = (statistics.median(s) for s in samples)
    return f"{name} {wall:.1f} ms/batch {BATCH * 1000 / wall:.0f} texts/s cpu {cpu:.1f} ms/batch"


async def run(batches: int) -> str:
    minilm = await asyncio.to_thread(MiniLM)
    parts = [
        summary("minilm", await time_batches(minilm, batches)),
        summary("hashed", await time_batches(HashedEmbedder(), batches)),
    ]
    return f"embed_speed batch={BATCH} n={batches} | " + " | ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args()
    print(asyncio.run(run(args.batches)))


if __name__ == "__main__":
    main()
