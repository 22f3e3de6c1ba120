"""Whole answer frames for repeated read requests, keyed by the request's bytes minus its opaque.

A client polls GET_ROUTEINFO_BY_TOPIC for each of its topics every 30 s, with a header
that differs from the previous poll only in its ``opaque``. Decoding that header,
dispatching it and encoding the same answer again costs many times what looking the frame
up here costs, which is what lets route reads run close to the framework's ceiling
(bench/results/design-figures.md#answer-cache, ``python -m bench``).

Correctness rests on three rules:

- **What may be cached** is decided by whoever built the answer: a processor marks a
  response ``cacheable`` only when it is a pure function of the request's header and of
  the tables, configuration and KV config (never a "not ready" or SYSTEM_BUSY answer),
  and every request policy must agree (``allows_cached_answer(code)``; a policy without
  that method switches caching off for everything).
- **Whose answer it is**, with ACL on: the ACL check's verdict depends on the peer's host too
  (``IPeerScopedPolicy``), so the key starts with the host, and no shape answers (a shape
  answers a frame that differs in one field, which the signature would not cover). A signed
  read is then answered from here only when the same host sent the same bytes before and was
  let through; new credentials empty the cache, as any change of configuration does.
- **When it goes stale**: ``invalidate()`` drops everything; the route tables, the KV
  store and the configuration call it on every change, and the registry when a policy
  or observer is added. A heartbeat that changes nothing invalidates nothing.
- **Which frames match**: the key is the request frame with the opaque's bytes cut out
  (JSON: the digits after the only ``"opaque":``; ROCKETMQ: the 4 bytes at a fixed
  offset), so two frames share a key only if they differ in nothing but the opaque. (A
  JSON opaque with one more digit changes the header-length word too: a different key,
  filled by one more slow-path answer.)
  A frame is stored only after the slow path decoded it and its opaque was found where
  the key expects it; a looked-up JSON opaque must be a plain int32 literal, else the
  frame takes the slow path (which answers or closes exactly as before).

**What it costs**: an entry keeps the request key and the answer's header around the
opaque; the body is kept once however many entries answer with it (route bodies name no
topic, so the topics on the same brokers share one). Entries and bodies are counted in
bytes, in two generations of half the limits each: when the young one is full it becomes the
older one and the older one goes (an answer looked up there moves back to the young one).

**Shapes** (answershapes.py): a route read of any topic, once one read of its shape went the
slow way, is answered from the body the route tables keep for that topic, and stored as nothing.

**Who asks**: the protocol calls ``usable()`` once per read from a socket (a read worker's
replica that went stale says no: every frame of that read takes the slow path).

Observers still see every request: the protocol calls ``report(peer)`` after each read,
and each observer gets the replayed answers per (code, response code), in bulk through
``record_requests`` when it has one, so metrics and the event log's per-second request
aggregates count cached answers too.
"""

import struct
from typing import Literal, Optional, Protocol, Union

from namesrv.interfaces import IBulkRequestObserver
from namesrv.protocol.answershapes import Counted, Shapes
from namesrv.protocol.codec import encode_frame, encode_json_header
from namesrv.protocol.codes import SerializeType
from namesrv.protocol.command import RemotingCommand

_PAIR = struct.Struct(">ii")
_INT = struct.Struct(">i")
_OPAQUE_KEY = b'"opaque":'
_OPAQUE_KEY_LEN = len(_OPAQUE_KEY)
_ZERO = ord("0")
_INT32_MAX_DIGITS = b"2147483647"
_JSON = SerializeType.JSON
_JSON_WORD = int(SerializeType.JSON) << 24
_ROCKETMQ = SerializeType.ROCKETMQ
#: A sentinel opaque, unlikely to appear anywhere else in an encoded answer.
_SENTINEL = -1737418241
_SENTINEL_JSON = b"%d" % _SENTINEL
_SENTINEL_RMQ = struct.pack(">i", _SENTINEL)

