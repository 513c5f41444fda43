"""Error kinds and the exit codes they map to (Jepsen's convention)."""

from __future__ import annotations

EXIT_AS_EXPECTED = 0
EXIT_NOT_AS_EXPECTED = 1
EXIT_UNKNOWN = 2
EXIT_INTERRUPTED = 130  # stopped by Ctrl-C (or SIGTERM/SIGHUP): 128 + SIGINT, as shells say
EXIT_BAD_INPUT = 254
EXIT_INTERNAL = 255


class LockharnessError(Exception):
    """Base of the harness's own errors; carries the exit code the CLI uses."""

    exit_code = EXIT_INTERNAL


class BadInput(LockharnessError):
    """The user's input (scenario file, flag, history, environment) is unusable.

    The message names the file, the key and what is allowed. Raised before anything starts.
    """

    exit_code = EXIT_BAD_INPUT


class ClusterError(LockharnessError):
    """A server of the cluster did not start, answer or stop as it should."""

    exit_code = EXIT_INTERNAL
