"""Maps in 4-byte big-endian length-prefixed messages: the processes' private channels.

The main process and its read workers (stdin/stdout) and an old and a new server during a
takeover talk in such messages. One reader for all of them: bytes in, cut anywhere; whole
messages out; a message too long or that does not decode raises ``error``, after which the
stream is no longer trusted.
"""

import struct
from typing import Any, Callable, Optional

LENGTH = struct.Struct(">I")


class LengthPrefixedReader:
    """``feed(data)`` -> the messages completed by ``data``, each ``loads(payload)``, a dict."""

    error: type[Exception] = ValueError
    max_message = 1 << 28

    def __init__(self, loads: Callable[[bytes], object], max_message: Optional[int] = None,
                 error: Optional[type[Exception]] = None) -> None:
        self._buffer = bytearray()
        self._loads = loads
        if max_message is not None:
            self.max_message = max_message
        if error is not None:
            self.error = error

    def feed(self, data: bytes) -> list[dict[Any, Any]]:
        self._buffer += data
        messages: list[dict[Any, Any]] = []
        buffer = self._buffer
        offset = 0
        while len(buffer) - offset >= 4:
            (length,) = LENGTH.unpack_from(buffer, offset)
            if length > self.max_message:
                raise self.error("message of %d bytes exceeds %d" % (length, self.max_message))
            end = offset + 4 + length
            if end > len(buffer):
                break
            try:
                message = self._loads(bytes(buffer[offset + 4:end]))
            except self.error:
                raise
            except Exception as e:  # decoders raise several unrelated types on garbage
                raise self.error("undecodable message: %s" % e)
            if not isinstance(message, dict):
                raise self.error("message is not a map")
            messages.append(message)
            offset = end
        if offset:
            del buffer[:offset]
        return messages
