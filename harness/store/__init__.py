"""The store: run directories, the latest link, writability checks, garbage collection, the
failure database (known failures, replayed first by explore)."""
