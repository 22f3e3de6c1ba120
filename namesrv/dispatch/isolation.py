"""Workload isolation: per-class admission limits and a scheduler that keeps route reads first.

Java gives each kind of work its own thread pool with a bounded queue (clientRequestThreadPoolQueueCapacity
50000 for route reads in 5.x, defaultThreadPoolQueueCapacity 10000 for the rest) and answers
SYSTEM_BUSY ``[OVERLOAD]system busy, start flow control for a while`` when a queue is full.
We have one reactor thread, so isolation has two parts:

- ``ClassLimitPolicy`` (an IRequestPolicy) counts, per class, the requests waiting in the
  scheduler plus those being processed (a processor may answer with a Deferred, e.g. after
  decoding a big registration in a thread), and their body bytes; past a class's limit it
  answers SYSTEM_BUSY instead of letting memory grow.
- ``PriorityDispatcher`` sits between the connections and the registry. Route reads (and
  codes no processor declared) are answered at once; broker-control and admin requests
  wait in one FIFO queue per class and are run by one job of the process's scheduler
  (namesrv/timing/scheduler.py, ``CONTROL``), a request per step, round-robin between
  classes, giving the reactor back between turns. A storm of registrations therefore
  delays a route read by at most one turn plus one request, instead of by the whole storm.
"""

from __future__ import annotations

import collections
import time
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Optional, Protocol

from twisted.internet import defer
from twisted.logger import Logger
from zope.interface import implementer

from namesrv.interfaces import (Answer, Hold, ICachedAnswerPolicy, IQueueingDispatcher, IRemotingConnection,
                                Refusal)
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import RemotingCommand
from namesrv.dispatch.classes import ADMIN_READ, ADMIN_WRITE, ALL_CLASSES, BROKER_CONTROL, ROUTE_READ, RequestClassifier
from namesrv.timing.scheduler import CONTROL, TurnScheduler

if TYPE_CHECKING:   # types only
    from namesrv.config.live import NamesrvConfig
    from namesrv.dispatch.registry import ProcessorRegistry

log = Logger()

OVERLOAD_REMARK = "[OVERLOAD]system busy, start flow control for a while"

#: class -> (count property, bytes property or None); a value of 0 means unlimited.
LIMIT_PROPERTIES = {
    ROUTE_READ: ("routeReadMaxInFlight", None),
    BROKER_CONTROL: ("brokerControlMaxInFlight", "brokerControlMaxInFlightBytes"),
    ADMIN_READ: ("adminReadMaxInFlight", None),
    ADMIN_WRITE: ("adminWriteMaxInFlight", None),
}

#: Requests whose only effect is to tie a broker's liveness to their connection: not worth
#: running once that connection has closed (housekeeping for it has already run).
_LIVENESS_CODES = frozenset((RequestCode.REGISTER_BROKER, RequestCode.BROKER_HEARTBEAT))

#: a request waiting its turn: (request, connection, its answer to come or None if oneway, body size, when queued)
Queued = tuple[RemotingCommand, IRemotingConnection, Optional[defer.Deferred[Optional[RemotingCommand]]], int, float]


class RejectionListener(Protocol):
    """Told of every request a guard refused (the metrics: namesrv/security/wiring.py's GuardListeners)."""

    def rejected(self, request_class: str, reason: str) -> None: ...


class GuardListener(RejectionListener, Protocol):
    """Also told how long each queued request waited for its turn."""

    def queue_waited(self, request_class: str, seconds: float) -> None: ...


def _size(request: RemotingCommand) -> int:
    return len(request.body) if request.body else 0


@implementer(ICachedAnswerPolicy)
class ClassLimitPolicy:
    """Bounded admission per request class (limits are read live from the config)."""

    def __init__(self, classifier: RequestClassifier, config: NamesrvConfig,
                 listeners: Iterable[RejectionListener] = ()) -> None:
        self.classifier = classifier
        self.config = config
        self.listeners = list(listeners)
        self.in_flight = dict.fromkeys(ALL_CLASSES, 0)
        self.in_flight_bytes = dict.fromkeys(ALL_CLASSES, 0)
        self.waiting = dict.fromkeys(ALL_CLASSES, 0)
        self.waiting_bytes = dict.fromkeys(ALL_CLASSES, 0)
        self.refused = dict.fromkeys(ALL_CLASSES, 0)

    def limits(self, request_class: str) -> tuple[int, int]:
        count_name, bytes_name = LIMIT_PROPERTIES[request_class]
        count = self.config.get(count_name)
        max_bytes = self.config.get(bytes_name) if bytes_name else 0
        return count, max_bytes

    def would_admit(self, request_class: str, size: int) -> bool:
        count, max_bytes = self.limits(request_class)
        held = self.in_flight[request_class] + self.waiting[request_class]
        if count and held >= count:
            return False
        held_bytes = self.in_flight_bytes[request_class] + self.waiting_bytes[request_class]
        # One request bigger than the whole budget still passes when nothing else is held.
        if max_bytes and held_bytes and held_bytes + size > max_bytes:
            return False
        return True

    # -- the scheduler's side ----------------------------------------------------
    def enqueued(self, request_class: str, size: int) -> None:
        self.waiting[request_class] += 1
        self.waiting_bytes[request_class] += size

    def dequeued(self, request_class: str, size: int) -> None:
        self.waiting[request_class] -= 1
        self.waiting_bytes[request_class] -= size

    # -- IRequestPolicy ----------------------------------------------------------
    def allows_cached_answer(self, code: int) -> bool:
        """A cached answer is written at once and holds nothing in flight: always admitted."""
        return True

    def check(self, request: RemotingCommand, connection: IRemotingConnection) -> Optional[Refusal]:
        request_class = self.classifier.classify(request.code)
        size = _size(request)
        if not self.would_admit(request_class, size):
            n = self.refused[request_class] = self.refused[request_class] + 1
            for listener in self.listeners:
                listener.rejected(request_class, "overload")
            if n == 1 or n % 1000 == 0:
                log.warn("{cls} over its limit ({held} held): answering SYSTEM_BUSY ({n} so far)",
                         cls=request_class, held=self.in_flight[request_class] + self.waiting[request_class], n=n)
            return (ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK)
        self.in_flight[request_class] += 1
        self.in_flight_bytes[request_class] += size
        return None

    def done(self, request: RemotingCommand, connection: IRemotingConnection, response_code: int) -> None:
        request_class = self.classifier.classify(request.code)
        self.in_flight[request_class] -= 1
        self.in_flight_bytes[request_class] -= _size(request)


