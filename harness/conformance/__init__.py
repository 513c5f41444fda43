"""`lockharness client-check`: a lock-client program's conformance to the protocol of
docs/client-protocol.md, step by step (steps.py), driven as the worker drives it
(driver.py), against a live cluster."""
