"""Run an answer that is built a slice at a time over reactor turns, one build per question at a time.

A whole-table answer at a million topics is a second of one core (namesrv/routes/topiclists.py).
Built in one go it would hold the main process's reactor that long: every registration,
heartbeat and every route read a worker forwards (its replica being behind) would wait behind it.
Here its generator is a job of the process's scheduler (namesrv/timing/scheduler.py, ``BULK``):
a slice per step, what arrived meanwhile handled between two turns. Askers of the same question
while it is being built wait for that build rather than start another (an operator's script
polling the topic list from ten hosts costs one build). Java builds these under its route table's
read lock, which holds every registration for as long.
"""

from twisted.internet import defer

from namesrv.timing.scheduler import BULK


class SlicedAnswers:
    def __init__(self, scheduler):
        self.scheduler = scheduler
        self._building = {}

    def run(self, key, make, at_once=False):
        """The result of the generator ``make()`` returns: the value itself when it took one step (a
        kept body) or ``at_once`` (a small table, built whatever the time), an exception it raised
        then raised here; else a Deferred of it (or of what it raised), the rest of it built by the
        scheduler. A build of the same ``key`` in progress is joined."""
        waiting = self._building.get(key)
        if waiting is not None:
            answer = defer.Deferred()
            waiting.append(answer)
            return answer
        gen = make()
        while True:
            try:
                next(gen)
            except StopIteration as finished:
                return finished.value
            if not at_once:
                break
        answer = defer.Deferred()
        self._building[key] = [answer]
        self.scheduler.cooperate(self._build(key, gen), BULK, "whole-table answer")
        return answer

    def _build(self, key, gen):
        """The job: the rest of ``gen``'s steps, then its value (or what it raised) to every asker."""
        try:
            value = yield from gen
        except Exception as failed:  # handed to the askers, who answer it (SYSTEM_ERROR or a remark)
            value = failed
        for answer in self._building.pop(key):
            if isinstance(value, BaseException):
                answer.errback(value)
            else:
                answer.callback(value)
