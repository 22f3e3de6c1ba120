"""The Twisted protocol that frames remoting commands on a TCP connection."""

import itertools
import struct

from twisted.internet import defer, protocol
from twisted.logger import Logger
from twisted.protocols.policies import TimeoutMixin
from zope.interface import implementer

from twisted.internet.interfaces import IPushProducer

from namesrv.interfaces import IRemotingConnection
from namesrv.protocol.codec import FrameDecodeError, decode_frame, encode_frame
from namesrv.protocol.codes import DEFAULT_MAX_FRAME_LENGTH, RequestCode
from namesrv.protocol.ratelimited import RateLimitedWarning

_connection_ids = itertools.count(1)
_LENGTH = struct.Struct(">i")
_NOTHING_UNREAD = (b"", 0)
#: one line per bad frame, up to 20 per 10 s across all connections (each still counted by on_bad_frame)
BAD_FRAME_WARNINGS = RateLimitedWarning(Logger("namesrv.protocol.remoting.RemotingProtocol"))

#: Codes whose body may exceed ``maxRequestBodyLength`` (a broker's whole topic table).
BIG_BODY_CODES = frozenset([RequestCode.REGISTER_BROKER])


class FrameLimits:
    """Per-connection limits beyond Java's frame length; 0 or None switches one off."""

    def __init__(self, max_header_length=0, max_ext_fields=0, max_request_body_length=0,
                 read_frame_timeout=0):
        self.max_header_length = max_header_length
        self.max_ext_fields = max_ext_fields
        self.max_request_body_length = max_request_body_length
        self.read_frame_timeout = read_frame_timeout

    @classmethod
    def from_config(cls, config):
        return cls(config.maxHeaderLength, config.maxExtFields, config.maxRequestBodyLength,
                   config.serverReadFrameTimeoutSeconds)


NO_LIMITS = FrameLimits()


def format_peer(address):
    host = getattr(address, "host", None)
    port = getattr(address, "port", None)
    if host is None:
        return str(address)
    return "%s:%s" % (host, port)


