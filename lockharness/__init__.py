"""lockharness: a Jepsen-style fault-injection harness for Redis distributed locks.

One import namespace. The repository keeps its layers as top-level folders (core/,
cluster/, compose/, workloads/, faults/, checker/, harness/); the package maps each into
``lockharness.<folder>`` (setup.py's package-dir mapping), so installed, the project adds
exactly one name to site-packages and sits beside any user's own ``core`` or ``harness``.
"""
