"""The Docker Compose cluster backend: the same Cluster protocol as harness.cluster.local,
with one container per server (see README.md)."""
