"""smemctl: the admin CLI for smemd, over its Unix socket."""
