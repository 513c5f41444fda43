"""The bottom layer: what every other package shares and nothing of theirs it imports.

The history model (events, reading, writing), errors and exit codes, durations, Redis
endpoints and connections, Sentinel discovery, the clock shim and its control files, and
the live view of a run's history shards. Layers above, from the bottom: cluster
(the cluster backends), workloads (lock clients, the worker), faults (the nemesis),
checker (pure; the history model only), the scenario, then run/suite/reports/CLI
(tests/test_layers.py holds every import to this order).
"""
