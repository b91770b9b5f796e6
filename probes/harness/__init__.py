"""The process harness: the probe's command line, workers, isolation, faults and the report."""
