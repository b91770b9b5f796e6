"""``python -m probes``: run the probe suite (see probes.harness.entry)."""

import sys

from probes.harness.entry import main

if __name__ == "__main__":
    sys.exit(main())
