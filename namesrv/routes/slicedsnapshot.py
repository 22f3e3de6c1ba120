"""Route snapshots of version 3: written and restored a slice at a time, every byte checked before use.

A million topics were one msgpack map: encoding it held the reactor for seconds' worth of reads (every
``routeSnapshotInterval``, 30 s by default), restoring it held the port closed longer still, and a read worker
then needed a full copy down its pipe (figures: bench/results/design-figures.md#sliced-snapshot). Here the
file is a small header and chunks of topics, grouped by their map
(QueueMap: one row of QueueData indexes per distinct map), so that:

- the writer (``write_steps``) is a generator, a chunk of ~``CHUNK_TOPICS`` topics per step; the tables go
  on changing meanwhile, and the topics that change while it runs (a tracker, as the read workers'
  publisher has) are left out of later chunks and written again, as they are at the end, in ``patch``
  chunks: the file is the tables as they were when its last step ran;
- a reader (``SlicedSnapshot``) checks the prefix, the header's CRC32 and every chunk's CRC32 and decodes
  and checks the header (broker-level tables, live entries, QueueData rows, shapes) before anything is
  used: a truncated or altered file is refused whole, as before;
- the restore (``restore_steps``) puts the broker-level tables in at once and then a chunk per step (a
  dict update and a set update per map, in C; the patch first), each chunk's values checked as it is
  decoded; the main
  process serves while it runs (route reads of topics not restored yet wait for the end: never a
  TOPIC_NOT_EXIST before it), and each read worker restores the same file itself instead of receiving
  a copy.

Layout: ``MAGIC``, the header's length and CRC32 (big-endian uint32s), the header (a msgpack map:
format, version 3, owner, brokers, clusters, filters, live, mappings, queueDatas, shapes, chunks
[[length, crc32, topics], ...], patchFrom), then the chunks, each a msgpack list of
[shape index (None in a patch chunk: the topic is gone), [topic, ...]].
"""

from __future__ import annotations

import struct
import zlib
from itertools import compress, filterfalse, repeat
from operator import eq, is_
from typing import TYPE_CHECKING, Any, Callable, Generator, Iterator, Optional, Protocol, Union, cast

import msgpack

from namesrv.routes import rows
from namesrv.routes.invariants import check_invariants
from namesrv.routes.model import QueueData, shared_queue_data

if TYPE_CHECKING:   # types only
    from namesrv.interfaces import IEventLog
    from namesrv.routes.changes import RouteChanges
    from namesrv.routes.manager import RouteInfoManager
    from namesrv.routes.queuemaps import QueueMap
    from namesrv.routes.tables import RouteTables

#: a snapshot's bytes, or a view of them
Data = Union[bytes, memoryview]
#: a chunk's groups: [shape index (None in a patch chunk: gone), [topic, ...]]
Group = list[Any]

MAGIC = b"RMQNSv3\n"
_PREFIX = struct.Struct(">8sII")
VERSION = 3
#: topics per chunk: a few ms to decode and restore, or to encode, so a chunk fits in one reactor turn
CHUNK_TOPICS = 10000


class SnapshotError(ValueError):
    """The snapshot is corrupt, of another format or of an unsupported version."""


class _Changed(set[str]):
    """Topics changed while a writer runs (a tracker of the change tracker); ``full``: the tables were replaced."""

    full = False


class TablesReplaced(SnapshotError):
    """The tables were replaced while the snapshot was being written: it must be written again."""


def _pack(value: object) -> bytes:
    # surrogatepass: a topic name may hold a lone surrogate (a broker's JSON "\udc80"); it must come back as
    # it went. An integer beyond 64 bits raises OverflowError: SnapshotError.
    try:
        return msgpack.packb(value, use_bin_type=True, unicode_errors="surrogatepass")
    except (OverflowError, TypeError, ValueError) as e:
        raise SnapshotError("the route tables cannot be saved: %s" % e)


def _unpack(data: Data, what: str) -> Any:   # decoded msgpack: every caller checks what it got
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False, unicode_errors="surrogatepass")
    except Exception as e:   # msgpack raises several unrelated types on garbage
        raise SnapshotError("%s cannot be decoded: %s" % (what, e))


def is_sliced(data: Data) -> bool:
    return bytes(data[:len(MAGIC)]) == MAGIC


# -- writing ----------------------------------------------------------------------------------

