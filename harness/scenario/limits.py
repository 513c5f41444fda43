"""Bounds on what a command line or scenario may ask for (light: the parser imports it)."""

from lockharness.core.durations import duration_type
from lockharness.workloads.limits import MAX_COUNT as MAX_COUNT  # workers, threads per worker

MAX_RUN_NS = 168 * 3_600_000_000_000  # a week: the harness waits for the run in one timed wait
# A run's length, in a scenario's `duration` and in every duration flag of the command line
# (--duration, and explore's --budget and --shrink-budget): the same bounds both ways.
# At least 100 ms: a shorter run cannot finish a lock cycle (a worker's start alone takes
# longer), so `1ns` is a typo, not a run; the floor on cycles judges what is longer.
MIN_RUN_NS = 100_000_000
RunLength = duration_type("RunLength", positive=True, least=MIN_RUN_NS, most=MAX_RUN_NS)

MAX_SEED = 2**63 - 1  # what every consumer of a seed (random.Random, Go, Java) can hold
MAX_SEEDS = 1_000  # runs per scenario and client; a typo of 10^9 should not plan for hours
BACKENDS: tuple[str, ...] = ("local", "compose")  # where the cluster runs (harness.run.backends)
DEFAULT_BACKEND = "local"
# A Docker image the Compose backend may use instead of the ones built here (redis:7.4,
# for a user who can pull): Docker's reference grammar, [host[:port]/]name[:tag][@digest].
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_PATTERN = (
    rf"(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[a-z0-9]+:[a-f0-9]{32,})?"
)
IMAGE_RULE = "a Docker image, [host[:port]/]name[:tag][@digest], such as redis:7.4"

# A scenario's name becomes a directory of the store: one plain path component, never
# `.`/`..` (the store itself, or outside it) nor a name the store keeps for itself
# (docs/run-directory.md): `latest` (the link to the last run), `explore/` and `suites/`
# (explorations and suite records), `known/` and `corpus/` (what explore keeps for the next
# night), `index.html` (merge's page), `gw<N>/` (xdist workers).
RESERVED_NAMES = ("latest", "explore", "suites", "known", "corpus", "index.html", "gw<N>")
NAME_PATTERN = (
    r"(?!(?i:latest|explore|suites|known|corpus|index\.html|gw[0-9]+)\Z)"
    r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"
)
NAME_RULE = (
    "1 to 100 letters, digits, '.', '_' and '-', starting with a letter or digit, and not "
    "one the store keeps for itself (" + ", ".join(f"'{n}'" for n in RESERVED_NAMES) + ")"
)