#: an answer kept: (its frame up to the opaque, after the opaque up to the body, the body, what it counts as)
Entry = tuple[bytes, bytes, bytes, Counted]


class AnswerRegistry(Protocol):
    """What the cache asks of the registry whose answers it replays (namesrv/dispatch/registry.py)."""

    @property
    def observers(self) -> IBulkRequestObserver: ...

    #: an answer may be replayed only to the same frame from the same host (the ACL check's verdict)
    answers_per_host: bool

    def allows_cached_answer(self, code: int) -> bool: ...


def _json_opaque_span(frame: bytes) -> Optional[tuple[int, int]]:
    """(start, stop) of the opaque's digits in a JSON-header frame, or None if not a plain int32.

    The digits end at the next ``,`` (or ``}`` when the opaque is the header's last field);
    anything but an optional ``-`` and 1 to 10 digits without a leading zero is refused.
    """
    at = frame.find(_OPAQUE_KEY)
    if at < 0:
        return None
    start = at + _OPAQUE_KEY_LEN
    stop = frame.find(b",", start)
    if stop < 0 or not _plain_int(frame[start:stop]):
        stop = frame.find(b"}", start)
        if stop < 0 or not _plain_int(frame[start:stop]):
            return None
    return start, stop


def host_scope(peer: Optional[str]) -> bytes:
    """The key prefix of answers kept per host: ``peer``'s host (``ip:port``, IPv6 in brackets) and a
    newline, which no host holds, so no frame can pass for another host's."""
    peer = peer or ""
    host = peer.rpartition(":")[0] if ":" in peer else peer
    return host.encode("utf-8", "surrogatepass") + b"\n"


def _plain_int(text: bytes) -> bool:
    digits = text[1:] if text[:1] == b"-" else text
    size = len(digits)
    if not 0 < size <= 10 or not digits.isdigit() or (digits[0] == _ZERO and (size > 1 or digits is not text)):
        return False
    return size < 10 or -2**31 <= int(text) < 2**31


#: what an answer costs beside its bytes: the dict slots, the tuple, four bytes objects' headers
ENTRY_OVERHEAD = 290
#: what one more key costs when its answer is kept already: its bytes object's header and a dict slot
KEY_OVERHEAD = 100
BODY_OVERHEAD = 120
DEFAULT_MAX_BYTES = 64 << 20


