"""The route tables' deadline queue: the one in namesrv/deadlines.py (the controller's heartbeats use it too)."""

from namesrv.deadlines import DeadlineQueue

__all__ = ["DeadlineQueue"]