def write_steps(routes: RouteInfoManager, owner: Optional[dict[str, Any]] = None, chunk_topics: int = CHUNK_TOPICS,
                changed: Optional[_Changed] = None) -> Generator[None, None, list[bytes]]:
    """Write ``routes`` (a RouteInfoManager) as a version 3 snapshot, a generator yielding after each chunk;
    it returns the file's pieces (a list of bytes). ``changed``: a tracker already following the tables
    (the topics changed since it began are written in patch chunks); by default one is made for the run.
    Raises TablesReplaced if the tables were replaced meanwhile (a takeover's restore, a reset)."""
    tables = routes.tables
    changes = tables.changes
    own = changed is None
    if changed is None:   # own
        changed = changes.track(_Changed())
    try:
        maps = [qmap for qmap in tables.queue_maps if qmap.topics]
        chunks: list[tuple[bytes, int, int]] = []
        qmap: Optional[QueueMap]
        part: list[Any]
        groups: list[Group]
        groups, count = [], 0
        for shape, qmap in enumerate(maps):
            if changed.full:
                raise TablesReplaced("the route tables were replaced while the snapshot was written")
            names = list(qmap.topics - changed) if changed else list(qmap.topics)
            for start in range(0, len(names), chunk_topics):
                part = names[start:start + chunk_topics]
                groups.append([shape, part])
                count += len(part)
                if count >= chunk_topics:
                    chunks.append(_chunk(groups, count))
                    groups, count = [], 0
                    yield
        if groups:
            chunks.append(_chunk(groups, count))
        if changed.full:
            raise TablesReplaced("the route tables were replaced while the snapshot was written")
        # the moment the file stands for: the topics changed meanwhile as they are now, and every other table
        patch_from = len(chunks)
        touched = list(changed)
        found = list(map(tables.topic_queue_table.get, touched))
        ids = list(map(id, found))
        shape_of = {id(qmap): shape for shape, qmap in enumerate(maps)}
        for qmap in dict(zip(ids, found)).values():
            if qmap is not None and id(qmap) not in shape_of:
                shape_of[id(qmap)] = len(maps)
                maps.append(qmap)
        patch: list[Group] = [[shape_of[key], list(compress(touched, map(eq, ids, repeat(key))))]
                 for key in dict.fromkeys(ids) if key != id(None)]
        gone = list(compress(touched, map(is_, found, repeat(None))))
        if gone:
            patch.append([None, gone])
        for start in range(0, len(patch), 64):
            part = patch[start:start + 64]
            chunks.append(_chunk(part, sum(len(names) for _, names in part)))
        header = {"format": "rocketmq-namesrv-routes", "version": VERSION, "owner": owner,
                  "live": rows.live_rows(routes), "mappings": routes.topic_queue_mapping_info_table,
                  "patchFrom": patch_from, **rows.shape_rows(maps),
                  "chunks": [[len(data), crc, topics] for data, crc, topics in chunks],
                  **rows.broker_level_rows(routes)}
        data = _pack(header)
        return [_PREFIX.pack(MAGIC, len(data), zlib.crc32(data)), data] + [data for data, _, _ in chunks]
    finally:
        if own:
            changes.untrack(changed)


def _chunk(groups: list[Group], count: int) -> tuple[bytes, int, int]:
    data = _pack(groups)
    return data, zlib.crc32(data), count


def write_all(routes: RouteInfoManager, owner: Optional[dict[str, Any]] = None) -> bytes:
    """``write_steps`` run to its end at once: the file's bytes."""
    steps = write_steps(routes, owner)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return b"".join(done.value)


# -- reading ---------------------------------------------------------------------------------

