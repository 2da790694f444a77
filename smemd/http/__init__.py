"""What the HTTP faces share below them: what a route is (`route`), and origins and Host names as
the browser rules compare them (`origins`). The API (`smemd.api`), the console (`smemd.console`)
and the config import these; they import nothing of smemd."""
