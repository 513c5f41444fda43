"""Generating trials: the fault model and its trial dimensions, drawing, mutating, aiming at
leases, what fits the model, coverage."""
