"""Who is told when the route tables change, and when.

Kept apart from the tables so that it survives a reset of them (a snapshot restore, a
replica's full copy) and can be tested alone. Two kinds of followers:

- listeners, ``callback()`` after any change a read could see (the answer cache, the read
  workers' publisher): called once per operation, when it ends, however many tables it
  touched;
- topic trackers (a set with a ``full`` flag, e.g. readworkers.main.publisher.TopicTracker): every
  topic whose QueueData or static-topic mapping changes is added; a reset of all tables
  sets ``full`` instead.
"""


class RouteChanges:
    """The change notifications of one RouteInfoManager."""

    def __init__(self):
        self.listeners = []
        self.trackers = []
        #: bumped at every notification (cheap "did anything change since" checks, e.g. the status page)
        self.generation = 0
        self._depth = 0        # > 0 inside an operation: notify once, when it ends
        self._pending = False

    def add_listener(self, callback):
        self.listeners.append(callback)

    def track(self, tracker):
        self.trackers.append(tracker)
        return tracker

    def topics_changed(self, topics):
        for tracker in self.trackers:
            tracker.update(topics)

    def everything_changed(self):
        for tracker in self.trackers:
            tracker.full = True
        self.changed()

    def begin(self):
        self._depth += 1

    def end(self):
        """Leave an operation; the outermost one notifies if anything changed inside it."""
        self._depth -= 1
        if self._depth == 0 and self._pending:
            self._pending = False
            self.changed()

    def changed(self):
        if self._depth:
            self._pending = True
            return
        self.generation += 1
        for callback in self.listeners:
            callback()
