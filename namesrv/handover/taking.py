"""The new process's end of a takeover: ask, receive the tables and the listening socket,
say when serving, then adopt every connection the old process sends."""

import os
import socket

from twisted.internet import defer, protocol
from twisted.internet.interfaces import IFileDescriptorReceiver
from twisted.logger import Logger
from zope.interface import implementer

from namesrv.handover import messages, peers
from namesrv.handover.messages import HandoverProtocolError, MessageReader, encode


class TakeoverRefused(Exception):
    """The old process said no (another instance, no common version, a takeover under way),
    or the conversation broke before the tables arrived."""


class OldProcessLeft(TakeoverRefused):
    """The old process (``pid``, when the kernel said) closed the conversation before the
    state, without a refusal: it may have died (the coordinator then starts normally)."""

    def __init__(self, why, pid):
        TakeoverRefused.__init__(self, why)
        self.pid = pid


class TakenState:
    """What the old process gave: its listening socket and its route tables (snapshot bytes)."""

    def __init__(self, listening, routes, version, delta=None, registrations=None):
        self.listening = listening
        self.routes = routes          # a whole snapshot, or None when ``delta`` is given
        self.version = version
        self.delta = delta            # version 2: what changed since the precopy
        self.registrations = registrations or []   # version 2: UnchangedRegistrations.export()


@implementer(IFileDescriptorReceiver)
class TakeoverClient(protocol.Protocol):
    """``state`` fires with a TakenState (or fails with TakeoverRefused); call ``ready()`` once
    serving from its socket; ``adopt(descriptor, peer, unread)`` is called for each connection;
    ``done`` fires with (moved, closed) when the old process has given everything. In version 2
    ``precopy(routes)`` restores the first copy of the tables (raising fails the takeover)."""

    log = Logger()

    def __init__(self, identity, adopt, precopy=None, precopy_file=None):
        self.identity = identity
        self.adopt = adopt
        self.precopy = precopy
        self.precopy_file = precopy_file   # version 3: restores the snapshot file given by its descriptor
        self.reader = MessageReader()
        self.descriptors = []
        self.state = defer.Deferred()
        self.done = defer.Deferred()
        self.phase = "hello"
        self.moved = 0
        self.old_pid = None

    def connectionMade(self):
        self.old_pid = peers.peer_pid(self.transport)
        record = self.identity.as_record()
        self.transport.write(encode(messages.HELLO, versions=list(messages.VERSIONS), instance=record["instance"],
                                    listen=record["listen"], pid=os.getpid()))

    def fileDescriptorReceived(self, descriptor):
        os.set_inheritable(descriptor, False)
        self.descriptors.append(descriptor)

    def dataReceived(self, data):
        try:
            for message in self.reader.feed(data):
                self._handle(message)
        except HandoverProtocolError as e:
            self._fail("unreadable message from the old process (%s)" % e)

    def _handle(self, message):
        kind = message["kind"]
        if kind == messages.REFUSE:
            return self._fail("the running process refused: %s" % message.get("reason"))
        if kind == messages.PRECOPY and self.phase == "hello" and message.get("snapshot") is True \
                and self.precopy_file is not None:
            descriptor = self._take_descriptor()
            if descriptor is None:
                return self._fail("a first copy without its file")
            return self._restore_precopy(self.precopy_file, descriptor)
        if kind == messages.PRECOPY and self.phase == "hello" and self.precopy is not None:
            routes = message.get("routes")
            if not isinstance(routes, bytes):
                return self._fail("a first copy without its tables")
            return self._restore_precopy(self.precopy, routes)
        if kind == messages.STATE and self.phase == "hello":
            descriptor = self._take_descriptor()
            routes, delta = message.get("routes"), message.get("delta")
            if descriptor is None or not (isinstance(routes, bytes) or isinstance(delta, bytes)):
                return self._fail("state without its listening socket or tables")
            self.phase = "state"
            listening = socket.socket(fileno=descriptor)
            listening.setblocking(False)
            registrations = message.get("registrations")
            return self.state.callback(TakenState(listening, routes if isinstance(routes, bytes) else None,
                                                  message.get("version"), delta if isinstance(delta, bytes) else None,
                                                  registrations if isinstance(registrations, list) else None))
        if kind == messages.CONNECTION and self.phase == "ready":
            descriptor = self._take_descriptor()
            unread = message.get("unread") or b""
            peer = message.get("peer") or "?"
            if descriptor is None or not isinstance(unread, bytes):
                return self._fail("connection message without its socket")
            self.moved += 1
            return self.adopt(descriptor, str(peer), unread)
        if kind == messages.DONE and self.phase == "ready":
            self.phase = "done"
            self.transport.loseConnection()
            return self.done.callback((message.get("moved"), message.get("closed")))
        self._fail("unexpected %s message in phase %s" % (kind, self.phase))

    def _restore_precopy(self, restore, copy):
        """``restore(copy)``, the first copy (a snapshot file's descriptor, or the tables' bytes), then PRECOPIED."""
        try:
            restore(copy)
        except Exception as e:
            return self._fail("the first copy of the tables could not be restored: %s" % e)
        return self.transport.write(encode(messages.PRECOPIED))

    def _take_descriptor(self):
        return self.descriptors.pop(0) if self.descriptors else None

    def ready(self):
        self.phase = "ready"
        self.transport.write(encode(messages.READY))

    def _fail(self, why):
        if self.transport is not None:
            self.transport.loseConnection()
        self._lost(why)

    def _lost(self, why, left=False):
        if self.phase == "hello":
            self.phase = "failed"
            self.state.errback(OldProcessLeft(why, self.old_pid) if left else TakeoverRefused(why))
        elif self.phase in ("state", "ready"):
            self.phase = "failed"
            self.log.warn("takeover: {why}; {n} connections adopted, the others reconnect", why=why, n=self.moved)
            self.done.errback(TakeoverRefused(why))

    def connectionLost(self, reason=None):
        for descriptor in self.descriptors:
            os.close(descriptor)
        self.descriptors = []
        if self.phase not in ("done", "failed"):
            self._lost("the old process closed the conversation", left=True)
