"""The harness starts the broker and the changefeed server the way the demo does (examples/services.py);
examples are scripts, not a package, so their directory goes on sys.path."""

import sys
from pathlib import Path

EXAMPLES = Path(__file__).parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))
