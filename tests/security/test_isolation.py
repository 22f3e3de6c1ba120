"""Per-class admission limits and the route-first scheduler."""

from twisted.internet import defer, task
from zope.interface import implementer

from namesrv.interfaces import IRequestProcessor
from namesrv.dispatch.isolation import OVERLOAD_REMARK, ClassLimitPolicy, PriorityDispatcher
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.dispatch.registry import ProcessorRegistry
from namesrv.dispatch.classes import RequestClassifier
from tests.config_for import make_config
from namesrv.timing.scheduler import TurnScheduler
from tests.fakes import FakeConnection, RecordingEventLog, StepTimer, one_turn
from tests.security.fakes import Echo

REGISTER = RequestCode.REGISTER_BROKER
ROUTE = RequestCode.GET_ROUTEINFO_BY_TOPIC
CLUSTER_INFO = RequestCode.GET_BROKER_CLUSTER_INFO
PUT = RequestCode.PUT_KV_CONFIG


class Listener:
    def __init__(self):
        self.rejections = []
        self.waits = []

    def rejected(self, request_class, reason):
        self.rejections.append((request_class, reason))

    def queue_waited(self, request_class, seconds):
        self.waits.append((request_class, seconds))


def limited(processor, **values):
    listener = Listener()
    cfg = make_config(**values)
    policy = ClassLimitPolicy(RequestClassifier(), cfg, [listener])
    events = RecordingEventLog()
    registry = ProcessorRegistry([processor], events=events, policies=[policy])
    return registry, policy, listener, cfg


def test_in_flight_limit_answers_system_busy_with_the_java_remark_and_recovers():
    echo = Echo()
    echo.hold = True
    registry, policy, listener, cfg = limited(echo, brokerControlMaxInFlight=2)
    first = [registry.dispatch(make_request(REGISTER, {}, opaque=i), FakeConnection()) for i in (1, 2)]
    busy = registry.dispatch(make_request(REGISTER, {}, opaque=3), FakeConnection())
    assert busy.code == ResponseCode.SYSTEM_BUSY and busy.remark == OVERLOAD_REMARK and busy.opaque == 3
    assert listener.rejections == [("broker_control", "overload")]
    # Other classes have their own budget.
    route = make_request(ROUTE, {"topic": "t"})
    assert isinstance(registry.dispatch(route, FakeConnection()), defer.Deferred)
    assert policy.in_flight == {"route_read": 1, "broker_control": 2, "admin_read": 0, "admin_write": 0}
    echo.release_all()
    assert [d.result.code for d in first] == [0, 0]
    assert policy.in_flight["broker_control"] == 0
    assert isinstance(registry.dispatch(make_request(REGISTER, {}), FakeConnection()), defer.Deferred)
    cfg.update({"brokerControlMaxInFlight": "0"})  # 0: unlimited
    assert all(isinstance(registry.dispatch(make_request(REGISTER, {}), FakeConnection()), defer.Deferred) for _ in range(5))


def test_byte_limit_bounds_bodies_held_but_lets_one_big_request_through():
    echo = Echo()
    echo.hold = True
    registry, policy, _, _ = limited(echo, brokerControlMaxInFlightBytes=1000)
    big = registry.dispatch(make_request(REGISTER, {}, body=b"x" * 5000), FakeConnection())
    assert isinstance(big, defer.Deferred)  # alone, bigger than the budget: still served
    small = registry.dispatch(make_request(REGISTER, {}, body=b"x" * 10), FakeConnection())
    assert small.code == ResponseCode.SYSTEM_BUSY
    echo.release_all()
    assert policy.in_flight_bytes["broker_control"] == 0
    assert isinstance(registry.dispatch(make_request(REGISTER, {}, body=b"x" * 600), FakeConnection()), defer.Deferred)
    assert registry.dispatch(make_request(REGISTER, {}, body=b"x" * 600), FakeConnection()).code == ResponseCode.SYSTEM_BUSY


def test_failed_processing_releases_its_slot():
    @implementer(IRequestProcessor)
    class Failing:
        name = "failing"
        codes = frozenset([int(REGISTER)])

        def reject_request(self, request):
            return None

        def process_request(self, request, connection):
            return defer.fail(RuntimeError("boom"))

    registry, policy, _, _ = limited(Failing(), brokerControlMaxInFlight=1)
    for _ in range(3):
        results = []
        registry.dispatch(make_request(REGISTER, {}), FakeConnection()).addCallback(results.append)
        assert results[0].code == ResponseCode.SYSTEM_ERROR
    assert policy.in_flight["broker_control"] == 0


class Costly(Echo):
    """Each request 'takes' ``cost[code]`` seconds of the fake timer."""

    def __init__(self, timer, cost):
        Echo.__init__(self)
        self.timer = timer
        self.cost = cost

    def process_request(self, request, connection):
        self.timer.spend(self.cost.get(request.code, 0))
        return Echo.process_request(self, request, connection)


