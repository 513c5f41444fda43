"""The Docker Compose cluster backend: the same Cluster protocol as cluster.local,
with one container per server (compose/README.md)."""
