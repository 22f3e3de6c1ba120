"""The Twisted protocol that frames remoting commands on a TCP connection."""

import itertools

from twisted.internet import defer
from twisted.logger import Logger
from twisted.protocols.basic import Int32StringReceiver
from twisted.protocols.policies import TimeoutMixin
from zope.interface import implementer

from namesrv.interfaces import IRemotingConnection
from namesrv.protocol.codec import FrameDecodeError, decode_frame, encode_frame
from namesrv.protocol.codes import DEFAULT_MAX_FRAME_LENGTH

_connection_ids = itertools.count(1)


def format_peer(address):
    host = getattr(address, "host", None)
    port = getattr(address, "port", None)
    if host is None:
        return str(address)
    return "%s:%s" % (host, port)


@implementer(IRemotingConnection)
class RemotingProtocol(Int32StringReceiver, TimeoutMixin):
    """One connection: frames in, commands to the dispatcher, encoded answers out.

    Like Java's NettyDecoder, a frame that cannot be decoded (too long, bad header
    length, unknown serialize type, bad header) closes the connection without an
    answer; the other connections are not affected.
    """

    log = Logger()
    MAX_LENGTH = DEFAULT_MAX_FRAME_LENGTH - 4

    def __init__(self, dispatcher, on_open=None, on_close=None, idle_timeout=None,
                 max_frame_length=None, on_bad_frame=None):
        self.dispatcher = dispatcher
        self.on_open = on_open
        self.on_close = on_close
        self.on_bad_frame = on_bad_frame
        self.idle_timeout = idle_timeout
        if max_frame_length:
            self.MAX_LENGTH = max_frame_length - 4
        self.connection_id = next(_connection_ids)
        self.peer = "?"
        self.closing = False

    # -- IRemotingConnection -------------------------------------------------
    def close(self):
        self.closing = True
        if self.transport is not None:
            self.transport.loseConnection()

    # -- connection events ---------------------------------------------------
    def connectionMade(self):
        self.peer = format_peer(self.transport.getPeer())
        if self.on_open is not None:
            self.on_open(self)
        if self.idle_timeout:
            self.setTimeout(self.idle_timeout)

    def connectionLost(self, reason):
        self.setTimeout(None)
        self.closing = True
        if self.on_close is not None:
            self.on_close(self)

    def timeoutConnection(self):
        self.log.info("closing idle connection {peer}", peer=self.peer)
        self.close()

    def dataReceived(self, data):
        if self.closing:
            return
        if self.idle_timeout:
            self.resetTimeout()
        Int32StringReceiver.dataReceived(self, data)

    def lengthLimitExceeded(self, length):
        if length >= 2**31:
            reason = "negative frame length %d" % (length - 2**32)
        else:
            reason = "frame of %d bytes exceeds the limit of %d" % (length + 4, self.MAX_LENGTH + 4)
        self.bad_frame(reason)

    def bad_frame(self, reason):
        if self.closing:
            return
        self.log.warn("bad frame from {peer}: {reason}; closing the connection", peer=self.peer, reason=reason)
        if self.on_bad_frame is not None:
            self.on_bad_frame(self, reason)
        self.close()

    # -- frames --------------------------------------------------------------
    def stringReceived(self, frame):
        if self.closing:
            return
        try:
            request = decode_frame(frame)
        except FrameDecodeError as e:
            self.bad_frame(str(e))
            return
        if request.is_response:
            self.log.debug("dropping a response from {peer} (opaque {opaque}): nothing pending",
                           peer=self.peer, opaque=request.opaque)
            return
        answer = self.dispatcher.dispatch(request, self)
        if answer is None:
            return
        if isinstance(answer, defer.Deferred):
            answer.addCallback(self.send)
        else:
            self.send(answer)

    def send(self, command):
        if command is None or self.transport is None or not self.connected:
            return
        self.transport.write(encode_frame(command))
