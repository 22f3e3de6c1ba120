"""The old process's end of a takeover: one conversation on its control socket.

States: ``hello`` (waiting for the new process to introduce itself) → in version 2, ``precopy``
(the tables sent while everything is still served; waiting for ``precopied``) → ``draining`` (workers
hand their connections in, answers in flight finish) → ``sent`` (tables and listening
socket sent; waiting for ``ready``) → ``done`` (every connection sent; once the new process
closes the conversation, the process exits). In version 2 the tables are copied twice: whole
while everything is still served (``precopy``; at 100,000 topics this takes a few hundred ms on
the new process, which clients do not wait for), then, once drained, only what changed since
(``state`` with ``delta``). If the new process goes away or refuses before ``ready``, the old
one resumes serving (``server.resume``; during the precopy nothing was stopped: ``abandon``).
After ``ready`` the connections are the new process's; should it die before it closes the
conversation (or while closing it), nobody would serve: the old one, which still holds the
listening socket, serves again (its clients whose connections went with the dead process
reconnect; peers.py).
"""

import os
import socket

from twisted.internet import protocol
from twisted.internet.interfaces import IFileDescriptorReceiver
from twisted.logger import Logger
from zope.interface import implementer

from namesrv.handover import messages, peers
from namesrv.handover.messages import HandoverProtocolError, MessageReader, choose_version, encode
from namesrv.timing.drainloop import MAIN_GRACE, DrainLoop

#: how long ``ready`` may take (the drain before it: timing/drainloop.py)
READY_TIMEOUT = 60.0
#: descriptors per sendmsg when connections move (the receiver's ancillary buffer holds 1,000). The new
#: process adopts one batch per reactor turn, and a client it adopted first waits for the batch of brokers
#: adopted in the same turn as its first read (bench/results/design-figures.md#takeover-batches)
FDS_PER_SEND = 50
#: how long the move of every connection may block the old process, which serves nothing by then
SEND_TIMEOUT = 30.0
#: after ``done``, how long the new process may take to close the conversation
DONE_TIMEOUT = 10.0


