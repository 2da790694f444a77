"""The vectors the ANN benchmarks read: LoCoMo dev's sentence-sized texts and its questions,
embedded with the builtin MiniLM and cached, padded past their count with noisy copies, and
the exact top-10 they are scored against (tests.bench.ann_choice, tests.bench.ann_recall)."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO / ".." / "shared" / "bench" / "locomo-dev.json"
K = 10
NOISE = 0.03  # per-dimension sigma of padding copies: cosine about 0.86 with the original
_SESSION = re.compile(r"session_(\d+)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])")


def texts_and_questions(
    path: Path, sentence_runs: tuple[int, ...] = ()
) -> tuple[list[str], list[str]]:
    """Deduplicated sentence-sized texts (first-seen order) and the distinct questions;
    `sentence_runs`: widths of runs of consecutive sentences of a session, also taken as texts."""
    seen: dict[str, None] = {}

    def put(text: str) -> None:
        text = " ".join(text.split())
        if len(text) >= 12:
            seen.setdefault(text, None)

    questions: dict[str, None] = {}
    for sample in json.loads(path.read_text()):
        talk = sample["conversation"]
        sessions = sorted(int(m.group(1)) for k in talk if (m := _SESSION.fullmatch(k)))
        for session in sessions:
            documents, said = [], []
            for turn in talk[f"session_{session}"]:
                doc = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    doc += f" [image: {turn['blip_caption']}]"
                    put(turn["blip_caption"])
                documents.append(doc)
                put(doc)
                sentences = _SENTENCE.split(turn["text"])
                for sentence in sentences if len(sentences) > 1 else ():
                    put(sentence)
                said += [f"{turn['speaker']}: {sentence}" for sentence in sentences]
            for width in (2, 3):  # chunks of consecutive turns
                for i in range(len(documents) - width + 1):
                    put(" ".join(documents[i : i + width]))
            for width in sentence_runs:
                for i in range(len(said) - width + 1):
                    put(" ".join(said[i : i + width]))
        for by_speaker in sample["observation"].values():
            for items in by_speaker.values():
                for item in items:
                    put(item[0])
        for summary in sample["session_summary"].values():
            put(summary)
            for sentence in _SENTENCE.split(summary):
                put(sentence)
        for by_speaker in sample["event_summary"].values():
            for speaker, items in by_speaker.items():
                if speaker != "date":
                    for item in items:
                        put(item)
        for qa in sample["qa"]:
            questions.setdefault(" ".join(str(qa["question"]).split()), None)
    texts = [t for t in seen if t not in questions]
    return texts, list(questions)


def embed(texts: list[str], kind: str, cache: Path) -> np.ndarray:
    """MiniLM rows for `texts`, from `cache` when the same texts were embedded before."""
    digest = hashlib.sha256("\n".join([kind, *texts]).encode()).hexdigest()[:16]
    path = cache / f"minilm-{kind}-{len(texts)}-{digest}.npy"
    if path.exists():
        return np.load(path)
    from smemd.fleet.builtin import load_embedder

    embedder = load_embedder()
    if embedder.is_fallback:
        raise SystemExit("MiniLM is not installed here: the hashed fallback would measure nothing")

    async def run() -> np.ndarray:
        # Batched by length: a batch is padded to its longest text.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        rows = []
        for i in range(0, len(order), 256):
            batch = [texts[j] for j in order[i : i + 256]]
            rows.append(await embedder.embed(batch, kind=kind))  # type: ignore[arg-type]
        matrix = np.empty((len(texts), rows[0].shape[1]), dtype=np.float32)
        matrix[order] = np.concatenate(rows)
        return matrix

    started = time.perf_counter()
    matrix = asyncio.run(run())
    print(f"# embedded {len(texts)} {kind} texts in {time.perf_counter() - started:.0f} s")
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, matrix)
    return matrix


def unit(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def padded(real: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """`real` followed by noisy copies of random real rows, `n` rows in all (float32, unit)."""
    if n <= len(real):
        return real[:n]
    out = np.empty((n, real.shape[1]), dtype=np.float32)
    out[: len(real)] = real
    for start in range(len(real), n, 100_000):
        stop = min(n, start + 100_000)
        parents = real[rng.integers(0, len(real), stop - start)]
        noise = rng.standard_normal(parents.shape, dtype=np.float32) * NOISE
        out[start:stop] = unit(parents + noise)
    return out


def exact_top(base: np.ndarray, queries: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """The exact top-K row numbers per query (float32 dot product), among `mask` rows if given."""
    best_scores = np.full((len(queries), K), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(queries), K), dtype=np.int64)
    for start in range(0, len(base), 50_000):
        scores = queries @ base[start : start + 50_000].T
        if mask is not None:
            scores[:, ~mask[start : start + 50_000]] = -np.inf
        scores = np.concatenate([best_scores, scores], axis=1)
        rows = np.concatenate(
            [
                best_rows,
                np.broadcast_to(
                    np.arange(start, start + scores.shape[1] - K),
                    (len(queries), scores.shape[1] - K),
                ),
            ],
            axis=1,
        )
        top = np.argpartition(-scores, K - 1, axis=1)[:, :K]
        best_scores = np.take_along_axis(scores, top, axis=1)
        best_rows = np.take_along_axis(rows, top, axis=1)
    return best_rows


def recall(found: list[np.ndarray], truth: np.ndarray) -> float:
    hits = sum(
        len(set(f[:K].tolist()) & set(t.tolist())) for f, t in zip(found, truth, strict=True)
    )
    return hits / truth.size


def data_arguments(parser: argparse.ArgumentParser) -> None:
    """--data, --cache, --sizes and --queries, as `real_vectors` reads them."""
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "smem-ann-cache"
    )
    parser.add_argument("--sizes", default="10000,25000,50000")
    parser.add_argument("--queries", type=int, default=1000)


def real_vectors(
    args: argparse.Namespace, sentence_runs: tuple[int, ...] = ()
) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
    """(texts, questions) as unit MiniLM rows, both shuffled, and the generator that did it."""
    texts, questions = texts_and_questions(args.data.resolve(), sentence_runs)
    rng = np.random.default_rng(17)
    texts = [texts[i] for i in rng.permutation(len(texts))]
    questions = [questions[i] for i in rng.permutation(len(questions))[: args.queries]]
    real = unit(embed(texts, "document", args.cache)).astype(np.float32)
    return real, unit(embed(questions, "query", args.cache)).astype(np.float32), rng
