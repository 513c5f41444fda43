"""Bounds the workload shares with the command line (light: the parser imports it)."""

MAX_COUNT = 64  # worker processes, and client threads per worker
