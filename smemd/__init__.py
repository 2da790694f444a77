"""smemd: the smem daemon. Kept free of imports so `smemctl` can load `smemd.protocol` cheaply."""

import os
import warnings

__version__ = "0.1.0"

# asyncssh still imports cryptography's DSA classes to offer ssh-dss keys, which cryptography 51
# deprecates with a warning at import: a line on every daemon's and smemctl's stderr about a key
# type OpenSSH has disabled since 7.0 (the README's node key is Ed25519). Matched on the message
# and asyncssh's modules only, so any other deprecation still shows.
warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh\.")


def limit_blas_threads() -> None:
    """One BLAS thread per vector scan; call before numpy is first imported.

    A scan is memory-bound: a second BLAS thread only fights the SQLite reader thread and
    onnxruntime for two cores. Measured at 100k memories: engine p95 15.6 ms with one thread,
    23.4 ms with two.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