class AnswerCache:
    """Request frame (minus opaque) → the answer frame (minus opaque), for cacheable answers;
    request shape (minus opaque and one value) → how to answer it, for answers that vary by it."""

    def __init__(self, registry: AnswerRegistry, max_entries: int = 262144, max_frame_length: int = 1024,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.registry = registry
        self.per_host = registry.answers_per_host
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_frame_length = max_frame_length
        self._entries: dict[bytes, Entry] = {}   # the young generation: stores and promoted hits
        self._older: dict[bytes, Entry] = {}     # the previous one, looked up when the young one misses
        self._bodies: dict[bytes, bytes] = {}    # the young generation's bodies, each kept once
        self._answers: dict[Entry, Entry] = {}   # the young generation's answers, each kept once (keys share them)
        self._shapes = Shapes()  # for answers that vary by one field (answershapes.py)
        self.bytes = 0           # the young generation's
        self._older_bytes = 0
        self._counts: dict[Counted, int] = {}
        self.hits = 0
        self.stores = 0
        self.invalidations = 0
        self.evictions = 0
        self.shaped = 0          # answers built from a shape

    def __len__(self) -> int:
        """Entries and shapes kept."""
        return len(self._entries) + len(self._older) + self.shapes

    @property
    def shapes(self) -> int:
        return len(self._shapes)

    @property
    def total_bytes(self) -> int:
        return self.bytes + self._older_bytes

    def usable(self) -> bool:
        """Whether answers may come from here now (a read worker's stale replica says no)."""
        return True

    def set_limits(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        if self.bytes > max_bytes // 2 or len(self._entries) > max_entries // 2:
            self._age()
        if self._older_bytes > max_bytes // 2 or len(self._older) > max_entries // 2:
            self._older, self._older_bytes = {}, 0

    def invalidate(self, *ignored: object) -> None:
        """Forget every answer and shape (accepts and ignores listener arguments)."""
        if self._entries or self._older or self._bodies or self._shapes:
            self._entries, self._older, self._bodies, self._answers, self._shapes = {}, {}, {}, {}, Shapes()
            self.bytes = self._older_bytes = 0
        self.invalidations += 1

    def _age(self) -> None:
        """The young generation becomes the older one, whose entries go (unless looked up since and so
        promoted): O(1), no pass over the entries, so a full cache never holds the reactor."""
        self._older, self._older_bytes = self._entries, self.bytes
        self._entries, self._bodies, self._answers, self.bytes = {}, {}, {}, 0
        self.evictions += 1

    # -- the hot path --------------------------------------------------------------
    def answer(self, frame: bytes, peer: str) -> Optional[bytes]:
        """The whole answer frame (length field included) for ``frame`` from ``peer``, or None (take the
        slow path)."""
        entries, shapes = self._entries, self._shapes
        if not (entries or shapes.markers or self._older) or not 4 <= len(frame) <= self.max_frame_length:
            return None
        kind = frame[0]
        if kind == _JSON:
            at = frame.find(_OPAQUE_KEY)
            if at < 0:
                return None
            start = at + _OPAQUE_KEY_LEN
            stop = frame.find(b",", start)
            opaque = frame[start:stop]
            # the common case inline: a non-negative int32 without a leading zero (for equal
            # lengths, comparing digit strings compares numbers); anything else the long way
            size = len(opaque)
            if (stop < 0 or not opaque.isdigit() or size > 10 or (opaque[0] == _ZERO and size > 1)
                    or (size == 10 and opaque > _INT32_MAX_DIGITS)):
                span = _json_opaque_span(frame)
                if span is None:
                    return None
                start, stop = span
                opaque = frame[start:stop]
            if shapes.markers and not self.per_host:
                found = shapes.answer(frame, start, stop, opaque)
                if found is not None:
                    whole, counted = found
                    self.hits += 1
                    self.shaped += 1
                    counts = self._counts
                    counts[counted] = counts.get(counted, 0) + 1
                    return whole
            key = frame[:start] + frame[stop:]
        elif kind == _ROCKETMQ and len(frame) >= 13:
            opaque = frame[9:13]
            key = frame[:9] + frame[13:]
        else:
            return None
        if self.per_host:
            key = host_scope(peer) + key
        entry = entries.get(key)
        if entry is None:
            entry = self._older.get(key)
            if entry is None:
                return None
            self._store(key, entry)           # still asked for: it moves to the young generation
        return self._replay(entry, opaque)

    def _replay(self, entry: Entry, opaque: bytes) -> bytes:
        head, suffix, body, counted = entry
        self.hits += 1
        counts = self._counts
        counts[counted] = counts.get(counted, 0) + 1
        return b"".join((head, opaque, suffix, body))

    def report(self, peer: str) -> None:
        """Tell the observers about the answers replayed since the last report (one peer's batch).

        Their handling time is reported as 0 µs: a replay costs well under one.
        """
        counts, self._counts = self._counts, {}
        for (code, response_code), count in counts.items():
            self.registry.observers.record_requests(code, response_code, count, 0, peer)

    # -- filling ------------------------------------------------------------------
    def remember(self, frame: bytes, request: RemotingCommand, response: Optional[RemotingCommand],
                 peer: Optional[str] = None) -> bool:
        """Store ``response`` (the answer to ``frame`` from ``peer``, decoded as ``request``) if it may be
        reused: as the shape of every frame like it when it says it varies by one field, else as an entry."""
        if (response is None or not getattr(response, "cacheable", False)
                or request.is_oneway or len(frame) > self.max_frame_length
                or not self.registry.allows_cached_answer(request.code)):
            return False
        if request.serialize_type == _JSON:
            entry = self._json_entry(frame, request, response)
        elif request.serialize_type == _ROCKETMQ:
            entry = self._rocketmq_entry(frame, request, response)
        else:
            return False
        if entry is None:
            return False
        if entry is not True:
            key, answer = entry
            self._store(host_scope(peer) + key if self.per_host else key, answer)
        self.stores += 1
        return True

    def _store(self, key: bytes, entry: Entry) -> None:
        """Keep ``entry`` for ``key``. An answer is kept once however many keys share it (the route reads of
        every topic on the same brokers, signed ones included: with ACL on each topic's frame is a key of its
        own), so a key that points at a kept answer costs its bytes and a slot only."""
        shared = self._answers.get(entry)
        if shared is not None:
            self._entries[key] = shared
            size = len(key) + KEY_OVERHEAD
        else:
            head, suffix, body, counted = entry
            size = len(key) + len(head) + len(suffix) + ENTRY_OVERHEAD
            if body:
                kept = self._bodies.get(body)
                if kept is None:
                    self._bodies[body] = body
                    size += len(body) + BODY_OVERHEAD
                elif kept is not body:
                    entry = (head, suffix, kept, counted)
            self._answers[entry] = entry
            self._entries[key] = entry
        self.bytes += size
        if self.bytes > self.max_bytes // 2 or len(self._entries) > self.max_entries // 2:
            self._age()

    def _json_entry(self, frame: bytes, request: RemotingCommand,
                    response: RemotingCommand) -> Union[tuple[bytes, Entry], Literal[True], None]:
        """(key, entry) for ``frame``, True when it was kept as a shape instead, or None."""
        if len(frame) < 4:
            return None
        header = frame[4:4 + (_INT.unpack_from(frame, 0)[0] & 0xFFFFFF)]
        if b"\\" in header or frame.count(_OPAQUE_KEY) != 1:
            return None
        span = _json_opaque_span(frame)
        if span is None or int(frame[span[0]:span[1]]) != request.opaque:
            return None
        header_bytes = encode_json_header(response.with_changes(opaque=_SENTINEL))
        body = response.body or b""
        cut = header_bytes.find(_SENTINEL_JSON)
        if cut < 0 or header_bytes.find(_SENTINEL_JSON, cut + 1) >= 0:
            return None
        prefix, suffix = header_bytes[:cut], header_bytes[cut + len(_SENTINEL_JSON):]
        counted = (request.code, response.code)
        if response.varies_by is not None and not self.per_host and self._shapes.remember(
                frame, span, request, response.varies_by, prefix, suffix, counted, body):
            return True
        # Frames sharing this key have as many opaque digits as this one (the header-length
        # word is part of the key), so the answer's lengths can be fixed now.
        header_length = len(prefix) + (span[1] - span[0]) + len(suffix)
        head = _PAIR.pack(4 + header_length + len(body), _JSON_WORD | header_length) + prefix
        key = frame[:span[0]] + frame[span[1]:]
        return key, (head, suffix, body, counted)

    def _rocketmq_entry(self, frame: bytes, request: RemotingCommand,
                        response: RemotingCommand) -> Optional[tuple[bytes, Entry]]:
        if len(frame) < 13 or _INT.unpack_from(frame, 9)[0] != request.opaque:
            return None
        whole = encode_frame(response.with_changes(opaque=_SENTINEL))
        # the answer's opaque sits at the same fixed offset (after the 4-byte length field)
        if whole[13:17] != _SENTINEL_RMQ:
            return None
        return frame[:9] + frame[13:], (whole[:13], whole[17:], b"", (request.code, response.code))