@implementer(IFileDescriptorReceiver)
class HandingSession(protocol.Protocol):
    """``server`` provides: ``identity`` (InstanceIdentity), ``busy`` (a takeover already runs),
    ``precopy()`` (snapshot bytes, changes tracked from now), ``begin()``, ``settled()``, ``tables()``
    (snapshot bytes, KV flushed), ``changes()`` (the last copy's fields: ``delta`` (what changed since
    the precopy) or ``routes``, and ``registrations``), ``abandon()``, ``listen_fd()``,
    ``detach_clients()`` and then ``detach_brokers()`` → (sockets, closed), ``release(sockets)``, ``resume(why)``,
    ``finished(moved, closed)``."""

    log = Logger()

    #: called with this session once its conversation has ended (HandingFactory keeps the open ones)
    factory_forget = staticmethod(lambda session: None)

    def __init__(self, server, clock, is_running=peers.running):
        self.server = server
        self.clock = clock
        self.is_running = is_running
        self.reader = MessageReader()
        self.state = "hello"
        self.version = None
        self.peer_pid = None
        self._drain_loop = DrainLoop(self._settled, self._drained, clock, MAIN_GRACE)
        self._ready_timeout = None
        self._sent = []   # descriptors queued on the transport: closed once it is gone
        self._done_timeout = None

    def connectionMade(self):
        self.peer_pid = peers.peer_pid(self.transport)   # the kernel's word; hello's pid otherwise

    def fileDescriptorReceived(self, descriptor):
        os.close(descriptor)   # the new process never sends us any

    def dataReceived(self, data):
        try:
            for message in self.reader.feed(data):
                self._handle(message)
        except HandoverProtocolError as e:
            self.log.warn("takeover: unreadable message ({e}); closing", e=e)
            self.transport.loseConnection()

    def _handle(self, message):
        kind = message["kind"]
        if kind == messages.HELLO and self.state == "hello":
            return self._hello(message)
        if kind == messages.PRECOPIED and self.state == "precopy":
            return self._drain()
        if kind == messages.READY and self.state == "sent":
            return self._ready()
        self.log.warn("takeover: unexpected {kind} in state {state}; closing", kind=kind, state=self.state)
        self.transport.loseConnection()

    def _refuse(self, reason):
        self.log.warn("takeover refused: {reason}", reason=reason)
        self.state = "refused"
        self.transport.write(encode(messages.REFUSE, reason=reason))
        self.transport.loseConnection()

    def _hello(self, message):
        self.version = choose_version(message.get("versions") or ())
        if self.version is None:
            return self._refuse("no common takeover version: we speak %s, you offered %r"
                                % (list(messages.VERSIONS), message.get("versions")))
        record = {"instance": message.get("instance"), "listen": message.get("listen")}
        if not self.server.identity.owns(record):
            return self._refuse("this is %s, not %s" % (self.server.identity.describe(self.server.identity.as_record()),
                                                        self.server.identity.describe(record)))
        if self.server.busy:
            return self._refuse("a takeover is already under way")
        self.peer_pid = self.peer_pid or message.get("pid")
        if self.version >= 3:
            self.log.info("takeover by process {pid} (version {v}): first copy of the tables to a file, still "
                          "serving", pid=self.peer_pid, v=self.version)
            self.state = "precopy"
            self._ready_timeout = self.clock.callLater(READY_TIMEOUT, self._no_ready)
            self.server.precopy_file().addCallbacks(self._precopy_written, self._precopy_failed)
            return
        if self.version >= 2:
            self.log.info("takeover by process {pid} (version {v}): first copy of the tables, still serving",
                          pid=self.peer_pid, v=self.version)
            self.state = "precopy"
            self.transport.write(encode(messages.PRECOPY, version=self.version, routes=self.server.precopy()))
            self._ready_timeout = self.clock.callLater(READY_TIMEOUT, self._no_ready)
            return
        self._drain()

    def _precopy_written(self, descriptor):
        """The first copy's file is written (version 3): its descriptor goes with ``precopy``."""
        if self.state != "precopy" or self.transport is None or not self.transport.connected:
            os.close(descriptor)   # the new process left meanwhile (``abandon`` ran)
            return
        self._sent.append(descriptor)   # closed once the conversation ends
        self.transport.sendFileDescriptor(descriptor)
        self.transport.write(encode(messages.PRECOPY, version=self.version, snapshot=True))

    def _precopy_failed(self, failure):
        if self.state != "precopy":
            return
        self.log.warn("takeover: the first copy could not be written ({why})", why=failure.getErrorMessage())
        self.state = "refused"
        self.transport.write(encode(messages.REFUSE, reason="the first copy could not be written: %s"
                                    % failure.getErrorMessage()))
        self.transport.loseConnection()
        self.server.abandon("the first copy could not be written")

    def _drain(self):
        if self._ready_timeout is not None and self._ready_timeout.active():
            self._ready_timeout.cancel()
        self.log.info("takeover by process {pid} (version {v}): draining", pid=self.peer_pid, v=self.version)
        self.state = "draining"
        self.server.begin()
        self._drain_loop.start(now=True)

    def _settled(self, late):
        return self.server.settled() or late

    def _drained(self, late):
        if late:
            self.log.warn("takeover: drain not finished within {s}s; going on", s=MAIN_GRACE)
        descriptor = self.server.listen_fd()
        fields = self.server.changes() if self.version >= 2 else {"routes": self.server.tables()}
        self.transport.sendFileDescriptor(descriptor)
        self.transport.write(encode(messages.STATE, version=self.version, **fields))
        self.state = "sent"
        self._ready_timeout = self.clock.callLater(READY_TIMEOUT, self._no_ready)

    def _no_ready(self):
        self._ready_timeout = None
        self.log.warn("takeover: no ready within {s}s", s=READY_TIMEOUT)
        self.transport.loseConnection()

    def _ready(self):
        if self._ready_timeout is not None and self._ready_timeout.active():
            self._ready_timeout.cancel()
        # Clients first, sent before the brokers are even detached: each client is paused from the
        # drain until the new process reads its socket, a broker's next heartbeat is seconds away.
        sockets, closed = self.server.detach_clients()
        try:
            batched = can_send_now(self.transport)
            if batched:
                send_in_batches(self.transport, sockets)
            brokers, closed_brokers = self.server.detach_brokers()
            sockets, closed = sockets + brokers, closed + closed_brokers
            done = encode(messages.DONE, moved=len(sockets), closed=closed)
            if batched:
                send_in_batches(self.transport, brokers, done)
        except OSError as e:
            # Every connection is detached already (or is now): this process cannot serve them again.
            # Their clients reconnect (to the new process, which holds the listening socket).
            self.log.warn("takeover: moving the connections failed ({e}); their clients reconnect", e=e)
            brokers, _ = self.server.detach_brokers()
            self.server.release(sockets + brokers)
            self.state = "done"
            self.transport.loseConnection()
            return
        if not batched:
            for descriptor, peer, unread in sockets:
                self.transport.sendFileDescriptor(descriptor)
                self.transport.write(encode(messages.CONNECTION, peer=peer, unread=unread))
                self._sent.append(descriptor)
            self.transport.write(done)
        else:
            self.server.release(sockets)   # sent: our copies go
        self.state = "done"
        self.log.info("takeover: {n} connections moved to process {pid}, {c} closed", n=len(sockets),
                      pid=self.peer_pid, c=closed)
        self.server.finished(len(sockets), closed)
        # the new process closes the conversation once it has read everything; wait for that
        self._done_timeout = self.clock.callLater(DONE_TIMEOUT, self.transport.loseConnection)

    def stop(self):
        """This process stops (SIGTERM) in the middle of the conversation: end it, resuming nothing and
        exiting on nobody's word. The new process, finding it closed, starts on its own once this one has
        exited, or serves with the tables it has (taking.py). Without this the drain went on looking after
        the service had stopped, and asked the closed port for its socket (AttributeError, tools.stopstress)."""
        if self.state in ("refused", "failed", "stopped"):
            return
        self.state = "stopped"
        self._stop_timers()
        if self.transport is not None:
            self.transport.loseConnection()

    def _stop_timers(self):
        self._drain_loop.stop()
        for call in (self._ready_timeout, self._done_timeout):
            if call is not None and call.active():
                call.cancel()

    def connectionLost(self, reason=None):
        self._stop_timers()
        self.server.release([(d, None, None) for d in self._sent])
        self._sent = []
        self.factory_forget(self)
        if self.state == "precopy":
            self.state = "failed"
            self.server.abandon("the new process left before it restored the first copy")
        elif self.state in ("draining", "sent"):
            self.state = "failed"
            self.server.resume("the new process left before it was ready")
        elif self.state == "done":
            peers.gone_within(self.clock, self.peer_pid, is_running=self.is_running).addCallback(self._after_done)

    def _after_done(self, peer_gone):
        """The conversation closed after ``done``: exit, unless the new process died meanwhile."""
        if peer_gone:
            self.state = "failed"
            self.server.resume("the new process %s died while taking over" % self.peer_pid)
        else:
            self.server.exit()


