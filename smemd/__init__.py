"""smemd: the smem daemon. Kept free of imports so `smemctl` can load `smemd.protocol` cheaply."""

import os

__version__ = "0.1.0"


def limit_blas_threads() -> None:
    """One BLAS thread per vector scan; call before numpy is first imported.

    A scan is memory-bound: a second BLAS thread only fights the SQLite reader thread and
    onnxruntime for two cores. Measured at 100k memories: engine p95 15.6 ms with one thread,
    23.4 ms with two.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
