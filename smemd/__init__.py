"""smemd: the smem daemon. Kept free of imports so `smemctl` can load `smemd.protocol` cheaply."""

__version__ = "0.1.0"
