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

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, cast

from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.task import CooperativeTask, Cooperator, SchedulerStopped, TaskStopped
from twisted.logger import Logger
from twisted.python.failure import Failure

if TYPE_CHECKING:   # types only
    from namesrv.config.live import NamesrvConfig

from namesrv.interfaces import IReactorPasses

log = Logger()

#: a job: a step per ``next()``; a step that yields a Deferred waits for it
Job = Iterator[object]
#: seconds, now (``time.perf_counter``-like)
Timer = Callable[[], float]

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

    def __init__(self, scheduler: TurnScheduler, level: int) -> None:
        self.scheduler = scheduler
        self.level = level

    def cancel(self) -> None:
        self.scheduler._cancel(self.level)


class TurnScheduler:
    """The jobs of one process, run in turns of at most ``budget()`` seconds plus one step.

    ``budget`` is a callable (read at each turn: the property may change at run time), ``timer``
    the clock steps are measured with. ``longest_turn`` and ``turns`` say what it has done.
    """

    def __init__(self, reactor: IReactorTime, budget: Callable[[], float], timer: Timer = time.perf_counter) -> None:
        self.reactor = reactor
        self.budget = budget
        self.timer = timer
        self.turns = 0
        self.longest_turn = 0.0
        # this reactor pass's: its turn and the sockets read after it share one budget
        self._deadline: Optional[float] = None
        self._pass_end: Optional[IDelayedCall] = None
        #: a reactor that counts its passes (eventloop.py) says when one ends; any other gets a timed call per pass
        self._counted = IReactorPasses.providedBy(reactor)
        self._counting: Any = reactor if self._counted else None   # its ``passes`` (IReactorPasses)
        self._pass: Optional[int] = None     # with a counting reactor: the pass the deadline belongs to
        self._ticks: dict[int, Callable[[], None]] = {}     # level -> its Cooperator's tick, due next turn
        self._passed_over = dict.fromkeys(PRIORITIES, 0)   # level -> turns in a row it did not run
        self._call: Optional[IDelayedCall] = None
        self._cooperators = {level: Cooperator(terminationPredicateFactory=self._turn_over,
                                               scheduler=functools.partial(self._want, level))
                             for level in PRIORITIES}

    @classmethod
    def for_config(cls, config: NamesrvConfig, reactor: IReactorTime,
                   timer: Timer = time.perf_counter) -> TurnScheduler:
        """The scheduler of a process whose budget is ``schedulerTurnBudgetMillis`` of ``config``."""
        return cls(reactor, lambda: max(0, config.schedulerTurnBudgetMillis) / 1000.0, timer)

    def cooperate(self, job: Job, priority: int, name: str = "job") -> CooperativeTask[Job]:
        """Run the generator ``job`` a step per ``next()``, in turns: its CooperativeTask. A job that
        raises ends there, and ``name`` says which in the one line logged."""
        task = self._cooperators[priority].cooperate(job)
        task.whenDone().addErrback(self._failed, name)
        return task

    def job(self, steps: Callable[[], Job], priority: int, name: str) -> ServingJob:
        """A ServingJob: ``steps()`` run whenever ``wake()`` finds it not running."""
        return ServingJob(self, steps, priority, name)

    def busy(self, priority: Optional[int] = None) -> bool:
        """Some job (of ``priority``) is due at the next turn."""
        return bool(self._ticks) if priority is None else priority in self._ticks

    def stop(self) -> None:
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

    def remaining(self) -> float:
        """Seconds left of this reactor pass's budget, for work done outside the jobs (a read worker's
        connections handling what they read: readworkers/worker/turns.py). A pass is one iteration of the
        reactor: the turn that runs in it (timed calls come first) and the sockets read after; it begins at
        the turn, or at the first ask when no turn runs, and ends when the reactor comes round again. So a
        pass runs one budget, whoever spends it, plus the one step or read that began before it ran out."""
        now = self.timer()
        deadline = self._deadline
        if deadline is None or (self._counted and self._pass != self._counting.passes):
            deadline = self._begin_pass(now)
        return deadline - now

    def may_go_on(self) -> bool:
        """True while this pass's budget lasts; the first piece of work of a pass always may (as a turn runs
        one step at least, the sockets read first in a pass handle one connection's quantum at least)."""
        now = self.timer()
        if self._deadline is None or (self._counted and self._pass != self._counting.passes):
            self._begin_pass(now)
            return True
        return now < self._deadline

    def _begin_pass(self, now: float) -> float:
        """This pass's deadline, from ``now``."""
        self._deadline = deadline = now + self.budget()
        if self._counted:
            self._pass = self._counting.passes
        elif self._pass_end is None:
            self._pass_end = self.reactor.callLater(0, self._pass_over)
        return deadline

    def _pass_over(self) -> None:
        self._pass_end = None
        self._deadline = None

    # -- the turn -------------------------------------------------------------------------
    def _turn(self) -> None:
        self._call = None
        started = self.timer()
        deadline = self._begin_pass(started)   # a new pass: the sockets read after the turn share what it leaves
        passed_over = self._passed_over
        ran = False
        for level in sorted(self._ticks, key=lambda level: (-passed_over[level], level)):
            if ran and self.timer() >= deadline:
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

    def _turn_over(self) -> Callable[[], bool]:
        """The Cooperators' termination predicate: this turn's deadline has passed."""
        return self._past_deadline

    def _past_deadline(self) -> bool:
        deadline = self._deadline
        return deadline is not None and self.timer() >= deadline

    def _want(self, level: int, tick: Callable[[], None]) -> IDelayedCall:
        """A Cooperator's scheduler: run ``tick`` at the next turn."""
        self._ticks[level] = tick
        self._schedule()
        return cast(IDelayedCall, _NextTurn(self, level))   # the Cooperator only cancels it

    def _cancel(self, level: int) -> None:
        """A Cooperator has nothing left to run (its jobs ended or wait): it is owed no turn."""
        self._ticks.pop(level, None)
        self._passed_over[level] = 0
        if not self._ticks and self._call is not None and self._call.active():
            self._call.cancel()
            self._call = None

    def _schedule(self) -> None:
        if self._call is None:
            self._call = self.reactor.callLater(NEXT_TURN, self._turn)

    @staticmethod
    def _failed(failure: Failure, name: str) -> None:
        if not failure.check(TaskStopped, SchedulerStopped):
            log.failure("{job} failed; it stops here", failure, job=name)


class ServingJob:
    """A job that serves a queue: ``wake()`` starts ``steps()`` (a generator that ends once its
    queue is empty) unless it runs already; the queue's owner calls it whenever it adds work."""

    def __init__(self, scheduler: TurnScheduler, steps: Callable[[], Job], priority: int, name: str) -> None:
        self._start = lambda: scheduler.cooperate(steps(), priority, name)
        self._task: Optional[CooperativeTask[Job]] = None

    @property
    def running(self) -> bool:
        return self._task is not None

    def wake(self) -> None:
        if self._task is None:
            self._task = task = self._start()
            task.whenDone().addBoth(self._ended, task)

    def _ended(self, ignored: object, task: CooperativeTask[Job]) -> None:
        if self._task is task:
            self._task = None

    def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.stop()
