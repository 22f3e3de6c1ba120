"""The remoting port as an endpoint and a child service: where its listening socket comes
from (a new one, or the one a takeover hands over) and who accepts on it (this process, or
only its read workers).

One listening socket serves the whole server: read workers inherit it and a takeover passes
it to the next main process (``sharedport.listening_socket`` says why one and not one per
process). Because other processes may hold it, stopping closes only our descriptor, never
``shutdown()``: on Linux that would stop the socket listening for every process holding it.
"""

from twisted.application import service
from twisted.application.internet import StreamServerEndpointService
from twisted.internet import defer
from twisted.internet.interfaces import IListeningPort, IStreamServerEndpoint
from zope.interface import implementer

from namesrv.server.sharedport import adopt_listening, close_listening, listening_socket, socket_address


@implementer(IListeningPort)
class RemotingPort:
    """The listening socket, accepted from by this process (``accepting``) or only held.

    ``stopReading``/``startReading`` pause accepting here (a takeover's drain); ``hold()``
    stops accepting for good while the socket stays open (exclusive read workers).
    """

    def __init__(self, reactor, sock, factory, accept=True):
        self.reactor = reactor
        self.socket = sock
        self.factory = factory
        self._accepting = adopt_listening(reactor, sock, factory) if accept else None

    @property
    def accepting(self):
        return self._accepting is not None

    def getHost(self):
        return socket_address(self.socket)

    def startListening(self):
        pass   # listening from construction on

    def stopReading(self):
        if self._accepting is not None:
            self._accepting.stopReading()

    def startReading(self):
        if self._accepting is not None:
            self._accepting.startReading()

    def accept(self):
        """Accept here again (exclusive read workers: none of them listens, e.g. the only one died)."""
        if self._accepting is None:
            self._accepting = adopt_listening(self.reactor, self.socket, self.factory)

    def hold(self):
        """Stop accepting here; the socket (and its queue) stay open for the read workers."""
        accepting, self._accepting = self._accepting, None
        if accepting is not None:
            return close_listening(accepting)

    def stopListening(self):
        """Close our descriptors; the socket lives on in any other process holding it."""
        stopped = self.hold()
        self.socket.close()
        return stopped


@implementer(IStreamServerEndpoint)
class RemotingEndpoint:
    """``bindAddress:listenPort`` as an endpoint.

    ``inherit``: a callable returning a Deferred that fires with a listening socket to use
    instead of a new one (a takeover's), or None. ``hold``: do not accept on a new socket
    (exclusive read workers accept on it); a taken-over socket is accepted from until the
    caller ``hold()``s it, so nothing waits in its queue while the new workers start.
    """

    def __init__(self, reactor, port, interface, backlog, hold=False, inherit=None):
        self.reactor = reactor
        self.port = port
        self.interface = interface
        self.backlog = backlog
        self.hold = hold
        self.inherit = inherit

    def accept_here(self):
        """A new socket is accepted from by this process too (a restart with tables to serve already)."""
        self.hold = False

    def listen(self, factory):
        inherited = defer.maybeDeferred(self.inherit) if self.inherit is not None else defer.succeed(None)
        return inherited.addCallback(self._listen, factory)

    def _listen(self, inherited, factory):
        if inherited is not None:
            port = RemotingPort(self.reactor, inherited, factory)
        else:
            sock = listening_socket(self.port, self.interface, self.backlog)
            port = RemotingPort(self.reactor, sock, factory, accept=not self.hold)
        return port


class RemotingPortService(StreamServerEndpointService):
    """The remoting port as a child service.

    It listens in ``startService``, not ``privilegedStartService``: the NameServer restores its
    tables first (port 9876 needs no privilege). ``on_listening(port)`` is called once the port
    listens (``port`` is set by then). A port that cannot be opened fails the start; a failed
    takeover goes to ``on_failure`` and nothing listens.
    """

    name = "remoting port"

    def __init__(self, endpoint, factory, on_listening, on_failure):
        StreamServerEndpointService.__init__(self, endpoint, factory)
        self.on_listening = on_listening
        self.on_failure = on_failure
        self.port = None

    def privilegedStartService(self):
        service.Service.privilegedStartService(self)

    def startService(self):
        service.Service.startService(self)
        raised = []
        self._waitingForPort = self.endpoint.listen(self.factory)
        self._waitingForPort.addCallbacks(self._listening, self._failed, errbackArgs=(raised,))
        if raised:
            raised[0].raiseException()
        raised.append(None)   # from here on, failures are asynchronous

    def _listening(self, port):
        self.port = port
        self.on_listening(port)
        return port

    def _failed(self, failure, raised):
        if failure.check(defer.CancelledError):
            return None
        if not raised:
            raised.append(failure)   # synchronously: the start fails
        else:
            self.on_failure(failure)
        return None

    def stopService(self):
        self.port = None
        return StreamServerEndpointService.stopService(self)
