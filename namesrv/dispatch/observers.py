"""Who hears of answered requests: the metrics, the event log, a read worker's counts, the status page.

``RequestObservers`` is the registry's list of them; the answer cache and the read-worker pool tell it of
answers given elsewhere (replayed from the cache, counted in a worker) through the same object, so that
metrics and the event log count every answer once, whoever gave it.
"""

from typing import Iterable, Iterator

from zope.interface import implementer

from namesrv.interfaces import IAnswerObserver, IBulkRequestObserver, IRemotingConnection, IRequestObserver
from namesrv.protocol.command import RemotingCommand


@implementer(IBulkRequestObserver)
class RequestObservers:
    """Every IRequestObserver of one port, told of each answer (or of ``count`` at once)."""

    def __init__(self, observers: Iterable[IRequestObserver] = ()) -> None:
        self._observers: list[IRequestObserver] = []
        for observer in observers:
            self.add(observer)

    def add(self, observer: IRequestObserver) -> None:
        if not IRequestObserver.providedBy(observer):
            raise TypeError("%r does not provide IRequestObserver" % (observer,))
        self._observers.append(observer)

    def __iter__(self) -> Iterator[IRequestObserver]:
        return iter(self._observers)

    def record_request(self, code: int, response_code: int, micros: int, peer: str) -> None:
        for observer in self._observers:
            observer.record_request(code, response_code, micros, peer)

    def record_requests(self, code: int, response_code: int, count: int, micros: int, peer: str) -> None:
        """``count`` answers at once: in bulk to those that take it, one by one (each with its share of
        ``micros``) to the others."""
        for observer in self._observers:
            if IBulkRequestObserver.providedBy(observer):
                observer.record_requests(code, response_code, count, micros, peer)
            else:
                share = micros // max(1, count)
                for _ in range(count):
                    observer.record_request(code, response_code, share, peer)


class AnswerObservers:
    """Every IAnswerObserver of one registry, told of each answer just before it leaves."""

    def __init__(self) -> None:
        self._observers: list[IAnswerObserver] = []

    def add(self, observer: IAnswerObserver) -> None:
        if not IAnswerObserver.providedBy(observer):
            raise TypeError("%r does not provide IAnswerObserver" % (observer,))
        self._observers.append(observer)

    def answered(self, request: RemotingCommand, response_code: int, connection: IRemotingConnection) -> None:
        for observer in self._observers:
            observer.answered(request, response_code, connection)
