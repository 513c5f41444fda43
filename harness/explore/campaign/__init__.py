"""The campaign: trials run and fed back, violations kept, replayed, shrunk, confirmed and
written, the record and the report."""
