"""Run an answer that is built a slice at a time over reactor turns, one build per question at a time.

A whole-table answer at a million topics is a second of one core (namesrv/routes/topiclists.py).
Built in one go it would hold the main process's reactor that long: every registration,
heartbeat and every route read a worker forwards (its replica being behind) would wait behind it.
Here its generator runs for at most ``budget`` seconds per reactor turn; what arrived meanwhile
is handled between two turns. Askers of the same question while it is being built wait for that
build rather than start another (an operator's script polling the topic list from ten hosts
costs one build). Java builds these under its route table's read lock, which holds every
registration for as long.
"""

import time

from twisted.internet import defer

#: seconds of building per reactor turn (a forwarded read or a heartbeat waits at most this long
#: behind one; 5 ms held a 600 KB registration's answer 86-107 ms: it is read over several turns)
TURN_BUDGET = 0.002


class SlicedAnswers:
    def __init__(self, reactor, budget=TURN_BUDGET, timer=time.perf_counter):
        self.reactor = reactor
        self.budget = budget
        self.timer = timer
        self._building = {}

    def run(self, key, make, at_once=False):
        """The result of the generator ``make()`` returns: the value itself when it finished in
        this turn's budget (or ``at_once``: a small table, built whatever the time), else a Deferred
        of it (an exception it raised: a failed Deferred, or raised here when it failed at once). A
        build of the same ``key`` in progress is joined."""
        waiting = self._building.get(key)
        if waiting is not None:
            answer = defer.Deferred()
            waiting.append(answer)
            return answer
        gen = make()
        done, value = self._step(gen, None if at_once else self.budget)
        if done:
            if isinstance(value, BaseException):
                raise value
            return value
        waiting = self._building[key] = []
        answer = defer.Deferred()
        waiting.append(answer)
        self.reactor.callLater(0, self._next_turn, key, gen)
        return answer

    def _step(self, gen, budget):
        """Advance ``gen`` for ``budget`` seconds (None: to its end): (finished?, its value or exception)."""
        deadline = None if budget is None else self.timer() + budget
        try:
            while True:
                next(gen)
                if deadline is not None and self.timer() >= deadline:
                    return False, None
        except StopIteration as finished:
            return True, finished.value
        except Exception as failed:  # handed to the askers, who answer it (SYSTEM_ERROR or a remark)
            return True, failed

    def _next_turn(self, key, gen):
        done, value = self._step(gen, self.budget)
        if not done:
            self.reactor.callLater(0, self._next_turn, key, gen)
            return
        for answer in self._building.pop(key):
            if isinstance(value, BaseException):
                answer.errback(value)
            else:
                answer.callback(value)
