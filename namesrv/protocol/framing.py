"""Splits one connection's byte stream into remoting frames, and refuses bad ones early.

Hand-written rather than Twisted's ``IntNStringReceiver``: that one re-concatenates its
buffer on every read, so a 16 MiB REGISTER_BROKER arriving in 64 KiB reads costs quadratic
time. Here a read with nothing left over is framed in place, and while the first buffered
frame is still incomplete nothing is copied.

Like Java's NettyDecoder, a frame that cannot be framed (negative or too long, header too
long, a body over ``maxRequestBodyLength`` for a code that may not send one) raises
:class:`BadFrame`; the connection then closes without an answer. Over-long headers and bodies
are refused from the first 8 bytes of the frame (and its header), before the body is buffered.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Iterator, Optional, Union

from namesrv.protocol.codec import FrameDecodeError, decode_frame
from namesrv.protocol.codes import DEFAULT_MAX_FRAME_LENGTH, RequestCode
from namesrv.protocol.command import RemotingCommand

if TYPE_CHECKING:   # types only
    from namesrv.config.live import NamesrvConfig

#: bytes as read from a socket, or kept from earlier reads
Buffer = Union[bytes, bytearray]

LENGTH = struct.Struct(">i")

#: Codes whose body may exceed ``maxRequestBodyLength`` (a broker's whole topic table).
BIG_BODY_CODES = frozenset([RequestCode.REGISTER_BROKER])


def complete_frames(buffer: Buffer, up_to: Optional[int] = None) -> tuple[int, int]:
    """``(end, count)``: where the whole frames at the start of ``buffer`` end, and how many there
    are, ``up_to`` at most (frames passed on unchanged, as a read worker passes the main process's
    answers back; or counted before they are handled). Counting stops at a negative length: the
    reader refuses it when the frame is handled."""
    size = len(buffer)
    offset = count = 0
    while size - offset >= 4 and (up_to is None or count < up_to):
        (length,) = LENGTH.unpack_from(buffer, offset)
        end = offset + 4 + length
        if length < 0 or end > size:
            break
        offset = end
        count += 1
    return offset, count


def framed(payload: bytes) -> bytes:
    """``payload`` as one frame on the wire: its length, then itself."""
    return LENGTH.pack(len(payload)) + payload


class BadFrame(Exception):
    """The stream cannot be framed; ``str()`` says why (logged, counted, then the connection closes)."""


class FrameLimits:
    """Per-connection limits beyond Java's frame length; 0 or None switches one off."""

    def __init__(self, max_header_length: int = 0, max_ext_fields: int = 0, max_request_body_length: int = 0,
                 read_frame_timeout: float = 0) -> None:
        self.max_header_length = max_header_length
        self.max_ext_fields = max_ext_fields
        self.max_request_body_length = max_request_body_length
        self.read_frame_timeout = read_frame_timeout

    @classmethod
    def from_config(cls, config: NamesrvConfig) -> FrameLimits:
        return cls(config.maxHeaderLength, config.maxExtFields, config.maxRequestBodyLength,
                   config.serverReadFrameTimeoutSeconds)

    def check_header_length(self, header_length: int) -> None:
        limit = self.max_header_length
        if limit and header_length > limit:
            raise BadFrame("header of %d bytes exceeds maxHeaderLength %d" % (header_length, limit))

    def check_body_length(self, code: int, body_length: int) -> None:
        limit = self.max_request_body_length
        if limit and body_length > limit and code not in BIG_BODY_CODES:
            raise BadFrame("body of %d bytes for request code %d exceeds maxRequestBodyLength %d"
                           % (body_length, code, limit))

    def check_header(self, frame: bytes) -> None:
        """A whole frame's header length, checked before it is decoded."""
        if self.max_header_length and len(frame) >= 4:
            self.check_header_length(LENGTH.unpack_from(frame, 0)[0] & 0xFFFFFF)

    def check_request(self, request: RemotingCommand) -> None:
        """The limits a decoded request must meet (extFields, body length)."""
        if self.max_ext_fields and request.ext and len(request.ext) > self.max_ext_fields:
            raise BadFrame("%d extFields exceed maxExtFields %d" % (len(request.ext), self.max_ext_fields))
        if request.body:
            self.check_body_length(request.code, len(request.body))


NO_LIMITS = FrameLimits()


