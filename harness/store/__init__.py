"""The store: run directories, the latest link, writability checks, garbage collection and
pruning old nights, compacted trials, and what explore keeps between nights (the failure
database, the corpora)."""