def can_send_now(transport):
    """Whether ``send_in_batches`` may write on ``transport``'s socket: nothing queued before it."""
    return not (getattr(transport, "socket", None) is None or getattr(transport, "dataBuffer", b"")
                or getattr(transport, "_tempDataBuffer", None) or getattr(transport, "_sendmsgQueue", None))


def send_in_batches(transport, sockets, done=b""):
    """Send every (descriptor, peer, unread) as CONNECTION messages, up to ``FDS_PER_SEND`` descriptors per
    system call, then ``done``, on a transport that ``can_send_now``.

    Twisted sends one descriptor per ``sendmsg``, and the receiver's ``recvmsg`` stops at each: a
    thousand connections took a thousand reactor turns over there, each between two of its clients'
    reads, and no message could be read before the last descriptor had arrived, so clients waited for the
    whole move. Here a batch of descriptors rides on the first byte of its own messages. The old
    process serves nothing any more (every connection is detached), so the socket may block, bounded by
    ``SEND_TIMEOUT``."""
    sock = transport.socket
    sock.settimeout(SEND_TIMEOUT)
    try:
        for start in range(0, len(sockets), FDS_PER_SEND):
            batch = sockets[start:start + FDS_PER_SEND]
            payload = b"".join(encode(messages.CONNECTION, peer=peer, unread=unread) for _, peer, unread in batch)
            sent = socket.send_fds(sock, [payload], [descriptor for descriptor, _, _ in batch])
            sock.sendall(payload[sent:])
        if done:
            sock.sendall(done)
    finally:
        sock.setblocking(False)


class HandingFactory(protocol.Factory):
    """The control socket's conversations; ``sessions`` those still open (``stop`` ends them)."""

    noisy = False

    def __init__(self, server, clock):
        self.server = server
        self.clock = clock
        self.sessions = set()

    def buildProtocol(self, addr):
        session = HandingSession(self.server, self.clock)
        session.factory_forget = self.sessions.discard
        self.sessions.add(session)
        return session

    def stop(self):
        for session in list(self.sessions):
            session.stop()
