"""One run: the cluster's backend and its start (tried twice), the binaries, the runner, its
log, console, progress, replay and recheck, and a finished run read back from its directory."""
