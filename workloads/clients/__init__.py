"""The built-in lock clients, one module each (or a family per module). A class in a module
here that declares its own ``name`` is a client: workloads/registry.py finds it here."""
