from __future__ import annotations

import sys

from smemd.main import main

sys.exit(main())
