"""Standalone robustness tools: a TCP fuzzer, hostile peers and fault injection against `twistd namesrv`.

Run them from the repository root, e.g. ``python -m tools.fuzz --frames 100000``;
the tests in ``tests/fuzz`` and ``tests/robustness`` drive the same code with small numbers.
"""
