"""The store: run directories, the latest link, writability checks, garbage collection."""
