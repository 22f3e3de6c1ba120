"""One scheduler for the sliced work of a process (namesrv/timing/scheduler.py): a turn is never longer
than the budget plus one step, whatever runs, and the priorities order a turn without starving anyone.

Every job here spends time on a StepTimer (the scheduler's timer) as its steps run; the reactor is a
task.Clock, on which ``one_turn`` runs exactly one turn of the scheduler.
"""

import pytest
from twisted.internet import defer, task
from twisted.logger import globalLogPublisher
from zope.interface import implementer

from namesrv.interfaces import IReactorPasses

from namesrv.timing.scheduler import BULK, CONTROL, NEXT_TURN, READS, TurnScheduler
from tests.fakes import StepTimer, one_turn, run_turns, turn_scheduler


#: times in units of 2**-13 s (about 0.12 ms): sums of them are exact, so "within the budget" is too
U = 2 ** -13
BUDGET = 8 * U


class Steps:
    """Records which job ran a step in which turn, and what it cost."""

    def __init__(self, timer):
        self.timer = timer
        self.turn = 0
        self.log = []   # (turn, job, cost)

    def job(self, name, costs):
        """A job whose steps cost ``costs`` seconds each, in order."""
        for cost in costs:
            self.timer.spend(cost)
            self.log.append((self.turn, name, cost))
            yield

    def in_turn(self, turn):
        return [(name, cost) for t, name, cost in self.log if t == turn]


def _turns(clock, steps, limit=1000):
    """Run turns one by one until none is due; the time each took, by the scheduler's timer."""
    took = []
    while clock.getDelayedCalls() and len(took) < limit:
        began = steps.timer()
        one_turn(clock)
        took.append(steps.timer() - began)
        steps.turn += 1
    return took


def test_several_jobs_at_once_never_make_a_turn_longer_than_the_budget_plus_one_step():
    clock, timer = task.Clock(), StepTimer()
    scheduler = turn_scheduler(clock, BUDGET, timer)
    steps = Steps(timer)
    jobs = {
        "reads": (READS, [2 * U] * 40),                        # a worker's clients' turns: many short steps
        "registrations": (CONTROL, [3 * U, 24 * U, U] * 8),    # one registration in three is long
        "publication": (CONTROL, [6 * U] * 12),
        "topic list": (BULK, [20 * U] * 6),                    # slices longer than the budget
        "search": (BULK, [7 * U] * 10),
    }
    done = []
    for name, (priority, costs) in jobs.items():
        scheduler.cooperate(steps.job(name, costs), priority, name).whenDone().addCallback(
            lambda _, name=name: done.append(name))
    took = _turns(clock, steps)
    assert sorted(done) == sorted(jobs)
    assert sum(len(costs) for _, costs in jobs.values()) == len(steps.log)
    for turn, seconds in enumerate(took):
        ran = steps.in_turn(turn)
        if not ran:   # a turn in which jobs only found their end (a generator's last next())
            assert seconds == 0
            continue
        *before_last, (_, last) = ran
        assert sum(cost for _, cost in before_last) < BUDGET         # the last step began within the budget
        assert seconds <= BUDGET + last                               # so the turn is the budget plus that step
    assert max(took) <= BUDGET + max(c for _, costs in jobs.values() for c in costs)
    assert scheduler.longest_turn == max(took) and scheduler.turns == len(took)


def test_reads_go_first_and_a_level_passed_over_goes_first_next_turn():
    clock, timer = task.Clock(), StepTimer()
    scheduler = turn_scheduler(clock, BUDGET, timer)
    steps = Steps(timer)
    # each level alone could fill every turn: without the rule the lower ones would wait for ever
    scheduler.cooperate(steps.job("search", [16 * U] * 5), BULK)
    scheduler.cooperate(steps.job("registrations", [16 * U] * 5), CONTROL)
    scheduler.cooperate(steps.job("reads", [16 * U] * 5), READS)
    _turns(clock, steps)
    turns = [steps.in_turn(turn) for turn in range(steps.turn)]
    order = [ran[0][0] for ran in turns if ran]
    assert order[:3] == ["reads", "registrations", "search"]   # each passed-over level goes next, by age
    assert order[3:6] == ["reads", "registrations", "search"]
    assert order.count("search") == 5 and all(len(ran) <= 1 for ran in turns)   # each step is over the budget


def test_within_the_budget_a_turn_serves_every_level_in_priority_order():
    clock, timer = task.Clock(), StepTimer()
    scheduler = turn_scheduler(clock, BUDGET, timer)
    steps = Steps(timer)
    scheduler.cooperate(steps.job("search", [U] * 2), BULK)
    scheduler.cooperate(steps.job("registrations", [U] * 2), CONTROL)
    scheduler.cooperate(steps.job("reads", [U] * 2), READS)
    one_turn(clock)
    assert [name for name, _ in steps.in_turn(0)] == ["reads"] * 2 + ["registrations"] * 2 + ["search"] * 2


