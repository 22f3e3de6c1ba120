"""``python -m tools.stress``: the suite run again and again beside CPU and disk load (``make stress-test``)."""
