"""The Twisted protocol for one remoting connection: frames in, dispatch, answers out."""

from __future__ import annotations

import enum
import ipaddress
import itertools
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Union

from twisted.internet import defer, protocol
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.logger import Logger
from twisted.protocols.policies import TimeoutMixin
from zope.interface import implementer

from twisted.internet.interfaces import IAddress, IDelayedCall, IPushProducer, IReactorTime
from twisted.python.failure import Failure

from namesrv.interfaces import IDispatcher, IRemotingConnection
from namesrv.protocol.codec import FrameDecodeError, decode_frame, encode_frame
from namesrv.protocol.framing import LENGTH, NO_LIMITS, BadFrame, FrameLimits, FrameReader  # noqa: F401 (FrameLimits)
from namesrv.protocol import writethrough
from namesrv.protocol.ratelimited import RateLimitedWarning

if TYPE_CHECKING:   # types only
    from namesrv.protocol.answercache import AnswerCache
    from namesrv.protocol.command import RemotingCommand

_connection_ids = itertools.count(1)


class ConnectionState(enum.Enum):
    """Where a connection is: the one answer to whether it reads, waits, or is done.

    A server connection is READING, PAUSED while its peer does not read its answers, and CLOSING
    (or MOVED: its socket went to another process, a takeover's or a read worker's handoff). A
    connection that takes turns with others (a read worker's, readworkers/worker/connections.py)
    is WAITING while whole frames wait for its turn, WAITING_UNREAD once it read so much meanwhile
    that its socket is no longer read until its turn is done.
    """

    READING = "reading"
    WAITING = "waiting for its turn"
    WAITING_UNREAD = "waiting for its turn, not reading"
    PAUSED = "paused: its answers are not read"
    CLOSING = "closing"
    MOVED = "moved to another process"


# per frame, compared with ``is`` (a set of enum members would hash each through Python code)
_READING, _PAUSED = ConnectionState.READING, ConnectionState.PAUSED
_CLOSING, _MOVED = ConnectionState.CLOSING, ConnectionState.MOVED
#: one line per bad frame, up to 20 per 10 s across all connections (each still counted by on_bad_frame)
BAD_FRAME_WARNINGS = RateLimitedWarning(Logger("namesrv.protocol.remoting.RemotingProtocol"))


def format_peer(address: object) -> str:
    host = getattr(address, "host", None)
    port = getattr(address, "port", None)
    if host is None:
        return str(address)
    return "%s:%s" % (host, port)


def peer_address(peer: Optional[str]) -> Optional[Union[IPv4Address, IPv6Address]]:
    """``format_peer``'s text back as an IPv4Address or IPv6Address, None if it names no IP and port
    (a connection moving to another process keeps the address it was served as)."""
    host, _, port_text = (peer or "").rpartition(":")
    try:
        ip = ipaddress.ip_address(host)
        port = int(port_text)
    except ValueError:
        return None
    if not 0 <= port <= 65535:
        return None
    return (IPv4Address if ip.version == 4 else IPv6Address)("TCP", str(ip), port)


