"""Examples are scripts, not a package: their directory goes on sys.path as when one runs them."""

import sys
from pathlib import Path

EXAMPLES = Path(__file__).parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))
