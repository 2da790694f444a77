from __future__ import annotations

import sys

from smemctl.cli import main

sys.exit(main())
