"""The built-in fault kinds, one module each: a kind is its file (faults/base.py says what
it declares). faults.registry imports every module here; adding one registers its kind."""
