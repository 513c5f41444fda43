"""Bounds on what a command line or scenario may ask for (light: the parser imports it)."""

MAX_SEED = 2**63 - 1  # what every consumer of a seed (random.Random, Go, Java) can hold
MAX_COUNT = 64  # worker processes, and client threads per worker
MAX_SEEDS = 1_000  # runs per scenario and client; a typo of 10^9 should not plan for hours
BACKENDS: tuple[str, ...] = ("local", "compose")  # where the cluster runs (harness.backends)
DEFAULT_BACKEND = "local"
