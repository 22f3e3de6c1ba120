"""Counting the requests being answered later (a Deferred answer), so a takeover waits for them."""

from twisted.internet import defer
from twisted.python.components import proxyForInterface
from zope.interface import implementer

from namesrv.interfaces import IDispatcher, IInFlightDispatcher


@implementer(IInFlightDispatcher)
class InFlightDispatcher(proxyForInterface(IDispatcher, "dispatcher")):
    """Wraps the connections' dispatcher; ``count`` is the number of answers still to come.

    Most answers are immediate; the ones that are not (a registration decoded in a thread, a
    request waiting in the priority scheduler, a KV write waiting for the disk) must leave
    before their connection moves to another process, or the client would wait forever.
    """

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        self.count = 0

    def dispatch(self, request, connection):
        answer = self.dispatcher.dispatch(request, connection)
        if isinstance(answer, defer.Deferred):
            self.count += 1
            answer.addBoth(self._answered)
        return answer

    def _answered(self, result):
        self.count -= 1
        return result
