"""DRAM simulation engine: DRAMsim3-compatible, cycle-accurate, numba-compiled.

Nothing in this package imports Qt: the GUI and the command line are two clients of it.
"""
