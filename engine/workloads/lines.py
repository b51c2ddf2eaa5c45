"""The size of a generated trace's requests: one 64-byte line each (the granularity at which
operators are expanded and the cache filters them). Torch-free, so the simulator can say how
a generated trace's requests compare with a memory's request size without importing the
capture machinery."""

#: bytes of one request of a trace made by ``python main.py trace``
LINE_BYTES = 64
