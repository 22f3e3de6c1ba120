"""Handing a broker's connection from a read worker to the main process (SCM_RIGHTS): the sending side.

A broker's connection carries its registrations: its whole topic table every 30 s,
all of it for the main process. Passing those bytes through a worker costs the worker
reactor time that its route reads then wait for, and a second hop for the broker. So
when a worker sees REGISTER_BROKER (BROKER_HEARTBEAT, QUERY_DATA_VERSION) on a connection with nothing
outstanding, it stops reading it and sends the socket itself, with the bytes it has
read but not handled, to the main process, which adopts it as if it had accepted it:
from then on the broker talks to the main process only, and closing the connection runs
the usual housekeeping there. The worker closes its copy without shutting the socket
down.

A connection that started TLS is never handed over: its session state (keys, sequence
numbers) lives in the worker's OpenSSL object, not in the socket, so the main process
could not continue it. The worker keeps such a broker and relays its frames over that
connection's forwarded connection (connections.py); the main process binds the
registration to the forwarded connection, and a close on either side closes the other,
which runs the usual housekeeping. The cost: the broker's registrations pass through the
worker, and a worker that dies takes its TLS brokers' connections with it (they reconnect
and register again, as after any lost connection).

One handoff is one short UNIX connection (channel/unix.py): the descriptor travels with
the first bytes (``HANDOFF <peer>\\n`` then the unread bytes), and the connection's end marks
the end. The main process's end is main/handoff.py. A takeover (namesrv/handover) moves the
old main process's connections with the same ``detach``.
"""

import os

from twisted.internet import protocol
from twisted.internet.interfaces import ISSLTransport
from twisted.logger import Logger

from namesrv.protocol.codec import FrameDecodeError, decode_header
from namesrv.protocol.codes import RequestCode
from namesrv.readworkers.channel.unix import HANDOFF, connect_unix, first_line

log = Logger()

#: requests only a broker sends (4.9 brokers ask QUERY_DATA_VERSION before registering when
#: forceRegister is off): their connection is handed to the main process
HANDOFF_CODES = frozenset([RequestCode.REGISTER_BROKER, RequestCode.BROKER_HEARTBEAT,
                           RequestCode.QUERY_DATA_VERSION])


def can_hand_off(connection):
    """A plain TCP connection with nothing in flight: no forwarded request, no read waiting for a fresh
    replica (its answer would have nowhere to go), no unsent answer."""
    transport = connection.transport
    if connection.upstream is not None or connection.paused or connection.closing:
        return False
    if getattr(connection, "waiting_reads", 0):
        return False
    if ISSLTransport.providedBy(transport):
        return False
    if not hasattr(transport, "fileno") or not hasattr(transport, "stopReading"):
        return False
    return not getattr(transport, "dataBuffer", b"") and not getattr(transport, "_tempDataBuffer", None)


class HandoffSender(protocol.Protocol):
    """Sends one socket (a duplicate descriptor, closed once sent) and its unread bytes."""

    def __init__(self, descriptor, peer, unread):
        self.descriptor = descriptor
        self.peer = peer
        self.unread = unread
        self.finished = False   # the descriptor is sent (or given up): a draining worker may exit

    def connectionMade(self):
        self.transport.sendFileDescriptor(self.descriptor)
        self.transport.write(first_line(HANDOFF, self.peer))
        unread, self.unread = self.unread, b""   # the transport has them now (see unix._OneProtocol)
        if unread:
            self.transport.write(unread)
        self.transport.loseConnection()

    def connectionLost(self, reason=None):
        self._close_descriptor()

    def connect_failed(self, reason):
        self.unread = b""
        log.warn("cannot hand {peer}'s connection to the main process: {why}", peer=self.peer,
                 why=reason.getErrorMessage())
        self._close_descriptor()   # the socket closes with it: the broker reconnects

    def _close_descriptor(self):
        self.finished = True
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None


def started_request(reader):
    """The request whose frame has begun in ``reader`` (a FrameReader) and whose header is in, once per
    frame; None otherwise, and for a header that does not decode (the whole frame is answered as usual).

    A broker's first REGISTER_BROKER after it connects is read here up to its header only: the rest
    (the topic table, the bulk of the frame) stays in the socket and goes with it, read once, by the main process,
    instead of being read here, copied into a hand-off and read again there."""
    started = reader.started_header()
    if started is None:
        return None
    try:
        request = decode_header(*started)
    except FrameDecodeError:
        return None
    return None if request.is_response else request


def hand_off(reactor, path, connection, unread):
    """Send ``connection``'s socket and ``unread`` to the main process at ``path``; close our copy."""
    transport = connection.transport
    transport.stopReading()
    descriptor = os.dup(transport.fileno())
    sender = HandoffSender(descriptor, connection.peer, unread)
    connect_unix(reactor, path, sender, sender.connect_failed)
    transport._shouldShutdown = False   # close our descriptor only: the socket lives on in the main process
    transport.loseConnection()
    return sender


def stop_reading(connection):
    """Read nothing more from ``connection`` (a handover moves it at a frame boundary): bytes not
    yet read stay in the socket and travel with it. The protocol stops being its transport's
    producer, so a drained write buffer cannot resume reading."""
    transport = connection.transport
    if transport is None or not hasattr(transport, "stopReading"):
        return
    if getattr(transport, "producer", None) is connection:
        transport.unregisterProducer()
    transport.stopReading()


def movable(connection):
    """A plain TCP connection whose socket can change process (TLS sessions cannot)."""
    transport = connection.transport
    return (transport is not None and not ISSLTransport.providedBy(transport)
            and hasattr(transport, "fileno") and hasattr(transport, "stopReading"))


def quiet(connection):
    """Nothing left to write to the peer: every answer so far has left our buffers."""
    transport = connection.transport
    return not getattr(transport, "dataBuffer", b"") and not getattr(transport, "_tempDataBuffer", None)


def detach(connection):
    """Stop serving ``connection`` here: a duplicate of its socket and the bytes read but not
    handled (a partial frame, or frames a paused connection had not handled yet). Our copy is
    closed without shutting the socket down.

    Call it from a timer or later I/O event than the ``stop_reading`` of the connection: Twisted
    delivers every read event of the poll batch being dispatched, even for a descriptor that
    stopped reading during that batch, and a closing connection drops what it reads."""
    transport = connection.transport
    stop_reading(connection)
    descriptor = os.dup(transport.fileno())
    unread = connection.unread()
    connection.moved()
    transport._shouldShutdown = False
    transport.loseConnection()
    return descriptor, unread


def hand_off_idle(reactor, path, connection):
    """Hand a connection with nothing in flight (a draining worker's) to the main process at ``path``."""
    descriptor, unread = detach(connection)
    sender = HandoffSender(descriptor, connection.peer, unread)
    connect_unix(reactor, path, sender, sender.connect_failed)
    return sender
