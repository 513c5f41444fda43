"""Work in parallel: one run as a job in its own process, job slots, shards of a plan."""
