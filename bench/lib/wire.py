"""Pre-encoded request frames and a cheap scanner for answers.

A load generator that encoded every request with ``encode_frame`` would measure itself.
Here a request is encoded once with a ten-digit placeholder opaque and split around it
(``FrameTemplate``); sending is then ``pre + b"%d" % opaque + post``. Every opaque we use
has exactly ten digits (1_000_000_000 .. 2_147_483_647), so the frame length never changes.

Answers are matched by opaque without decoding them: in a JSON header the opaque is the
number after ``"opaque":``, in a ROCKETMQ header it is the int32 at a fixed offset.
"""

import struct

from namesrv.protocol.codec import encode_frame
from namesrv.protocol.codes import RequestCode, SerializeType, Version
from namesrv.protocol.command import make_request
from namesrv.security.signature import sign_request_ext

OPAQUE_BASE = 1_000_000_000
OPAQUE_LIMIT = 2_147_483_647
#: Opaques each worker process may use; ten digits for up to 11 workers.
OPAQUES_PER_WORKER = 100_000_000

_LENGTH = struct.Struct(">i")
_OPAQUE_KEY = b'"opaque":'
_SUCCESS_PREFIX = b'{"code":0,'
_ROCKETMQ_OPAQUE = struct.Struct(">i")


class FrameTemplate:
    """A JSON-header request frame with its opaque cut out: ``pre + ten digits + post``."""

    __slots__ = ("pre", "post")

    def __init__(self, command):
        if command.serialize_type != SerializeType.JSON:
            raise ValueError("templates are JSON-header frames")
        command.opaque = OPAQUE_BASE
        frame = encode_frame(command)
        marker = _OPAQUE_KEY + b"%d" % OPAQUE_BASE
        at = frame.index(marker) + len(_OPAQUE_KEY)
        self.pre = frame[:at]
        self.post = frame[at + 10:]

    def frame(self, opaque):
        return self.pre + opaque_digits(opaque) + self.post


def opaque_digits(opaque):
    if not OPAQUE_BASE <= opaque <= OPAQUE_LIMIT:
        raise ValueError("opaque %d is not a ten-digit int32" % opaque)
    return b"%d" % opaque


def route_request(topic, version=Version.V4_9_8, credentials=None):
    """GET_ROUTEINFO_BY_TOPIC as a 4.9.8 Java client sends it (standard JSON answer); signed as
    ``AclClientRPCHook`` signs it with ``credentials`` ((accessKey, secretKey)) when given. The signature
    does not cover the opaque: a template is signed once, for every opaque it is sent with."""
    ext = {"topic": topic}
    if credentials is not None:
        ext = sign_request_ext(ext, None, *credentials)
    return make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, ext, version=version)


def route_templates(topics, version=Version.V4_9_8, credentials=None):
    return [FrameTemplate(route_request(topic, version, credentials)) for topic in topics]


def scan_frames(buffer, start=0):
    """Yield ``(opaque, success, end)`` for every complete frame in ``buffer`` from ``start``.

    ``opaque`` is None when the header has none we can find (counted as unmatched).
    """
    size = len(buffer)
    pos = start
    while size - pos >= 4:
        (length,) = _LENGTH.unpack_from(buffer, pos)
        end = pos + 4 + length
        if length < 4 or end > size:
            return
        yield frame_opaque(buffer, pos, end) + (end,)
        pos = end


def frame_opaque(buffer, pos, end):
    """``(opaque, success)`` of the frame at ``buffer[pos:end]`` (length field included)."""
    if buffer[pos + 4] == SerializeType.ROCKETMQ:
        (code,) = struct.unpack_from(">h", buffer, pos + 8)
        (opaque,) = _ROCKETMQ_OPAQUE.unpack_from(buffer, pos + 13)
        return opaque, code == 0
    at = buffer.find(_OPAQUE_KEY, pos + 8, end)
    if at < 0:
        return None, False
    at += len(_OPAQUE_KEY)
    stop = at
    while stop < end and buffer[stop] in b"-0123456789":
        stop += 1
    try:
        opaque = int(buffer[at:stop])
    except ValueError:
        return None, False
    return opaque, buffer.startswith(_SUCCESS_PREFIX, pos + 8)


def percentile(ordered, fraction):
    """Nearest-rank percentile of an already sorted sequence (None when empty)."""
    if not ordered:
        return None
    rank = max(1, -(-int(round(fraction * 1_000_000)) * len(ordered) // 1_000_000))
    return ordered[min(len(ordered), rank) - 1]