def test_a_job_that_yields_a_deferred_waits_for_it_and_the_others_go_on():
    clock, timer = task.Clock(), StepTimer()
    scheduler = turn_scheduler(clock, BUDGET, timer)
    gate = defer.Deferred()
    seen = []

    def waiting():
        seen.append("before")
        yield gate
        seen.append("after")

    def busy():
        for i in range(3):
            seen.append(i)
            yield

    scheduler.cooperate(waiting(), CONTROL)
    scheduler.cooperate(busy(), CONTROL)
    run_turns(clock)
    assert seen == ["before", 0, 1, 2] and not clock.getDelayedCalls()
    gate.callback(None)
    run_turns(clock)
    assert seen[-1] == "after"


def test_a_failing_job_is_logged_once_and_the_others_go_on():
    clock = task.Clock()
    scheduler = turn_scheduler(clock)
    logged = []
    globalLogPublisher.addObserver(logged.append)
    finished = []

    def broken():
        yield
        raise RuntimeError("broken on purpose")

    def fine():
        for _ in range(3):
            yield
        finished.append(True)

    try:
        scheduler.cooperate(broken(), BULK, "the broken job")
        scheduler.cooperate(fine(), BULK, "the fine job")
        run_turns(clock)
    finally:
        globalLogPublisher.removeObserver(logged.append)
    failures = [e for e in logged if e.get("log_failure") is not None]
    assert finished == [True] and len(failures) == 1
    assert failures[0]["job"] == "the broken job" and failures[0]["log_failure"].check(RuntimeError)


def test_a_serving_job_runs_while_its_queue_has_work_and_wakes_again():
    clock = task.Clock()
    scheduler = turn_scheduler(clock, budget=0)   # a step per turn
    queue, served = [], []

    def serve():
        while queue:
            served.append(queue.pop(0))
            yield

    job = scheduler.job(serve, CONTROL, "queue")
    queue.extend([1, 2])
    job.wake()
    job.wake()                                    # once is enough
    run_turns(clock)
    assert served == [1, 2] and not job.running
    queue.append(3)
    job.wake()
    assert job.running
    one_turn(clock)
    assert served == [1, 2, 3]
    queue.append(4)
    job.stop()                                    # e.g. at shutdown
    run_turns(clock)
    assert served == [1, 2, 3] and not job.running and not clock.getDelayedCalls()


def test_the_budget_follows_its_property():
    from tests.config_for import make_config
    config = make_config(schedulerTurnBudgetMillis=3)
    scheduler = TurnScheduler.for_config(config, task.Clock())
    assert scheduler.budget() == 0.003
    config.update({"schedulerTurnBudgetMillis": "1"})
    assert scheduler.budget() == 0.001


def test_every_sliced_job_of_a_main_process_shares_its_one_scheduler(tmp_path, monkeypatch):
    """Queued registrations, a whole-table answer, a status-page search and a replica publication at
    once, in a service as make_service builds it: all are jobs of the context's scheduler, and (each
    step charged a cost on the scheduler's timer) no turn is longer than the budget plus one step."""
    from namesrv.protocol.codes import RequestCode, ResponseCode
    from namesrv.protocol.command import make_request
    from namesrv.readworkers.channel.generation import SharedGeneration
    from namesrv.routes import topiclists
    from namesrv.service import make_service
    from namesrv.status import views
    from tests.brokers import register_request
    from tests.config_for import service_config
    from tests.fakes import FakeConnection
    from tests.readworkers.pools import pool_for
    from tests.readworkers.harness import RecordingWorker
    from tests.fakes import Reactor

    monkeypatch.setattr(topiclists, "SLICE", 50)
    monkeypatch.setattr(views, "SEARCH_SLICE", 50)
    service = make_service(service_config(tmp_path), clock=task.Clock(), reactor=Reactor())
    scheduler, clock = service.context.scheduler, service.reactor
    costs = {"the isolation dispatcher": 3 * U, "whole-table answer": 5 * U, "status-page search": 11 * U,
             "replica publication": 2 * U}
    scheduler.timer = timer = StepTimer()
    scheduler.budget = lambda: BUDGET
    started = []
    cooperate = scheduler.cooperate

    def charged(job, priority, name="job"):
        started.append((name, priority))

        def steps():
            for step in job:
                timer.spend(costs[name])
                yield step
        return cooperate(steps(), priority, name)
    monkeypatch.setattr(scheduler, "cooperate", charged)

    topics = ["Topic-%04d" % i for i in range(400)]
    assert service.registry.dispatch(register_request("C", "b0", "10.0.0.1:10911", topics=topics),
                                     FakeConnection()).code == ResponseCode.SUCCESS
    pool = pool_for(service)
    pool.running = True
    pool.publisher.start(SharedGeneration(str(tmp_path / "generation"), writable=True))
    worker = pool.workers[0] = RecordingWorker(applied=None)
    worker.needs_full = True
    pool.publisher._publish()                                    # a full copy: 400 topics in parts
    registrations = [service.chain.entry.dispatch(
        register_request("C", "b%d" % i, "10.0.0.%d:10911" % i, topics=topics[:20]), FakeConnection())
        for i in range(1, 30)]
    topic_list = service.registry.dispatch(make_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}),
                                           FakeConnection())
    found = []
    views.matching_names(sorted(topics), "-01", scheduler).addCallback(found.append)

    took = []
    for _ in range(10000):
        if not scheduler.busy():
            break
        began = timer()
        one_turn(clock)
        took.append(timer() - began)
    assert {name: priority for name, priority in started} == {
        "the isolation dispatcher": CONTROL, "replica publication": CONTROL,
        "whole-table answer": BULK, "status-page search": BULK}
    assert all(r.called and r.result.code == ResponseCode.SUCCESS for r in registrations)
    assert topic_list.called and topic_list.result.code == ResponseCode.SUCCESS
    assert found == [["Topic-%04d" % i for i in range(100, 200)]]
    assert worker.messages[-1]["kind"] == "replica"
    assert max(took) <= BUDGET + max(costs.values()) and scheduler.longest_turn == max(took)
    assert len(took) > 20   # the work was spread over turns, not done in one