class SlicedSnapshot:
    """The bytes of a version 3 snapshot, checked (prefix, CRC32 of the header and of every chunk, the
    header's values); chunks are decoded and checked one at a time (``chunk``)."""

    def __init__(self, data: Data, check_header: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """``check_header(header)`` returns the checked rows of the header (snapshot._checked_rows' shape)."""
        view = memoryview(data)
        if len(view) < _PREFIX.size or not is_sliced(view):
            raise SnapshotError("not a sliced route snapshot")
        _, length, crc = _PREFIX.unpack_from(view)
        end = _PREFIX.size + length
        if end > len(view) or zlib.crc32(view[_PREFIX.size:end]) != crc:
            raise SnapshotError("the route snapshot's header is truncated or altered")
        header = _unpack(view[_PREFIX.size:end], "the route snapshot's header")
        if not isinstance(header, dict) or header.get("format") != "rocketmq-namesrv-routes" \
                or header.get("version") != VERSION:
            raise SnapshotError("not a route snapshot of version %d" % VERSION)
        self.owner = header.get("owner")
        try:
            self.rows = check_header(header)
            self.chunks: list[tuple[int, int, int]] = []
            offset = end
            for length, crc, count in header["chunks"]:
                if not (type(length) is int and type(count) is int and 0 <= length <= len(view) - offset):
                    raise SnapshotError("the route snapshot is truncated")
                if zlib.crc32(view[offset:offset + length]) != crc:
                    raise SnapshotError("a chunk of the route snapshot is altered")
                self.chunks.append((offset, length, count))
                offset += length
            if offset != len(view):
                raise SnapshotError("the route snapshot has bytes after its last chunk")
            self.patch_from = header["patchFrom"]
            if type(self.patch_from) is not int or not 0 <= self.patch_from <= len(self.chunks):
                raise SnapshotError("bad patch index")
        except SnapshotError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            raise SnapshotError("corrupt route snapshot: %s" % e)
        self.view = view
        self.shape_count = len(self.rows["shapes"]["shapes"])
        self.topics = sum(count for _, _, count in self.chunks[:self.patch_from])

    def chunk(self, index: int) -> list[tuple[Optional[int], list[str]]]:
        """[(shape index, [topic, ...]), ...] of chunk ``index``, checked (a patch chunk's shape may be None)."""
        offset, length, count = self.chunks[index]
        groups = _unpack(self.view[offset:offset + length], "a chunk of the route snapshot")
        patch = index >= self.patch_from
        checked: list[tuple[Optional[int], list[str]]]
        checked, total = [], 0
        if not isinstance(groups, list):
            raise SnapshotError("a chunk of the route snapshot is not a list")
        for group in groups:
            if not (isinstance(group, list) and len(group) == 2 and isinstance(group[1], list)):
                raise SnapshotError("a chunk of the route snapshot holds a bad group")
            shape, names = group
            if not ((type(shape) is int and 0 <= shape < self.shape_count) or (patch and shape is None)):
                raise SnapshotError("bad topic shape %r" % (shape,))
            if not all(map(str.__instancecheck__, names)):
                raise SnapshotError("a topic is not a string")
            checked.append((shape, names))
            total += len(names)
        if total != count:
            raise SnapshotError("a chunk of the route snapshot does not hold what its header says")
        return checked



# -- restoring ---------------------------------------------------------------------------------

class RestoreTarget(Protocol):
    """What a restore fills: a RouteInfoManager, or tables apart with their change tracker (no events)."""

    @property
    def tables(self) -> RouteTables: ...
    @property
    def changes(self) -> RouteChanges: ...
    @property
    def events(self) -> IEventLog: ...


def restore_steps(routes: RestoreTarget, snapshot: SlicedSnapshot, now: float, emit_events: bool = True) \
        -> Iterator[None]:
    """Put ``snapshot`` (a SlicedSnapshot) into ``routes``' tables, which it replaces: a generator yielding
    after the broker-level tables and after each chunk.

    The patch chunks go first (the topics changed while the file was written, as they were at its end),
    then the others, leaving out the topics already in and those the patch says are gone: so every topic
    is restored once, with the map it had at the file's moment, and a topic served while the restore goes
    on never shows an older one. Each topic goes in with a dict update and a set update per map, in C; a
    topic met twice (a file this code did not write) raises SnapshotError, and so does any value a
    chunk's check refuses: the caller then empties the tables. The followers hear that the topic set
    changed after each chunk; topic trackers do not get the topics (a read worker restores the same
    file). ``topic_route_changed`` events name each chunk's groups (before: none)."""
    tables, changes = routes.tables, routes.changes
    checked = snapshot.rows
    tables.replace_from_rows(topics={}, now=now, mappings=checked["mappings"], brokers=checked["brokers"],
                             clusters=checked["clusters"], filters=checked["filters"], live=checked["live"])
    shapes = _shape_maps(tables, checked["shapes"])
    table = tables.topic_queue_table
    events = emit_events and changes.route_events_wanted()
    patched = set()   # the topics of the patch (gone ones too): the other chunks' copies are older
    yield
    order = list(range(snapshot.patch_from, len(snapshot.chunks))) + list(range(snapshot.patch_from))
    for index in order:
        patch = index >= snapshot.patch_from
        for shape, names in snapshot.chunk(index):
            if patch:
                patched.update(names)
                if shape is None:
                    continue
            elif patched:
                names = list(filterfalse(patched.__contains__, names))
            assert shape is not None   # chunk() lets None through in patch chunks only
            qmap = shapes[shape]
            before = len(table)
            table.update(dict.fromkeys(names, qmap))
            if len(table) - before != len(names):
                raise SnapshotError("a topic is listed twice in the route snapshot")
            qmap.topics.update(names)
            if events and names:
                routes.events.emit("topic_route_changed", topics=sorted(names), before=[], after=sorted(qmap))
        changes.topic_set_changed()
        yield
    for qmap in shapes:
        if not qmap.topics:
            tables.queue_maps.release(qmap)
    try:
        check_invariants(tables, per_topic=False)
    except AssertionError as e:
        raise SnapshotError("corrupt route snapshot: %s" % e)


def _shape_maps(tables: RouteTables, shapes: dict[str, Any]) -> list[QueueMap]:
    """The interned map of each shape of the header (checked: indexes in range, one broker once)."""
    queue_datas = [shared_queue_data(QueueData(*row)) for row in shapes["queueDatas"]]
    # a checked shape is never empty, so none of its maps is None
    return cast("list[QueueMap]",
                [tables.queue_maps.get([queue_datas[i] for i in indexes]) for indexes in shapes["shapes"]])


def restore_all(routes: RestoreTarget, snapshot: SlicedSnapshot, now: float, emit_events: bool = True) -> None:
    """``restore_steps`` run to its end at once."""
    for _ in restore_steps(routes, snapshot, now, emit_events):
        pass
