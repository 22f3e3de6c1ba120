"""Answers still to come are counted until they leave."""

from twisted.internet import defer
from zope.interface import implementer
from zope.interface.verify import verifyObject

from namesrv.dispatch.inflight import InFlightDispatcher
from namesrv.interfaces import IDispatcher, IInFlightDispatcher


@implementer(IDispatcher)
class Dispatcher:
    def __init__(self):
        self.pending = []

    def dispatch(self, request, connection):
        if request == "later":
            d = defer.Deferred()
            self.pending.append(d)
            return d
        return "answer"


def test_only_deferred_answers_are_counted_until_they_fire_or_fail():
    inner = Dispatcher()
    counted = InFlightDispatcher(inner)
    assert counted.dispatch("now", None) == "answer" and counted.count == 0
    first, second = counted.dispatch("later", None), counted.dispatch("later", None)
    assert counted.count == 2
    inner.pending[0].callback("a")
    assert counted.count == 1
    second.addErrback(lambda f: None)
    inner.pending[1].errback(RuntimeError("x"))
    assert counted.count == 0
    assert verifyObject(IInFlightDispatcher, counted)
    assert not hasattr(counted, "pending")   # only IDispatcher shows through, never the rest of the wrapped one