@implementer(IRemotingConnection, IPushProducer)
class RemotingProtocol(protocol.Protocol, TimeoutMixin):
    """One connection: frames in, commands to the dispatcher, encoded answers out.

    Framing keeps one bytearray per connection, so a 16 MiB frame arriving in 64 KiB
    pieces costs linear time (Twisted's IntNStringReceiver re-concatenates its buffer
    on every read). Like Java's NettyDecoder, a frame that cannot be decoded (too
    long, bad header length, unknown serialize type, bad header) closes the
    connection without an answer; the other connections are not affected.

    The protocol is its transport's streaming producer: when a peer stops reading
    its answers and the transport's buffer fills up, we stop reading (and answering)
    that peer until it drains; a peer paused longer than ``slow_reader_timeout``
    is disconnected, so no peer can make the server's memory grow.
    """

    log = Logger()

    def __init__(self, dispatcher, on_open=None, on_close=None, idle_timeout=None,
                 max_frame_length=None, on_bad_frame=None, slow_reader_timeout=None, reactor=None,
                 limits=NO_LIMITS, answer_cache=None):
        self.dispatcher = dispatcher
        self.answer_cache = answer_cache
        self.on_open = on_open
        self.on_close = on_close
        self.on_bad_frame = on_bad_frame
        self.idle_timeout = idle_timeout
        self.max_frame_length = max_frame_length or DEFAULT_MAX_FRAME_LENGTH
        self.slow_reader_timeout = slow_reader_timeout
        self._reactor = reactor
        self.connection_id = next(_connection_ids)
        self.peer = "?"
        self.closing = False
        self.paused = False
        self.limits = limits
        self._buffer = bytearray()
        self._slow_reader_call = None
        self._partial_checked = False
        self._frame_timer = None
        self._unread = _NOTHING_UNREAD

    # -- IRemotingConnection -------------------------------------------------
    def close(self):
        self.closing = True
        if self.transport is not None:
            self.transport.loseConnection()

    def abort(self):
        self.closing = True
        if self.transport is not None:
            abort = getattr(self.transport, "abortConnection", self.transport.loseConnection)
            abort()

    # -- connection events ---------------------------------------------------
    def connectionMade(self):
        self.peer = format_peer(self.transport.getPeer())
        if hasattr(self.transport, "registerProducer"):
            self.transport.registerProducer(self, True)
        if self.on_open is not None:
            self.on_open(self)
        if self.idle_timeout:
            self.setTimeout(self.idle_timeout)

    def connectionLost(self, reason=None):
        self.setTimeout(None)
        self._cancel_slow_reader()
        self._cancel_frame_timer()
        self.closing = True
        self._buffer = bytearray()
        if self.on_close is not None:
            on_close, self.on_close = self.on_close, None
            on_close(self)

    def timeoutConnection(self):
        self.log.info("closing idle connection {peer}", peer=self.peer)
        self.close()

    # -- IPushProducer (for our transport's write buffer) ---------------------
    def pauseProducing(self):
        if self.paused or self.closing:
            return
        self.paused = True
        self.transport.pauseProducing()
        if self.slow_reader_timeout:
            self._slow_reader_call = self._call_later(self.slow_reader_timeout, self._slow_reader)

    def resumeProducing(self):
        if not self.paused:
            return
        self.paused = False
        self._cancel_slow_reader()
        if self.closing:
            return
        self.transport.resumeProducing()
        self._process()

    def stopProducing(self):
        self.closing = True

    def _slow_reader(self):
        self._slow_reader_call = None
        self.log.warn("{peer} has not read its answers for {s}s; disconnecting", peer=self.peer,
                      s=self.slow_reader_timeout)
        if self.on_bad_frame is not None:
            self.on_bad_frame(self, "slow reader: answers not read for %ss" % self.slow_reader_timeout)
        self.abort()

    def _cancel_slow_reader(self):
        if self._slow_reader_call is not None and self._slow_reader_call.active():
            self._slow_reader_call.cancel()
        self._slow_reader_call = None

    def _call_later(self, delay, f, *args):
        if self._reactor is None:
            from twisted.internet import reactor
            self._reactor = reactor
        return self._reactor.callLater(delay, f, *args)

    def callLater(self, period, func):
        """TimeoutMixin's timer (the idle timeout) on the same reactor as every other timer here."""
        return self._call_later(period, func)

    def _header_too_long(self, header_length):
        """The bad-frame reason when ``header_length`` exceeds maxHeaderLength, else None."""
        limit = self.limits.max_header_length
        if limit and header_length > limit:
            return "header of %d bytes exceeds maxHeaderLength %d" % (header_length, limit)
        return None

    # -- frames --------------------------------------------------------------
    def dataReceived(self, data):
        if self.closing:
            return
        if self.idle_timeout:
            self.resetTimeout()
        if self._buffer or self.paused:
            self._buffer += data
            if not self.paused:
                self._process()
        else:
            self._frames(data)   # the common case: nothing left over, frame straight from the read

    def _process(self):
        """Frame what is buffered (after a partial read, or when resumed).

        While the first frame is still incomplete nothing is copied: a 16 MiB frame arriving
        in 64 KiB reads costs linear time, not quadratic.
        """
        buffer = self._buffer
        if len(buffer) >= 4:
            (length,) = _LENGTH.unpack_from(buffer, 0)
            if 0 <= length and length + 4 <= self.max_frame_length and len(buffer) < length + 4:
                if not self._partial_checked and len(buffer) >= 8:
                    self._check_partial(buffer, 0, length)
                if not self.closing:
                    self._watch_partial_frame()
                return
        if buffer:
            data, self._buffer = bytes(buffer), bytearray()
            self._frames(data)

    def _frames(self, data):
        """Handle every complete frame in ``data``; keep the rest for the next read."""
        offset = 0
        size = len(data)
        cache = self.answer_cache
        cached = []   # answers from the cache, written together (before any slow-path answer)
        unpack = _LENGTH.unpack_from
        while size - offset >= 4 and not self.paused and not self.closing:
            (length,) = unpack(data, offset)
            if length < 0:
                return self.bad_frame("negative frame length %d" % length)
            if length + 4 > self.max_frame_length:
                return self.bad_frame("frame of %d bytes exceeds the limit of %d"
                                      % (length + 4, self.max_frame_length))
            end = offset + 4 + length
            if end > size:
                if not self._partial_checked and size - offset >= 8:
                    self._check_partial(data, offset, length)
                break
            frame = data[offset + 4:end]
            offset = end
            self._partial_checked = False
            if cache is not None:
                answer = cache.answer(frame, self.peer)
                if answer is not None:
                    cached.append(answer)
                    continue
                if cached:
                    self._write_cached(cached)
                    cached = []
            self._unread = (data, end)   # what follows this frame (a read worker may hand it over)
            self.frame_received(frame)
            self._unread = _NOTHING_UNREAD   # never keep a read's bytes (a 16 MiB registration) alive
        if cached:
            self._write_cached(cached)
        if self.closing:
            self._buffer = bytearray()
            return
        if offset < size:
            self._buffer[:0] = data[offset:] if offset else data   # (a read may have landed meanwhile)
        if offset:
            self._cancel_frame_timer()  # the frame it timed is complete; time the next one afresh
        self._watch_partial_frame()

    def _check_partial(self, buffer, offset, length):
        """Refuse an oversized frame from its header, before its body is buffered."""
        limits = self.limits
        (word,) = _LENGTH.unpack_from(buffer, offset + 4)
        header_length = word & 0xFFFFFF
        too_long = self._header_too_long(header_length)
        if too_long:
            self._partial_checked = True
            return self.bad_frame(too_long)
        if len(buffer) - offset < 8 + header_length:
            return
        self._partial_checked = True
        body_length = length - 4 - header_length
        if not limits.max_request_body_length or body_length <= limits.max_request_body_length:
            return
        try:
            request = decode_frame(bytes(buffer[offset + 4:offset + 8 + header_length]))
        except FrameDecodeError as e:
            return self.bad_frame(str(e))
        self._check_body_length(request.code, body_length)

    def _check_body_length(self, code, body_length):
        limit = self.limits.max_request_body_length
        if limit and body_length > limit and code not in BIG_BODY_CODES:
            self.bad_frame("body of %d bytes for request code %d exceeds maxRequestBodyLength %d"
                           % (body_length, code, limit))
            return False
        return True

    def _watch_partial_frame(self):
        """A started frame must complete within ``read_frame_timeout`` (slowloris)."""
        timeout = self.limits.read_frame_timeout
        if not timeout:
            return
        if not self._buffer:
            self._cancel_frame_timer()
        elif self._frame_timer is None:
            self._frame_timer = self._call_later(timeout, self._frame_timed_out, timeout)

    def _frame_timed_out(self, timeout):
        self._frame_timer = None
        self.bad_frame("frame not completed within %ss" % timeout)

    def _cancel_frame_timer(self):
        if self._frame_timer is not None and self._frame_timer.active():
            self._frame_timer.cancel()
        self._frame_timer = None

    def bad_frame(self, reason):
        if self.closing:
            return
        BAD_FRAME_WARNINGS.warn("bad frame from {peer}: {reason}; closing the connection", peer=self.peer,
                                reason=reason)
        if self.on_bad_frame is not None:
            self.on_bad_frame(self, reason)
        self.close()

    def frame_received(self, frame):
        limits = self.limits
        if limits.max_header_length and len(frame) >= 4:
            too_long = self._header_too_long(_LENGTH.unpack_from(frame, 0)[0] & 0xFFFFFF)
            if too_long:
                return self.bad_frame(too_long)
        try:
            request = decode_frame(frame)
        except FrameDecodeError as e:
            self.bad_frame(str(e))
            return
        if limits.max_ext_fields and request.ext and len(request.ext) > limits.max_ext_fields:
            return self.bad_frame("%d extFields exceed maxExtFields %d" % (len(request.ext), limits.max_ext_fields))
        if request.body and not self._check_body_length(request.code, len(request.body)):
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
            if answer.cacheable and self.answer_cache is not None:
                self.answer_cache.remember(frame, request, answer)
            self.send(answer)

    def _write_cached(self, answers):
        self.answer_cache.report(self.peer)
        if self.transport is not None and self.connected and not self.closing:
            self.transport.write(b"".join(answers) if len(answers) > 1 else answers[0])

    def send(self, command):
        if command is None or self.transport is None or not self.connected or self.closing:
            return
        self.transport.write(encode_frame(command))