def _iteration(clock, by):
    """One reactor iteration as Twisted's runs it: the calls due when it begins; those they add wait for the
    next (a task.Clock's advance would run them at once)."""
    clock.rightNow += by
    due = [call for call in clock.getDelayedCalls() if call.getTime() <= clock.seconds()]
    for call in due:
        clock.calls.remove(call)
        call.called = 1
        call.func(*call.args, **call.kw)


def test_a_reactor_pass_runs_one_budget_whoever_spends_it():
    """The turn (timed calls come first in a reactor iteration) and the sockets read after it share one
    deadline: a read worker's connections get what the turn left, not a budget of their own."""
    clock, timer = task.Clock(), StepTimer()
    scheduler = TurnScheduler(clock, lambda: 0.001, timer)
    steps = Steps(timer)
    scheduler.cooperate(steps.job("apply", [0.0007, 0.0007]), CONTROL)
    _iteration(clock, NEXT_TURN)         # the turn: a step of 0.7 ms, still within the budget, then another
    assert steps.in_turn(0) == [("apply", 0.0007), ("apply", 0.0007)]
    # the sockets read after the turn, in the same pass: the budget is spent
    assert scheduler.remaining() < 0 and not scheduler.may_go_on()
    _iteration(clock, 0)                 # the reactor comes round: a new pass
    assert scheduler.may_go_on() and scheduler.remaining() == pytest.approx(0.001)
    timer.spend(0.0004)
    assert scheduler.may_go_on() and scheduler.remaining() == pytest.approx(0.0006)
    timer.spend(0.0007)
    assert not scheduler.may_go_on()


def test_the_first_work_of_a_pass_may_always_go_on_as_a_turn_runs_one_step_at_least():
    clock, timer = task.Clock(), StepTimer()
    scheduler = TurnScheduler(clock, lambda: 0, timer)
    assert scheduler.may_go_on()          # the first connection read in a pass handles its quantum
    assert not scheduler.may_go_on()      # the next ones what is left: nothing
    _iteration(clock, 0)
    assert scheduler.may_go_on()


@implementer(IReactorPasses)
class CountingClock(task.Clock):
    """A task.Clock that counts its passes as namesrv/server/eventloop.py's reactor does."""
    passes = 0

    def iteration(self, by):
        """One reactor iteration: the calls due, then the sockets (nothing here), then the count moves."""
        _iteration(self, by)
        self.passes += 1


def test_a_reactor_that_counts_its_passes_needs_no_timed_call_per_pass():
    """A read worker's reactor (eventloop.py) counts its passes: a read handled per pass asks the scheduler,
    and a timed call per pass to mark its end cost more than the read (bench/results/design-figures.md)."""
    clock, timer = CountingClock(), StepTimer()
    scheduler = TurnScheduler(clock, lambda: 0.001, timer)
    assert scheduler.may_go_on() and scheduler.remaining() == pytest.approx(0.001)
    assert clock.getDelayedCalls() == []
    timer.spend(0.0011)
    assert not scheduler.may_go_on()      # this pass's budget is spent...
    clock.iteration(0)
    assert scheduler.may_go_on() and scheduler.remaining() == pytest.approx(0.001)   # ...the next has its own
    steps = Steps(timer)
    scheduler.cooperate(steps.job("apply", [0.0007, 0.0007]), CONTROL)
    clock.iteration(NEXT_TURN)            # the turn, then the sockets of the same pass: the count moves after them
    assert steps.in_turn(0) == [("apply", 0.0007), ("apply", 0.0007)]
    clock.passes -= 1                     # as seen by the sockets read in that pass, after the turn
    assert not scheduler.may_go_on()
    clock.passes += 1
    assert scheduler.may_go_on()