class FrameReader:
    """The framing state of one connection: what was read and not yet handled.

    Use::

        chunk = reader.feed(data)          # None: still waiting for the rest of a frame
        for frame in reader.frames(chunk): # raises BadFrame; frames(chunk, n): n at most
            handle(frame)                  # may stop early (paused, closing)
        reader.keep_rest()                 # keep what was not handled, for the next read

    ``frames_waiting()`` counts the whole frames read and not handled (a connection taking turns
    asks it before it handles what it read, and after each turn).
    """

    def __init__(self, max_frame_length: Optional[int] = None, limits: FrameLimits = NO_LIMITS) -> None:
        self.max_frame_length = max_frame_length or DEFAULT_MAX_FRAME_LENGTH
        self.limits = limits
        self.buffer = bytearray()
        self._data = b""   # the chunk being framed, and where its next frame starts
        self._next = 0
        self._partial_checked = False
        self._header_told = False

    @property
    def waiting(self) -> bool:
        """A frame has started and is not complete yet."""
        return bool(self.buffer)

    def buffer_more(self, data: bytes) -> None:
        """Keep ``data`` for later (a paused connection reads on, and frames when resumed)."""
        self.buffer += data

    def buffered(self) -> int:
        """Bytes read and kept for later."""
        return len(self.buffer)

    def frames_waiting(self, data: Optional[bytes] = None, up_to: Optional[int] = None) -> int:
        """How many whole frames are buffered, followed by ``data`` (not yet fed): ``up_to`` at most."""
        buffer = self.buffer
        pending = buffer + data if buffer and data else (data or buffer)
        return complete_frames(pending, up_to)[1]

    def feed(self, data: bytes) -> Optional[bytes]:
        """The bytes to frame now, ``data`` after anything buffered; None while a frame is incomplete."""
        if not self.buffer:
            return data   # the common case: frame straight from the read, no copy
        self.buffer += data
        return self.take()

    def take(self) -> Optional[bytes]:
        """Everything buffered, to frame now; None while the first frame is still incomplete."""
        buffer = self.buffer
        if len(buffer) >= 4:
            (length,) = LENGTH.unpack_from(buffer, 0)
            if 0 <= length and length + 4 <= self.max_frame_length and len(buffer) < length + 4:
                if not self._partial_checked and len(buffer) >= 8:
                    self._check_partial(buffer, 0, length)
                return None
        if not buffer:
            return None
        data, self.buffer = bytes(buffer), bytearray()
        return data

    def frames(self, data: bytes, limit: Optional[int] = None) -> Iterator[bytes]:
        """Yield each complete frame of ``data`` (length prefix removed), ``limit`` at most; raise BadFrame."""
        self._data, self._next = data, 0
        offset = 0
        size = len(data)
        unpack = LENGTH.unpack_from
        left = -1 if limit is None else limit
        while size - offset >= 4 and left:
            left -= 1
            (length,) = unpack(data, offset)
            if length < 0:
                raise BadFrame("negative frame length %d" % length)
            if length + 4 > self.max_frame_length:
                raise BadFrame("frame of %d bytes exceeds the limit of %d" % (length + 4, self.max_frame_length))
            end = offset + 4 + length
            if end > size:
                if not self._partial_checked and size - offset >= 8:
                    self._check_partial(data, offset, length)
                return
            self._next = end
            self._partial_checked = self._header_told = False
            yield data[offset + 4:end]
            offset = end

    def keep_rest(self) -> None:
        """After ``frames``: keep the bytes not yet handled, and drop the reference to the read."""
        data, offset = self._data, self._next
        self._data, self._next = b"", 0
        if offset < len(data):
            # before anything buffered meanwhile (a paused connection's later reads)
            self.buffer[:0] = data[offset:] if offset else data

    def unread(self) -> bytes:
        """The bytes read and not handled: after the frame being handled, then any buffered."""
        return bytes(self._data[self._next:]) + bytes(self.buffer)

    def clear(self) -> None:
        self.buffer = bytearray()
        self._data, self._next = b"", 0
        self._header_told = False

    def started_header(self) -> Optional[tuple[int, bytes]]:
        """(serialize type, header bytes) of the frame that starts the buffer and is not complete yet,
        once its header is in; None before that, for a complete frame, and after the first time for the
        same frame. A read worker looks at a started frame's code to hand a broker's connection over
        before the rest of a large registration is read (readworkers/worker/handoff.py)."""
        buffer = self.buffer
        if self._header_told or len(buffer) < 8:
            return None
        (length,) = LENGTH.unpack_from(buffer, 0)
        (word,) = LENGTH.unpack_from(buffer, 4)
        header_length = word & 0xFFFFFF
        if len(buffer) >= length + 4 or len(buffer) < 8 + header_length:
            return None
        self._header_told = True
        return (word >> 24) & 0xFF, bytes(buffer[8:8 + header_length])

    def _check_partial(self, buffer: Buffer, offset: int, length: int) -> None:
        """Refuse an oversized frame from its header, before its body is buffered."""
        limits = self.limits
        (word,) = LENGTH.unpack_from(buffer, offset + 4)
        header_length = word & 0xFFFFFF
        limits.check_header_length(header_length)
        if len(buffer) - offset < 8 + header_length:
            return
        self._partial_checked = True
        body_length = length - 4 - header_length
        if not limits.max_request_body_length or body_length <= limits.max_request_body_length:
            return
        try:
            request = decode_frame(bytes(buffer[offset + 4:offset + 8 + header_length]))
        except FrameDecodeError as e:
            raise BadFrame(str(e))
        limits.check_body_length(request.code, body_length)
