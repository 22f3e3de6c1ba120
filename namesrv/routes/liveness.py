"""The route tables' deadline queue: the one in namesrv/timing/deadlines.py (the controller's heartbeats use it too)."""

from namesrv.timing.deadlines import DeadlineQueue

__all__ = ["DeadlineQueue"]
