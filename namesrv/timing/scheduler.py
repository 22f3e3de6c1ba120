"""One scheduler per process for the work that runs across reactor turns, a step at a time.

Some work is too long for one reactor turn: registrations and admin requests waiting their
turn behind route reads (the isolation dispatcher), a read worker's clients' pipelined reads,
a whole-table answer at a million topics, a status-page search, a replica being published
(main process) or applied (read worker). Each is a *job*: a generator that yields after each
step. The scheduler runs the jobs' steps in one call per reactor turn, for at most ``budget()``
seconds (``schedulerTurnBudgetMillis``), then gives the reactor back, so the sockets are read
between two turns whatever runs. The longest turn is the budget plus the one step that began
before it ran out (tests/dispatch/test_scheduler.py drives several jobs at once to show it).

Priorities say who goes first in a turn: ``READS`` (clients' reads waiting on a read worker),
then ``CONTROL`` (brokers' and admins' requests, replica publication and applies), then ``BULK``
(whole-table answers, status-page searches: one asker's big job). A level passed over because
the budget ran out goes before the others at the next turn (the longest-waiting first), so no
level waits more turns than there are levels.

It is Twisted's ``task.Cooperator`` (one per priority), with one termination predicate (the
turn's deadline) and one scheduler function (this turn's call): jobs are CooperativeTasks, a job
that yields a Deferred waits for it, ``whenDone()`` fires when it ends. Java needs none of this:
its thread pools run each kind of work on its own threads.
"""

import functools
import time

from twisted.internet.task import Cooperator, SchedulerStopped, TaskStopped
from twisted.logger import Logger

from namesrv.interfaces import IReactorPasses

log = Logger()

#: priorities, first served first
READS = 0
CONTROL = 1
BULK = 2
PRIORITIES = (READS, CONTROL, BULK)

#: how much later the next turn is called: a hair later, as Twisted's Cooperator does. On a real
#: reactor that is the next iteration, after the sockets were read (the reactor does not sleep for
#: it: at today's epoch the hair is below a float's resolution, the call is due at once); on a
#: ``task.Clock`` near 0, each ``advance(NEXT_TURN)`` runs exactly one turn
NEXT_TURN = 1e-8


class _NextTurn:
    """What a level's Cooperator holds while its tick waits for the next turn (it may cancel it)."""

    __slots__ = ("scheduler", "level")

    def __init__(self, scheduler, level):
        self.scheduler = scheduler
        self.level = level

    def cancel(self):
        self.scheduler._cancel(self.level)


