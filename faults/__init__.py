"""The nemesis: fault injection (process, network, clock). Fault kinds arrive one class each."""