def scheduled(cost, **values):
    """A dispatcher whose requests each spend ``cost[code]`` seconds of the scheduler's timer; ``one_turn(clock)``
    is one reactor turn."""
    timer = StepTimer()
    clock = task.Clock()
    processor = Costly(timer, cost)
    registry, policy, listener, cfg = limited(processor, **values)
    scheduler = TurnScheduler.for_config(cfg, clock, timer=timer)
    dispatcher = PriorityDispatcher(registry, RequestClassifier(), policy, cfg, scheduler, timer=timer,
                                    listeners=[listener])
    return dispatcher, processor, clock, policy, listener, timer


def test_route_reads_are_answered_at_once_while_registrations_wait_for_turns():
    dispatcher, processor, clock, policy, listener, _ = scheduled({REGISTER: 0.004}, schedulerTurnBudgetMillis=5)
    answers = [dispatcher.dispatch(make_request(REGISTER, {}, opaque=i), FakeConnection()) for i in range(10)]
    assert all(isinstance(a, defer.Deferred) and not a.called for a in answers)
    assert policy.waiting["broker_control"] == 10
    route = dispatcher.dispatch(make_request(ROUTE, {"topic": "t"}), FakeConnection())
    assert route.code == ResponseCode.SUCCESS and processor.seen == [ROUTE]
    one_turn(clock)  # one turn: 4 ms + 4 ms passes the 5 ms budget
    assert processor.seen.count(REGISTER) == 2 and dispatcher.pending() == 8
    assert dispatcher.dispatch(make_request(ROUTE, {"topic": "t"}), FakeConnection()).code == ResponseCode.SUCCESS
    while dispatcher.pending():
        one_turn(clock)
    assert [a.result.opaque for a in answers] == list(range(10))  # FIFO within a class
    assert policy.waiting["broker_control"] == 0 and policy.in_flight["broker_control"] == 0
    assert len(listener.waits) == 10 and listener.waits[-1][1] > listener.waits[0][1]


def test_classes_take_turns():
    dispatcher, processor, clock, _, _, _ = scheduled({}, schedulerTurnBudgetMillis=0)
    for _ in range(3):
        dispatcher.dispatch(make_request(REGISTER, {}), FakeConnection())
    for _ in range(3):
        dispatcher.dispatch(make_request(CLUSTER_INFO, {}), FakeConnection())
    dispatcher.dispatch(make_request(PUT, {}), FakeConnection())
    while dispatcher.pending():
        one_turn(clock)
    assert processor.seen == [REGISTER, CLUSTER_INFO, PUT, REGISTER, CLUSTER_INFO, REGISTER, CLUSTER_INFO]


def test_queue_limit_answers_busy_at_once():
    dispatcher, _, clock, policy, listener, _ = scheduled({}, brokerControlMaxInFlight=3)
    queued = [dispatcher.dispatch(make_request(REGISTER, {}), FakeConnection()) for _ in range(3)]
    busy = dispatcher.dispatch(make_request(REGISTER, {}, opaque=99), FakeConnection())
    assert busy.code == ResponseCode.SYSTEM_BUSY and busy.opaque == 99
    assert listener.rejections == [("broker_control", "overload")]
    one_turn(clock)
    assert all(d.called for d in queued)
    assert isinstance(dispatcher.dispatch(make_request(REGISTER, {}), FakeConnection()), defer.Deferred)


def test_oneway_and_unknown_codes():
    dispatcher, processor, clock, _, _, _ = scheduled({})
    assert dispatcher.dispatch(make_request(RequestCode.BROKER_HEARTBEAT, {}, oneway=True), FakeConnection()) is None
    one_turn(clock)
    assert processor.seen == [RequestCode.BROKER_HEARTBEAT]
    unknown = dispatcher.dispatch(make_request(7777, {}), FakeConnection())
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


def test_registration_from_a_connection_closed_while_queued_is_dropped():
    dispatcher, processor, clock, policy, _, _ = scheduled({})
    conn = FakeConnection()
    register = dispatcher.dispatch(make_request(REGISTER, {}), conn)
    unregister = dispatcher.dispatch(make_request(RequestCode.UNREGISTER_BROKER, {}), conn)
    conn.closing = True
    one_turn(clock)
    assert processor.seen == [RequestCode.UNREGISTER_BROKER]
    assert register.result is None and unregister.result.code == ResponseCode.SUCCESS
    assert dispatcher.dropped == 1 and policy.waiting["broker_control"] == 0


def test_scheduler_can_be_switched_off_and_stop_forgets_queued_work():
    dispatcher, processor, clock, policy, _, _ = scheduled({}, isolationSchedulerEnable=False)
    assert dispatcher.dispatch(make_request(REGISTER, {}), FakeConnection()).code == ResponseCode.SUCCESS
    dispatcher.config.update({"isolationSchedulerEnable": "true"})
    pending = dispatcher.dispatch(make_request(REGISTER, {}), FakeConnection())
    dispatcher.stop()
    assert pending.result is None and policy.waiting["broker_control"] == 0
    assert not clock.getDelayedCalls()
