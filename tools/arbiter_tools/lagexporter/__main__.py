"""`python -m arbiter_tools.lagexporter`: serve the broker's view of consumer lag until stopped."""

import sys

from arbiter_tools.lagexporter.main import main

sys.exit(main())
