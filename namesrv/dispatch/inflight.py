"""Counting the requests being answered later (a Deferred answer), so a takeover waits for them."""

from typing import TypeVar

from twisted.internet import defer
from twisted.python.components import proxyForInterface
from zope.interface import implementer

from namesrv.interfaces import Answer, IDispatcher, IInFlightDispatcher, IRemotingConnection
from namesrv.protocol.command import RemotingCommand

T = TypeVar("T")


@implementer(IInFlightDispatcher)
class InFlightDispatcher(proxyForInterface(IDispatcher, "dispatcher")):  # type: ignore[misc]  # made at run time
    """Wraps the connections' dispatcher; ``count`` is the number of answers still to come.

    Most answers are immediate; the ones that are not (a registration decoded in a thread, a
    request waiting in the priority scheduler, a KV write waiting for the disk) must leave
    before their connection moves to another process, or the client would wait forever.
    """

    def __init__(self, dispatcher: IDispatcher) -> None:
        self.dispatcher = dispatcher
        self.count = 0

    def dispatch(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        answer = self.dispatcher.dispatch(request, connection)
        if isinstance(answer, defer.Deferred):
            self.count += 1
            answer.addBoth(self._answered)
        return answer

    def _answered(self, result: T) -> T:
        self.count -= 1
        return result
