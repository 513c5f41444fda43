"""Merging stores (shards) and the store's index page."""