@implementer(IQueueingDispatcher)
class PriorityDispatcher:
    """The connections' dispatcher: route reads at once, the other classes in time-boxed turns."""

    def __init__(self, registry: ProcessorRegistry, classifier: RequestClassifier, limits: ClassLimitPolicy,
                 config: NamesrvConfig, scheduler: TurnScheduler, timer: Callable[[], float] = time.perf_counter,
                 immediate: Iterable[str] = (ROUTE_READ,), listeners: Iterable[GuardListener] = ()) -> None:
        self.registry = registry
        self.classifier = classifier
        self.limits = limits
        self.config = config
        self.timer = timer   # for the time a request waited in its queue
        self.immediate = frozenset(immediate)
        self.listeners = list(listeners)
        self.queues: dict[str, collections.deque[Queued]] = {
            cls: collections.deque() for cls in ALL_CLASSES if cls not in self.immediate}
        self._order = collections.deque(self.queues)
        self._job = scheduler.job(self._turns, CONTROL, "the isolation dispatcher")
        self.dropped = 0
        #: ``hold(request)`` -> None, or a Deferred to wait for before the request runs; its class
        #: waits meanwhile (the read workers hold a large registration until their replicas are fresh)
        self.holds: list[Hold] = []
        self._held: set[str] = set()     # classes waiting on a hold

    def enabled(self) -> bool:
        return self.config.isolationSchedulerEnable

    def dispatch(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        request_class = self.classifier.classify(request.code)
        if (request_class in self.immediate or not self.enabled()
                or self.registry.processor_for(request.code) is None):
            return self.registry.dispatch(request, connection)
        size = _size(request)
        if not self.limits.would_admit(request_class, size):
            return self.registry.dispatch(request, connection)  # the policy answers SYSTEM_BUSY
        self.limits.enqueued(request_class, size)
        answer: Optional[defer.Deferred[Optional[RemotingCommand]]] = None if request.is_oneway else defer.Deferred()
        self.queues[request_class].append((request, connection, answer, size, self.timer()))
        self._schedule()
        return answer

    def add_hold(self, hold: Hold) -> None:
        self.holds.append(hold)

    def pending(self) -> int:
        return sum(len(queue) for queue in self.queues.values())

    def _schedule(self) -> None:
        self._job.wake()

    def _turns(self) -> Iterator[None]:
        """The job: one queued request per step, the classes in turn, until none may run."""
        while self._runnable():
            request_class = self._order[0]
            self._order.rotate(-1)
            queue = self.queues[request_class]
            if queue and request_class not in self._held:
                if self._hold(request_class, queue[0][0]):
                    continue
                self._run(request_class, *queue.popleft())
                yield

    def _runnable(self) -> bool:
        return any(queue for request_class, queue in self.queues.items() if request_class not in self._held)

    def _hold(self, request_class: str, request: RemotingCommand) -> bool:
        """True when a hold asks ``request`` (and its class) to wait; the class runs again after it."""
        for hold in self.holds:
            waiting = hold(request)
            if waiting is not None and not waiting.called:
                self._held.add(request_class)

                def release(ignored: object) -> None:
                    self._held.discard(request_class)
                    self._schedule()

                waiting.addBoth(release)
                return True
        return False

    def _run(self, request_class: str, request: RemotingCommand, connection: IRemotingConnection,
             answer: Optional[defer.Deferred[Optional[RemotingCommand]]], size: int, queued_at: float) -> None:
        self.limits.dequeued(request_class, size)
        waited = self.timer() - queued_at
        for listener in self.listeners:
            listener.queue_waited(request_class, waited)
        if request.code in _LIVENESS_CODES and connection.closing:
            self.dropped += 1
            if answer is not None:
                answer.callback(None)
            return
        try:
            result = self.registry.dispatch(request, connection)
        except Exception as e:  # the registry answers processor failures itself; this is a policy bug
            log.failure("dispatching {code} failed", code=request.code)
            result = None if request.is_oneway else request.make_response(ResponseCode.SYSTEM_ERROR, str(e))
        if answer is None:
            if isinstance(result, defer.Deferred):
                result.addErrback(lambda failure: log.failure("oneway request failed", failure))
            return
        if isinstance(result, defer.Deferred):
            result.chainDeferred(answer)
        else:
            answer.callback(result)

    def stop(self) -> None:
        """Forget queued work at shutdown (their connections are being closed)."""
        self._job.stop()
        for request_class, queue in self.queues.items():
            while queue:
                request, connection, answer, size, _ = queue.popleft()
                self.limits.dequeued(request_class, size)
                if answer is not None:
                    answer.callback(None)
