"""A store that cannot be used as configured (a wrong password, a missing extension, a server
too old): the operator must change something, so the daemon exits 2 instead of retrying."""


class StoreRefused(Exception):
    pass
