"""Request code → processor, with one place that turns failures into answers."""

import time
from types import ModuleType
from typing import Callable, Iterable, Optional, Sequence

from twisted.internet import defer
from twisted.logger import Logger
from twisted.plugin import getPlugins
from twisted.python.failure import Failure
from zope.interface.verify import verifyObject

from namesrv.dispatch.observers import AnswerObservers, RequestObservers
from namesrv.dispatch.refusals import RefusalLog
from namesrv.interfaces import (Answer, ICachedAnswerPolicy, IControllerProcessorFactory, IDispatcher,
                                IPeerScopedPolicy, IRemotingConnection, IRequestObserver, IRequestPolicy,
                                IRequestProcessor, IRequestProcessorFactory)
from namesrv.observe.eventlog import NullEventLog
from namesrv.plugin import CONTROLLER_PORT, NAMESRV_PORT
from namesrv.protocol.codes import ResponseCode, request_name
from namesrv.protocol.command import HeaderFieldError, RemotingCommand
from zope.interface import implementer

log = Logger()


class ProcessorConflictError(Exception):
    """Two processors claim one request code: a start-up error naming both."""


def load_processor_factories(package: Optional[ModuleType] = None,
                             port: str = NAMESRV_PORT) -> list[IRequestProcessorFactory]:
    """Every processor dropin found in ``package`` (default ``twisted.plugins``) for ``port``: the name
    server's (IRequestProcessorFactory) or the controller's (IControllerProcessorFactory)."""
    if package is None:
        import twisted.plugins as package   # the dropins' package, imported only when asked (twistd --help)
    controller = port == CONTROLLER_PORT
    factories = [factory for factory in getPlugins(IRequestProcessorFactory, package)
                 if IControllerProcessorFactory.providedBy(factory) == controller]
    return sorted(factories, key=lambda factory: factory.name)


@implementer(IDispatcher)
class ProcessorRegistry:
    """Dispatches each request to the processor that declared its code, after the policies.

    Unknown codes answer REQUEST_CODE_NOT_SUPPORTED with the 5.x remark (4.9.8 sent
    nothing and let the client time out). Oneway requests are processed but never
    answered, errors included, as in Java. The policies are fixed when it is built
    (namesrv/dispatch/chain.py); observers may join later (the metrics, the status page).
    """

    def __init__(self, processors: Iterable[IRequestProcessor], events: Optional[IRequestObserver] = None,
                 timer: Callable[[], float] = time.perf_counter, policies: Iterable[IRequestPolicy] = (),
                 observers: Iterable[IRequestObserver] = (), refusals: Optional[RefusalLog] = None) -> None:
        self.events = events if events is not None else NullEventLog()
        self.refusals = refusals if refusals is not None else RefusalLog()
        self.timer = timer
        self.policies = tuple(policies)
        for policy in self.policies:
            verifyObject(IRequestPolicy, policy)
        #: an answer may be replayed only to the same frame from the same host (IPeerScopedPolicy: the ACL check)
        self.answers_per_host = any(IPeerScopedPolicy.providedBy(policy) for policy in self.policies)
        #: every answer is counted here (metrics, the event log); answers replayed by the answer cache
        #: or given by a read worker are told to it too
        self.observers = RequestObservers([self.events, *observers])
        #: told of each answer just before it leaves (the status page's versions, read workers' generation)
        self.answer_observers = AnswerObservers()
        self.processors = tuple(processors)
        self._cache_allowed: dict[int, bool] = {}
        self._by_code: dict[int, IRequestProcessor] = {}
        for processor in self.processors:
            verifyObject(IRequestProcessor, processor)
            for code in processor.codes:
                other = self._by_code.get(code)
                if other is not None:
                    raise ProcessorConflictError(
                        "request code %d (%s) is claimed by both processor %r and processor %r"
                        % (code, request_name(code), other.name, processor.name))
                self._by_code[code] = processor

    def allows_cached_answer(self, code: int) -> bool:
        """May an answer to ``code`` be replayed without running the policies again?

        Only if every policy says so (ICachedAnswerPolicy); a policy that does not provide it (the
        ACL check, third-party policies) keeps every request on the slow path.
        """
        allowed = self._cache_allowed.get(code)
        if allowed is None:
            allowed = self._cache_allowed[code] = self._by_code.get(code) is not None and all(
                ICachedAnswerPolicy.providedBy(policy) and policy.allows_cached_answer(code)
                for policy in self.policies)
        return allowed

    def processor_for(self, code: int) -> Optional[IRequestProcessor]:
        return self._by_code.get(code)

    def dispatch(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        """Answer ``request``: a response command, ``None`` (oneway), or a Deferred of either."""
        started = self.timer()
        processor = self._by_code.get(request.code)
        if processor is None:
            response = request.make_response(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type %d not supported" % request.code)
            return self._finish(request, response, connection, started)
        passed: list[IRequestPolicy] = []
        for policy in self.policies:
            refused = policy.check(request, connection)
            if refused is not None:
                self._release(passed, request, connection, refused[0])
                return self._finish(request, request.make_response(*refused), connection, started)
            passed.append(policy)
        rejected = processor.reject_request(request)
        if rejected is not None:
            code, remark = rejected
            self._release(passed, request, connection, code)
            return self._finish(request, request.make_response(code, remark), connection, started)
        try:
            result = processor.process_request(request, connection)
        except Exception as e:
            result = self._error_response(request, processor, e)
        if isinstance(result, defer.Deferred):
            result.addErrback(self._failed, request, processor)
            result.addCallback(self._finish_later, request, connection, started, passed)
            return result
        if passed:
            self._release(passed, request, connection, result.code if result is not None else -1)
        return self._finish(request, result, connection, started)

    def _finish_later(self, response: Optional[RemotingCommand], request: RemotingCommand,
                      connection: IRemotingConnection, started: float,
                      passed: Sequence[IRequestPolicy]) -> Optional[RemotingCommand]:
        self._release(passed, request, connection, response.code if response is not None else -1)
        return self._finish(request, response, connection, started)

    @staticmethod
    def _release(passed: Sequence[IRequestPolicy], request: RemotingCommand, connection: IRemotingConnection,
                 response_code: int) -> None:
        for policy in passed:
            policy.done(request, connection, response_code)

    def _failed(self, failure: Failure, request: RemotingCommand, processor: IRequestProcessor) -> RemotingCommand:
        return self._error_response(request, processor, failure.value, failure)

    def _error_response(self, request: RemotingCommand, processor: IRequestProcessor, error: Optional[BaseException],
                        failure: Optional[Failure] = None) -> RemotingCommand:
        if isinstance(error, HeaderFieldError):
            remark = str(error)
        else:
            remark = "%s: %s" % (type(error).__name__, error)
            log.failure("processor {name} failed on {code} ({code_name})", failure,
                        name=processor.name, code=request.code, code_name=request_name(request.code))
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark)

    def _finish(self, request: RemotingCommand, response: Optional[RemotingCommand], connection: IRemotingConnection,
                started: float) -> Optional[RemotingCommand]:
        micros = int((self.timer() - started) * 1e6)
        response_code = response.code if response is not None else -1
        self.observers.record_request(request.code, response_code, micros, connection.peer)
        if response_code > 0:
            self.refusals.note(request, response, connection.peer)
        self.answer_observers.answered(request, response_code, connection)
        if request.is_oneway:
            return None
        return response