@implementer(IRemotingConnection, IPushProducer)
class RemotingProtocol(protocol.Protocol, TimeoutMixin):
    """One connection: a FrameReader splits the bytes, each frame is answered from the
    answer cache or dispatched, and the answers are written back in order.

    A frame that cannot be framed or decoded closes the connection without an answer, as
    Java's NettyDecoder does; the other connections are not affected.

    ``state`` (a ConnectionState) says where it is; ``closing`` and ``paused`` read it. What was
    read and not handled stays in ``reader``: ``frames_waiting()`` counts its whole frames and
    ``handle_frames(None, n)`` handles ``n`` of them, for a subclass that handles a read in parts.

    ``peer`` is the address the factory built it for (``address``: a PROXY header's source,
    server/proxyprotocol.py, or the address a moved connection was served as), else its socket's
    peer; ``via`` is the socket's peer when that differs (the proxy), else None.

    The protocol is its transport's streaming producer: when a peer stops reading
    its answers and the transport's buffer fills up, we stop reading (and answering)
    that peer until it drains; a peer paused longer than ``slow_reader_timeout``
    is disconnected, so no peer can make the server's memory grow.
    """

    log = Logger()

    def __init__(self, dispatcher: IDispatcher, on_open: Optional[Callable[[RemotingProtocol], object]] = None,
                 on_close: Optional[Callable[[RemotingProtocol], object]] = None, idle_timeout: Optional[float] = None,
                 max_frame_length: Optional[int] = None,
                 on_bad_frame: Optional[Callable[[RemotingProtocol, str], object]] = None,
                 slow_reader_timeout: Optional[float] = None, reactor: Optional[IReactorTime] = None,
                 limits: FrameLimits = NO_LIMITS, answer_cache: Optional[AnswerCache] = None,
                 address: Optional[IAddress] = None) -> None:
        self.dispatcher = dispatcher
        self.answer_cache = answer_cache
        self.on_open = on_open
        self.on_close = on_close
        self.on_bad_frame = on_bad_frame
        self.idle_timeout = idle_timeout
        self.slow_reader_timeout = slow_reader_timeout
        self._reactor = reactor
        self.connection_id = next(_connection_ids)
        self.address = address
        self.peer = "?"
        self.via: Optional[str] = None
        self.state = ConnectionState.READING
        self.limits = limits
        self.reader = FrameReader(max_frame_length, limits)
        self._slow_reader_call: Optional[IDelayedCall] = None
        self._frame_timer: Optional[IDelayedCall] = None

    @property
    def peer_label(self) -> str:
        """The peer for a log line: with the proxy it came through, if any."""
        return self.peer if self.via is None else "%s (via %s)" % (self.peer, self.via)

    @property
    def closing(self) -> bool:
        """Nothing more is handled here: closed (or closing), or moved to another process."""
        state = self.state
        return state is _CLOSING or state is _MOVED

    @property
    def paused(self) -> bool:
        """Its peer does not read its answers: nothing is handled until they drain."""
        return self.state is _PAUSED

    def _close(self) -> None:
        if self.state is not ConnectionState.MOVED:
            self.state = ConnectionState.CLOSING

    def moved(self) -> None:
        """Its socket went to another process: handle nothing more here."""
        self.state = ConnectionState.MOVED

    # -- IRemotingConnection -------------------------------------------------
    def close(self) -> None:
        self._close()
        if self.transport is not None:
            self.transport.loseConnection()

    def abort(self) -> None:
        self._close()
        if self.transport is not None:
            abort = getattr(self.transport, "abortConnection", self.transport.loseConnection)
            abort()

    # -- connection events ---------------------------------------------------
    def connectionMade(self) -> None:
        self.peer = socket_peer = format_peer(self.transport.getPeer())  # type: ignore[union-attr]  # connected
        if getattr(self.address, "host", None) is not None:   # an IP address (not a UNIX socket's)
            self.peer = format_peer(self.address)
            if self.peer != socket_peer:
                self.via = socket_peer
        if hasattr(self.transport, "registerProducer"):
            self.transport.registerProducer(self, True)  # type: ignore[union-attr]  # a consumer
        if self.on_open is not None:
            self.on_open(self)
        if self.idle_timeout:
            self.setTimeout(self.idle_timeout)

    def connectionLost(self, reason: Optional[Failure] = None) -> None:
        self.setTimeout(None)
        self._cancel_slow_reader()
        self._cancel_frame_timer()
        self._close()
        self.reader.clear()
        if self.on_close is not None:
            on_close, self.on_close = self.on_close, None
            on_close(self)

    def timeoutConnection(self) -> None:
        self.log.info("closing idle connection {peer}", peer=self.peer_label)
        self.close()

    # -- IPushProducer (for our transport's write buffer) ---------------------
    def pauseProducing(self) -> None:
        if self.paused or self.closing:
            return
        self.state = ConnectionState.PAUSED
        self.transport.pauseProducing()  # type: ignore[union-attr]  # its consumer: a producer too
        if self.slow_reader_timeout:
            self._slow_reader_call = self._call_later(self.slow_reader_timeout, self._slow_reader)

    def resumeProducing(self) -> None:
        if not self.paused:
            return
        self.state = ConnectionState.READING
        self._cancel_slow_reader()
        self.transport.resumeProducing()  # type: ignore[union-attr]  # its consumer: a producer too
        self.handle_buffered()

    def stopProducing(self) -> None:
        self._close()

    def _slow_reader(self) -> None:
        self._slow_reader_call = None
        self.log.warn("{peer} has not read its answers for {s}s; disconnecting", peer=self.peer_label,
                      s=self.slow_reader_timeout)
        if self.on_bad_frame is not None:
            self.on_bad_frame(self, "slow reader: answers not read for %ss" % self.slow_reader_timeout)
        self.abort()

    def _cancel_slow_reader(self) -> None:
        if self._slow_reader_call is not None and self._slow_reader_call.active():
            self._slow_reader_call.cancel()
        self._slow_reader_call = None

    def _call_later(self, delay: float, f: Callable[..., object], *args: object) -> IDelayedCall:
        if self._reactor is None:
            from twisted.internet import reactor   # the global one, only when none was given
            self._reactor = reactor
        return self._reactor.callLater(delay, f, *args)

    def callLater(self, period: float, func: Callable[[], object]) -> IDelayedCall:
        """TimeoutMixin's timer (the idle timeout) on the same reactor as every other timer here."""
        return self._call_later(period, func)

    # -- frames --------------------------------------------------------------
    def unread(self) -> bytes:
        """What was read and not handled yet (a connection moving to another process takes it along)."""
        return self.reader.unread()

    def dataReceived(self, data: bytes) -> None:
        if self.closing:
            return
        if self.idle_timeout:
            self.resetTimeout()
        if self.state is _READING:
            if not self.reader.buffer and self.answer_alone(data):
                return
            self.handle_frames(data)
        else:
            self.reader.buffer_more(data)   # paused, or waiting for its turn: behind what waits

    def answer_alone(self, data: bytes) -> bool:
        """Answer ``data`` from the answer cache when it is one whole frame and nothing waits before it
        (a client with one read outstanding: the common case), without the framing state, generator and
        timers of ``handle_frames``; False (nothing done) when it is anything else or the cache has no answer."""
        cache = self.answer_cache
        size = len(data)
        if (cache is None or size < 8 or size - 4 > cache.max_frame_length
                or LENGTH.unpack_from(data, 0)[0] != size - 4 or not cache.usable()):
            return False
        answer = cache.answer(data[4:], self.peer)
        if answer is None:
            return False
        self._write_cached([answer])
        return True

    def handle_buffered(self) -> None:
        """Handle what was read while paused (called when the peer reads its answers again)."""
        self.handle_frames(None)

    def frames_waiting(self, up_to: Optional[int] = None) -> int:
        """Whole frames read and not handled yet (``up_to`` at most)."""
        return self.reader.frames_waiting(up_to=up_to)

    def handle_frames(self, data: Optional[bytes] = None, limit: Optional[int] = None) -> None:
        """Handle the whole frames of ``data`` after anything buffered (None: only what is buffered),
        ``limit`` of them at most, and keep the rest for later."""
        reader = self.reader
        try:
            chunk = reader.take() if data is None else reader.feed(data)
            if chunk is not None:
                self._handle_frames(reader.frames(chunk, limit))
        except BadFrame as e:
            self.bad_frame(str(e))
        if self.closing:
            reader.clear()
            return
        reader.keep_rest()
        self._watch_partial_frame()

    def _handle_frames(self, frames: Iterable[bytes]) -> None:
        """Answer each frame: from the answer cache (consecutive ones written together, before
        any slower answer) or through the dispatcher; stop when paused or closing."""
        cache = self.answer_cache
        if cache is not None and not cache.usable():
            cache = None      # one check for the whole read: every frame in it had arrived by now
        cached = []
        handled = False
        state = self.state   # paused, closed or moved by a frame: stop there
        for frame in frames:
            handled = True
            answer = cache.answer(frame, self.peer) if cache is not None else None
            if answer is not None:
                cached.append(answer)
            else:
                if cached:
                    self._write_cached(cached)
                    cached = []
                self.frame_received(frame)
            if self.state is not state:
                break
        if cached:
            self._write_cached(cached)
        if handled:
            self._cancel_frame_timer()  # the frame it timed is complete; time the next one afresh

    def _watch_partial_frame(self) -> None:
        """A started frame must complete within ``read_frame_timeout`` (slowloris)."""
        timeout = self.limits.read_frame_timeout
        if not timeout:
            return
        if not self.reader.waiting:
            self._cancel_frame_timer()
        elif self._frame_timer is None:
            self._frame_timer = self._call_later(timeout, self._frame_timed_out, timeout)

    def _frame_timed_out(self, timeout: float) -> None:
        self._frame_timer = None
        self.bad_frame("frame not completed within %ss" % timeout)

    def _cancel_frame_timer(self) -> None:
        if self._frame_timer is not None and self._frame_timer.active():
            self._frame_timer.cancel()
        self._frame_timer = None

    def bad_frame(self, reason: str) -> None:
        if self.closing:
            return
        BAD_FRAME_WARNINGS.warn("bad frame from {peer}: {reason}; closing the connection", peer=self.peer_label,
                                reason=reason)
        if self.on_bad_frame is not None:
            self.on_bad_frame(self, reason)
        self.close()

    def frame_received(self, frame: bytes) -> None:
        try:
            self.limits.check_header(frame)
            request = decode_frame(frame)
            self.limits.check_request(request)
        except (FrameDecodeError, BadFrame) as e:
            return self.bad_frame(str(e))
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
                self.answer_cache.remember(frame, request, answer, self.peer)
            self.send(answer)

    def _write_cached(self, answers: list[bytes]) -> None:
        self.answer_cache.report(self.peer)  # type: ignore[union-attr]  # cached answers: it has a cache
        if self.transport is not None and self.connected and not self.closing:
            writethrough.write(self.transport, answers[0] if len(answers) == 1 else b"".join(answers))

    def send(self, command: Optional[RemotingCommand]) -> None:
        if command is None or self.transport is None or not self.connected or self.closing:
            return
        writethrough.write(self.transport, encode_frame(command))
