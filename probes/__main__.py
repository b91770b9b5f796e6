"""``python -m probes``: run the probe suite (see probes.entry)."""

import sys

from probes.entry import main

if __name__ == "__main__":
    sys.exit(main())
