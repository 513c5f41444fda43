"""One module per command, imported only when that command runs (`check` of a large
history should not pay for the cluster, the runner and the plots)."""