class TurnScheduler:
    """The jobs of one process, run in turns of at most ``budget()`` seconds plus one step.

    ``budget`` is a callable (read at each turn: the property may change at run time), ``timer``
    the clock steps are measured with. ``longest_turn`` and ``turns`` say what it has done.
    """

    def __init__(self, reactor, budget, timer=time.perf_counter):
        self.reactor = reactor
        self.budget = budget
        self.timer = timer
        self.turns = 0
        self.longest_turn = 0.0
        self._deadline = None        # this reactor pass's: its turn and the sockets read after it share one budget
        self._pass_end = None
        #: a reactor that counts its passes (eventloop.py) says when one ends; any other gets a timed call per pass
        self._counted = IReactorPasses.providedBy(reactor)
        self._pass = None            # with a counting reactor: the pass the deadline belongs to
        self._ticks = {}                                   # level -> its Cooperator's tick, due next turn
        self._passed_over = dict.fromkeys(PRIORITIES, 0)   # level -> turns in a row it did not run
        self._call = None
        self._cooperators = {level: Cooperator(terminationPredicateFactory=self._turn_over,
                                               scheduler=functools.partial(self._want, level))
                             for level in PRIORITIES}

    @classmethod
    def for_config(cls, config, reactor, timer=time.perf_counter):
        """The scheduler of a process whose budget is ``schedulerTurnBudgetMillis`` of ``config``."""
        return cls(reactor, lambda: max(0, config.schedulerTurnBudgetMillis) / 1000.0, timer)

    def cooperate(self, job, priority, name="job"):
        """Run the generator ``job`` a step per ``next()``, in turns: its CooperativeTask. A job that
        raises ends there, and ``name`` says which in the one line logged."""
        task = self._cooperators[priority].cooperate(job)
        task.whenDone().addErrback(self._failed, name)
        return task

    def job(self, steps, priority, name):
        """A ServingJob: ``steps()`` run whenever ``wake()`` finds it not running."""
        return ServingJob(self, steps, priority, name)

    def busy(self, priority=None):
        """Some job (of ``priority``) is due at the next turn."""
        return bool(self._ticks) if priority is None else priority in self._ticks

    def stop(self):
        """No more turns (the process stops): every job ends with SchedulerStopped."""
        for cooperator in self._cooperators.values():
            cooperator.stop()
        self._ticks.clear()
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        if self._pass_end is not None and self._pass_end.active():
            self._pass_end.cancel()
        self._pass_end = self._deadline = None

    def remaining(self):
        """Seconds left of this reactor pass's budget, for work done outside the jobs (a read worker's
        connections handling what they read: readworkers/worker/turns.py). A pass is one iteration of the
        reactor: the turn that runs in it (timed calls come first) and the sockets read after; it begins at
        the turn, or at the first ask when no turn runs, and ends when the reactor comes round again. So a
        pass runs one budget, whoever spends it, plus the one step or read that began before it ran out."""
        now = self.timer()
        if self._deadline is None or (self._counted and self._pass != self.reactor.passes):
            self._begin_pass(now)
        return self._deadline - now

    def may_go_on(self):
        """True while this pass's budget lasts; the first piece of work of a pass always may (as a turn runs
        one step at least, the sockets read first in a pass handle one connection's quantum at least)."""
        now = self.timer()
        if self._deadline is None or (self._counted and self._pass != self.reactor.passes):
            self._begin_pass(now)
            return True
        return now < self._deadline

    def _begin_pass(self, now):
        self._deadline = now + self.budget()
        if self._counted:
            self._pass = self.reactor.passes
        elif self._pass_end is None:
            self._pass_end = self.reactor.callLater(0, self._pass_over)

    def _pass_over(self):
        self._pass_end = None
        self._deadline = None

    # -- the turn -------------------------------------------------------------------------
    def _turn(self):
        self._call = None
        started = self.timer()
        self._begin_pass(started)   # a new pass: the sockets read after the turn share what it leaves
        passed_over = self._passed_over
        ran = False
        for level in sorted(self._ticks, key=lambda level: (-passed_over[level], level)):
            if ran and self.timer() >= self._deadline:
                passed_over[level] += 1
                continue
            passed_over[level] = 0
            tick = self._ticks.pop(level)
            tick()   # the level's jobs, a step each in turn, until the deadline (one step at least)
            ran = True
        took = self.timer() - started
        self.turns += 1
        if took > self.longest_turn:
            self.longest_turn = took
        if self._ticks:
            self._schedule()

    def _turn_over(self):
        """The Cooperators' termination predicate: this turn's deadline has passed."""
        return self._past_deadline

    def _past_deadline(self):
        deadline = self._deadline
        return deadline is not None and self.timer() >= deadline

    def _want(self, level, tick):
        """A Cooperator's scheduler: run ``tick`` at the next turn."""
        self._ticks[level] = tick
        self._schedule()
        return _NextTurn(self, level)

    def _cancel(self, level):
        """A Cooperator has nothing left to run (its jobs ended or wait): it is owed no turn."""
        self._ticks.pop(level, None)
        self._passed_over[level] = 0
        if not self._ticks and self._call is not None and self._call.active():
            self._call.cancel()
            self._call = None

    def _schedule(self):
        if self._call is None:
            self._call = self.reactor.callLater(NEXT_TURN, self._turn)

    @staticmethod
    def _failed(failure, name):
        if not failure.check(TaskStopped, SchedulerStopped):
            log.failure("{job} failed; it stops here", failure, job=name)


class ServingJob:
    """A job that serves a queue: ``wake()`` starts ``steps()`` (a generator that ends once its
    queue is empty) unless it runs already; the queue's owner calls it whenever it adds work."""

    def __init__(self, scheduler, steps, priority, name):
        self._start = lambda: scheduler.cooperate(steps(), priority, name)
        self._task = None

    @property
    def running(self):
        return self._task is not None

    def wake(self):
        if self._task is None:
            self._task = task = self._start()
            task.whenDone().addBoth(self._ended, task)

    def _ended(self, ignored, task):
        if self._task is task:
            self._task = None

    def stop(self):
        task, self._task = self._task, None
        if task is not None:
            task.stop()
