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
returning None (no such topic) takes the shape's other answer: TOPIC_NOT_EXIST, whose remark names
the topic, is kept as its header with the topic cut out (where it appears exactly once), once one
such answer was seen for the shape. The AnswerCache drops its shapes with everything else on
``invalidate()``.
"""

import string
import struct
from typing import Callable, Optional

from namesrv.protocol.codes import SerializeType
from namesrv.protocol.command import RemotingCommand

#: how observers count an answer: (request code, response code)
Counted = tuple[int, int]
#: the body for another value of the field an answer varies by; None when that value has none
BodyFor = Callable[[str], Optional[bytes]]

_PAIR = struct.Struct(">ii")
_JSON_WORD = int(SerializeType.JSON) << 24
#: the values a shape may cut: RocketMQ's topic characters (no quote, no escape, plain ASCII); a value
#: is plain when deleting these leaves nothing (``bytes.translate``: a third of a regular expression's time)
_PLAIN_CHARS = (string.ascii_letters + string.digits + "_%|-").encode("ascii")
_QUOTE = b'"'
#: shapes kept per field at most (a client library has a few; past this they start over)
MAX_SHAPES = 4096


def _plain_value(value: bytes) -> bool:
    return bool(value) and not value.translate(None, _PLAIN_CHARS)


def shape_key(frame: bytes, start: int, stop: int, first: int, last: int) -> tuple[bytes, int]:
    """``frame`` without the opaque's digits (``start:stop``) and the value (``first:last``), and where
    the value was in that: two frames differ in nothing but those two values only if both are equal."""
    if first < start:
        return frame[:first] + frame[last:start] + frame[stop:], first
    return frame[:start] + frame[stop:first] + frame[last:], first - (stop - start)


class _Shape:
    """What answers every frame of one shape, and where the value goes in the shape's key. ``found``:
    (header before the opaque, after it, what observers count it as) for a value with a body;
    ``missing``: (header before the opaque, between it and the value, after the value, counted) for a
    value without one (TOPIC_NOT_EXIST, whose remark names the topic). Either may be None until a
    slow-path answer of that kind was seen for this shape."""

    __slots__ = ("at", "body_for", "found", "missing")

    def __init__(self, at: int, body_for: BodyFor) -> None:
        self.at, self.body_for = at, body_for
        self.found: Optional[tuple[bytes, bytes, Counted]] = None
        self.missing: Optional[tuple[bytes, bytes, bytes, Counted]] = None


class Shapes:
    """Field marker (``b'"topic":"'``) -> {shape key: _Shape}."""

    def __init__(self) -> None:
        #: marker -> {shape key: _Shape}; empty until a shape is learnt (the AnswerCache looks at it
        #: before calling ``answer``)
        self.markers: dict[bytes, dict[bytes, _Shape]] = {}

    def __bool__(self) -> bool:
        return bool(self.markers)

    def __len__(self) -> int:
        return sum(map(len, self.markers.values()))

    def answer(self, frame: bytes, start: int, stop: int, opaque: bytes) -> Optional[tuple[bytes, Counted]]:
        """(the whole answer frame, what it counts as) for a JSON ``frame`` whose opaque, ``opaque``,
        is at ``start:stop``, when its shape and the kind of answer its value gets are known; else None."""
        for marker, shapes in self.markers.items():
            at = frame.find(marker)
            if at < 0:
                continue
            first = at + len(marker)
            last = frame.find(_QUOTE, first)
            value = frame[first:last]
            if last < 0 or not value or value.translate(None, _PLAIN_CHARS):   # _plain_value, inline
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
            if body is not None:
                found = shape.found
                if found is None:
                    return None
                prefix, suffix, counted = found
                header_length = len(prefix) + len(suffix) + stop - start
                return b"".join((_PAIR.pack(4 + header_length + len(body), _JSON_WORD | header_length), prefix,
                                 opaque, suffix, body)), counted
            missing = shape.missing
            if missing is None:
                return None
            prefix, middle, tail, counted = missing
            header_length = len(prefix) + len(middle) + len(tail) + stop - start + len(value)
            return b"".join((_PAIR.pack(4 + header_length, _JSON_WORD | header_length), prefix, opaque, middle,
                             value, tail)), counted
        return None

    def remember(self, frame: bytes, span: tuple[int, int], request: RemotingCommand, varies_by: tuple[str, BodyFor],
                 prefix: bytes, suffix: bytes, counted: Counted, body: bytes) -> bool:
        """Learn from ``frame`` (decoded as ``request``, its opaque's digits at ``span``), answered with
        header ``prefix`` + opaque + ``suffix`` and ``body``, and varying by one ext field (``varies_by``:
        its name and ``body_for``): with a body, that header serves every value with a body; without
        one, the header with the value cut out of it (where it appears once, after the opaque) serves
        every value without. False when the value cannot be cut from the frame (not plain, or its
        field's marker appears more than once) or from that header."""
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
        if not body:
            cut = suffix.find(raw)
            if cut < 0 or suffix.find(raw, cut + 1) >= 0 or raw in prefix:
                return False
        shapes = self.markers.setdefault(marker, {})
        key, at = shape_key(frame, span[0], span[1], first, last)
        shape = shapes.get(key)
        if shape is None or shape.at != at:
            if len(shapes) >= MAX_SHAPES:
                shapes.clear()
            shape = shapes[key] = _Shape(at, body_for)
        if body:
            shape.found = (prefix, suffix, counted)
        else:
            shape.missing = (prefix, suffix[:cut], suffix[cut + len(raw):], counted)
        shape.body_for = body_for
        return True
