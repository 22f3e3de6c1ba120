"""Shapes: every topic's route read answered at the price of a lookup, whatever the number of topics.

The AnswerCache keeps whole answers keyed by the request frame minus its opaque: a client
re-reading a topic is answered without decoding anything. At 100,000 topics that is not enough:
a first read of each topic (a client starting, a cache emptied by any change) took the slow
path, and keeping every answer costs more memory than the tables. But a client's route reads
differ from each other only in the topic and the opaque, and a route answer's header names no
topic. So when the processor says so (``response.varies_by``: the ext field, and how to get
the body for another value of it), the request frame with both the opaque's digits and that
field's value cut out is kept as a *shape*, with the answer's header around the opaque. A
frame of a known shape is answered with ``body_for(value)`` (the route tables keep each topic's
body until something it was built from changes: routes/bodycache.py) and that header; nothing
is stored for it.

Why a frame of a known shape decodes to the same request but for the value: a value is cut
only when it is plain (RocketMQ's topic characters: no quote, no escape, ASCII) and its field
appears once in the shape's first frame, which was decoded the slow way; a frame with the same
key differs from that one in nothing but the opaque's digits and those plain characters (the
header-length word is part of the key, so the value has the same length). ``body_for``
returning None (no such topic: that answer's remark names it) leaves the frame to the entries
and the slow path. The AnswerCache drops its shapes with everything else on ``invalidate()``.
"""

import re
import struct

from namesrv.protocol.codes import SerializeType

_PAIR = struct.Struct(">ii")
_JSON_WORD = int(SerializeType.JSON) << 24
#: the values a shape may cut: RocketMQ's topic characters (no quote, no escape, plain ASCII)
_PLAIN_VALUE = re.compile(rb"[A-Za-z0-9_%|-]+")
_QUOTE = b'"'
#: shapes kept per field at most (a client library has a few; past this they start over)
MAX_SHAPES = 4096


def _plain_value(value):
    return value.isalnum() or _PLAIN_VALUE.fullmatch(value) is not None


def shape_key(frame, start, stop, first, last):
    """``frame`` without the opaque's digits (``start:stop``) and the value (``first:last``), and where
    the value was in that: two frames differ in nothing but those two values only if both are equal."""
    if first < start:
        return frame[:first] + frame[last:start] + frame[stop:], first
    return frame[:start] + frame[stop:first] + frame[last:], first - (stop - start)


class _Shape:
    """What answers every frame of one shape: the answer header around the opaque, the body for a
    value, what observers count it as, and where the value goes in the shape's key."""

    __slots__ = ("prefix", "suffix", "fixed_length", "body_for", "counted", "at")

    def __init__(self, prefix, suffix, body_for, counted, at):
        self.prefix, self.suffix, self.body_for, self.counted, self.at = prefix, suffix, body_for, counted, at
        self.fixed_length = len(prefix) + len(suffix)


class Shapes:
    """Field marker (``b'"topic":"'``) -> {shape key: _Shape}."""

    def __init__(self):
        self._by_marker = {}

    def __bool__(self):
        return bool(self._by_marker)

    def __len__(self):
        return sum(map(len, self._by_marker.values()))

    def answer(self, frame, start, stop, opaque):
        """(the whole answer frame, what it counts as) for a JSON ``frame`` whose opaque, ``opaque``,
        is at ``start:stop``, when its shape is known and its value has a body; else None."""
        for marker, shapes in self._by_marker.items():
            at = frame.find(marker)
            if at < 0:
                continue
            first = at + len(marker)
            last = frame.find(_QUOTE, first)
            value = frame[first:last]
            if last < 0 or not (value.isalnum() or _PLAIN_VALUE.fullmatch(value)):
                continue
            if first < start:     # shape_key, inline: this is the hot path
                shape = shapes.get(frame[:first] + frame[last:start] + frame[stop:])
                if shape is None or shape.at != first:
                    continue
            else:
                shape = shapes.get(frame[:start] + frame[stop:first] + frame[last:])
                if shape is None or shape.at != first - (stop - start):
                    continue
            body = shape.body_for(value.decode("ascii"))
            if body is None:
                return None
            header_length = shape.fixed_length + stop - start
            return b"".join((_PAIR.pack(4 + header_length + len(body), _JSON_WORD | header_length), shape.prefix,
                             opaque, shape.suffix, body)), shape.counted
        return None

    def remember(self, frame, span, request, varies_by, prefix, suffix, counted):
        """Keep the shape of ``frame`` (decoded as ``request``, its opaque's digits at ``span``), whose
        answer is ``prefix`` + opaque + ``suffix`` + body and varies by one ext field (``varies_by``:
        its name and ``body_for``). False when that field's value cannot be cut (not plain, or the
        field's marker appears more than once)."""
        name, body_for = varies_by
        value = request.get(name)
        marker = b'"%s":"' % name.encode("ascii")
        if not isinstance(value, str) or frame.count(marker) != 1:
            return False
        first = frame.find(marker) + len(marker)
        last = frame.find(_QUOTE, first)
        raw = frame[first:last]
        if last < 0 or not _plain_value(raw) or raw != value.encode("ascii", "replace"):
            return False
        shapes = self._by_marker.setdefault(marker, {})
        if len(shapes) >= MAX_SHAPES:
            shapes.clear()
        key, at = shape_key(frame, span[0], span[1], first, last)
        shapes[key] = _Shape(prefix, suffix, body_for, counted, at)
        return True
