"""The libraries compared for smem's vector index, each built, saved, loaded, searched plain and
filtered, and asked to remove a key: usearch, faiss (HNSW and IVF-PQ) and hnswlib."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tests.bench.ann_measuring import (
    Built,
    Case,
    Line,
    build_measured,
    costs,
    filtered_scores,
    first_queries,
    optional,
    speed,
    timed,
)
from tests.bench.ann_vectors import K, recall

RESCORE = 40  # i8 candidates re-ranked on float16 vectors
OVERFETCH = 400  # usearch has no predicate in Python: fetch 400, keep those in the subset


# --- usearch --------------------------------------------------------------------------------


def run_usearch(
    case: Case, work: Path, dtype: str, m: int, efs: list[int], threads: int
) -> Iterator[Line]:
    from usearch.index import Index

    def make() -> Any:
        index = Index(
            ndim=case.base.shape[1], metric="cos", dtype=dtype, connectivity=m, expansion_add=128
        )
        index.add(np.arange(case.n, dtype=np.uint64), case.base, threads=threads)
        return index

    index, build_s, rss_mb = build_measured(make)
    mem_mb = index.memory_usage / 2**20
    path = work / f"usearch-{dtype}-{m}-{case.n}.usearch"
    started = time.perf_counter()
    index.save(str(path))
    save_s = time.perf_counter() - started
    started = time.perf_counter()
    viewed = Index.restore(str(path), view=True)
    load_view_s = time.perf_counter() - started
    started = time.perf_counter()
    loaded = Index.restore(str(path))
    load_s = time.perf_counter() - started
    assert viewed is not None and loaded is not None and len(loaded) == case.n
    del viewed, loaded
    built = Built(
        build_s,
        mem_mb,
        rss_mb,
        save_s,
        load_s,
        load_view_s,
        path.stat().st_size / 2**20,
        _usearch_remove(index, case),
    )
    path.unlink()

    # Over-fetch does not depend on expansion_search: usearch searches with max(expansion, count).
    mask = case.mask

    def over(q: np.ndarray) -> np.ndarray:
        keys = index.search(q, OVERFETCH, threads=1).keys.astype(np.int64)
        return keys[mask[keys]][:K]

    f = timed(over, case.queries, 1)
    for ef in efs:
        index.expansion_search = ef
        t = timed(lambda q: index.search(q, K, threads=1).keys, case.queries, case.repeats)
        yield Line(
            {
                "lib": "usearch",
                "dtype": dtype,
                "M": m,
                "ef": ef,
                "n": case.n,
                "real": case.real,
                "recall@10": recall(t.results, case.truth),
                **speed(case, t),
                **costs(built),
                "filter": f"overfetch{OVERFETCH}",
                **filtered_scores(case, f),
            }
        )
    if dtype != "i8":
        return
    # i8 codes cap recall whatever the expansion: fetch RESCORE and re-rank them on float16
    # vectors, which smem keeps anyway (FlatIndex gathers from float16 past 20k rows).
    full = case.half()

    def rescored(keys: np.ndarray) -> np.ndarray:
        return keys[np.argsort(-(full[keys].astype(np.float32) @ current[0]))][:K]

    current = [case.queries[0]]

    def plain(q: np.ndarray) -> np.ndarray:
        current[0] = q
        return rescored(index.search(q, RESCORE, threads=1).keys.astype(np.int64))

    def over_rescored(q: np.ndarray) -> np.ndarray:
        current[0] = q
        keys = index.search(q, OVERFETCH, threads=1).keys.astype(np.int64)
        return rescored(keys[mask[keys]][: 4 * K])

    f = timed(over_rescored, case.queries, 1)
    for ef in efs:
        index.expansion_search = ef
        t = timed(plain, case.queries, case.repeats)
        yield Line(
            {
                "lib": "usearch",
                "dtype": dtype,
                "M": m,
                "ef": ef,
                "rescore": f"f16x{RESCORE}",
                "n": case.n,
                "real": case.real,
                "recall@10": recall(t.results, case.truth),
                **speed(case, t),
                **costs(built),
                "filter": f"overfetch{OVERFETCH}",
                **filtered_scores(case, f),
            }
        )


def _usearch_remove(index: Any, case: Case) -> str:
    """Remove the top hit of a query, check it is gone, re-add it, check it is back."""
    q = case.queries[0]
    key = int(index.search(q, K, threads=1).keys[0])
    index.remove(key)
    gone = key not in index.search(q, K, threads=1).keys.tolist()
    index.add(key, case.base[key], threads=1)
    back = key in index.search(q, K, threads=1).keys.tolist()
    return "yes" if gone and back else f"broken(gone={gone},back={back})"


# --- faiss ----------------------------------------------------------------------------------


def _faiss_files(index: Any, path: Path) -> tuple[float, float, float | str, float]:
    faiss = optional("faiss")
    started = time.perf_counter()
    faiss.write_index(index, str(path))
    save_s = time.perf_counter() - started
    started = time.perf_counter()
    loaded = faiss.read_index(str(path))
    load_s = time.perf_counter() - started
    del loaded
    load_view_s: float | str
    try:
        started = time.perf_counter()
        viewed = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
        load_view_s = time.perf_counter() - started
        del viewed
    except RuntimeError:
        load_view_s = "no"
    size = path.stat().st_size / 2**20
    path.unlink()
    return save_s, load_s, load_view_s, size


def _faiss_remove(index: Any, case: Case, search: Callable[[np.ndarray], np.ndarray]) -> str:
    q = case.queries[0]
    key = int(search(q)[0])
    try:
        index.remove_ids(np.array([key], dtype=np.int64))
    except RuntimeError:
        return "no"
    gone = key not in search(q).tolist()
    index.add_with_ids(case.base[key : key + 1], np.array([key], dtype=np.int64))
    back = key in search(q).tolist()
    return "yes" if gone and back else f"broken(gone={gone},back={back})"


def _bitmap(mask: np.ndarray) -> Any:
    faiss = optional("faiss")
    bits = np.packbits(mask, bitorder="little")
    selector = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bits))
    selector.referenced = bits  # the selector holds a raw pointer: keep the bytes alive
    return selector


def run_faiss_hnsw(case: Case, work: Path, m: int, efs: list[int], threads: int) -> Iterator[Line]:
    faiss = optional("faiss")
    d = case.base.shape[1]

    def make() -> Any:
        faiss.omp_set_num_threads(threads)
        inner = faiss.IndexHNSWFlat(d, m, faiss.METRIC_INNER_PRODUCT)
        inner.hnsw.efConstruction = 128
        index = faiss.IndexIDMap2(inner)
        index.add_with_ids(case.base, np.arange(case.n, dtype=np.int64))
        faiss.omp_set_num_threads(1)
        return index

    def ready(index: Any) -> None:
        faiss.downcast_index(index.index).hnsw.efSearch = 64

    index, plain, built = _faiss_built(make, work / f"faiss-hnsw-{case.n}.faiss", case, ready)
    inner = faiss.downcast_index(index.index)
    selector = _bitmap(case.mask)
    for ef in efs:
        inner.hnsw.efSearch = ef
        params = faiss.SearchParametersHNSW(efSearch=ef, sel=selector)
        t = timed(plain, case.queries, case.repeats)
        f = timed(_filtered_search(index, params), case.queries, 1)
        yield Line(
            {
                "lib": "faiss",
                "index": "HNSWFlat",
                "M": m,
                "ef": ef,
                "n": case.n,
                "real": case.real,
                "recall@10": recall(t.results, case.truth),
                **speed(case, t),
                **costs(built),
                "filter": "IDSelectorBitmap",
                **filtered_scores(case, f),
            }
        )


def run_faiss_ivfpq(
    case: Case, work: Path, refine: str, nprobes: list[int], k_factor: int, threads: int
) -> Iterator[Line]:
    faiss = optional("faiss")
    d = case.base.shape[1]
    nlist = int(4 * np.sqrt(case.n))
    pq_m = 48  # 8-dimension sub-vectors, 48 bytes a code

    def make() -> Any:
        faiss.omp_set_num_threads(threads)
        quantizer = faiss.IndexFlatIP(d)
        ivf = faiss.IndexIVFPQ(quantizer, d, nlist, pq_m, 8, faiss.METRIC_INNER_PRODUCT)
        ivf.own_fields = True
        quantizer.this.disown()
        ivf.cp.min_points_per_centroid = 5  # a 10k set has under 39 points a list
        # 10 k-means iterations, not 25, and 30 training points a list: keeps the 1M build
        # inside the time box (the effect on recall is not measured).
        ivf.cp.niter = 10
        sample = case.base[
            np.random.default_rng(1).permutation(case.n)[: max(256 * 39, min(case.n, 30 * nlist))]
        ]
        ivf.train(sample)
        if refine == "flat":
            index = faiss.IndexRefineFlat(ivf)
        else:
            codes = faiss.IndexScalarQuantizer(
                d, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
            )
            codes.train(sample)  # IndexRefine.train would train the IVF a second time
            index = faiss.IndexRefine(ivf, codes)
            codes.this.disown()
        index.own_fields = True
        ivf.this.disown()
        index.k_factor = k_factor
        index.add(case.base)  # ids are row numbers 0..n-1, the keys smem uses
        faiss.omp_set_num_threads(1)
        return index

    def ready(index: Any) -> None:
        faiss.downcast_index(index.base_index).nprobe = 16

    index, plain, built = _faiss_built(make, work / f"faiss-ivfpq-{case.n}.faiss", case, ready)
    ivf = faiss.downcast_index(index.base_index)
    selector = _bitmap(case.mask)
    for nprobe in nprobes:
        ivf.nprobe = nprobe
        params = faiss.IndexRefineSearchParameters(
            k_factor=k_factor,
            base_index_params=faiss.SearchParametersIVF(nprobe=nprobe, sel=selector),
        )
        t = timed(plain, case.queries, case.repeats)
        f = timed(_filtered_search(index, params), case.queries, 1)
        yield Line(
            {
                "lib": "faiss",
                "index": f"IVF{nlist},PQ{pq_m}+refine_{refine}",
                "kf": k_factor,
                "nprobe": nprobe,
                "n": case.n,
                "real": case.real,
                "recall@10": recall(t.results, case.truth),
                **speed(case, t),
                **costs(built),
                "filter": "IDSelectorBitmap",
                **filtered_scores(case, f),
            }
        )


def _faiss_built(
    make: Callable[[], Any], path: Path, case: Case, ready: Callable[[Any], None]
) -> tuple[Any, Callable[[np.ndarray], np.ndarray], Built]:
    """A faiss index built, saved and loaded again, with what that cost and its plain search;
    `ready` sets the search-time setting its removal is timed at."""
    index, build_s, rss_mb = build_measured(make)
    mem_mb = _faiss_bytes(index) / 2**20
    save_s, load_s, load_view_s, file_mb = _faiss_files(index, path)
    ready(index)

    def plain(q: np.ndarray) -> np.ndarray:
        return index.search(q[None, :], K)[1][0]

    remove = _faiss_remove(index, case, plain)
    return (
        index,
        plain,
        Built(build_s, mem_mb, rss_mb, save_s, load_s, load_view_s, file_mb, remove),
    )


def _faiss_bytes(index: Any) -> int:
    faiss = optional("faiss")
    return int(faiss.serialize_index(index).size)


def _kept(ids: np.ndarray) -> np.ndarray:
    return ids[ids >= 0]


def _filtered_search(index: Any, params: Any) -> Callable[[np.ndarray], Any]:
    return lambda q: _kept(index.search(q[None, :], K, params=params)[1][0])


# --- hnswlib --------------------------------------------------------------------------------


def run_hnswlib(case: Case, work: Path, m: int, efs: list[int], threads: int) -> Iterator[Line]:
    hnswlib = optional("hnswlib")
    d = case.base.shape[1]

    def make() -> Any:
        index = hnswlib.Index(space="ip", dim=d)
        index.init_index(max_elements=case.n, M=m, ef_construction=128, allow_replace_deleted=True)
        index.add_items(case.base, np.arange(case.n), num_threads=threads)
        return index

    index, build_s, rss_mb = build_measured(make)
    path = work / f"hnswlib-{m}-{case.n}.bin"
    started = time.perf_counter()
    index.save_index(str(path))
    save_s = time.perf_counter() - started
    started = time.perf_counter()
    loaded = hnswlib.Index(space="ip", dim=d)
    loaded.load_index(str(path), max_elements=case.n, allow_replace_deleted=True)
    load_s = time.perf_counter() - started
    del loaded
    file_mb = path.stat().st_size / 2**20
    path.unlink()
    index.set_num_threads(1)
    index.set_ef(64)

    def plain(q: np.ndarray) -> np.ndarray:
        return index.knn_query(q, k=K, num_threads=1)[0][0]

    q = case.queries[0]
    key = int(plain(q)[0])
    index.mark_deleted(key)
    gone = key not in plain(q).tolist()
    index.add_items(case.base[key : key + 1], [key], replace_deleted=True)
    back = key in plain(q).tolist()
    remove = "yes" if gone and back else f"broken(gone={gone},back={back})"
    built = Built(build_s, file_mb, rss_mb, save_s, load_s, "no", file_mb, remove)
    mask = case.mask
    for ef in efs:
        index.set_ef(ef)
        t = timed(plain, case.queries, case.repeats)
        # The filter is a Python callable per visited node: real, but slow by construction.
        f = timed(
            lambda q: index.knn_query(q, k=K, num_threads=1, filter=lambda i: bool(mask[i]))[0][0],
            case.queries[:200],
            1,
        )
        yield Line(
            {
                "lib": "hnswlib",
                "dtype": "f32",
                "M": m,
                "ef": ef,
                "n": case.n,
                "real": case.real,
                "recall@10": recall(t.results, case.truth),
                **speed(case, t),
                **costs(built),
                "filter": "callback",
                **filtered_scores(first_queries(case, 200), f),
            }
        )
