"""Warm restart: the route tables as msgpack, and back.

Restored brokers get ``last_update`` = now and no connection: routes are served at once
and brokers that do not come back expire by the usual rule (their connection being gone,
only expiry or a new registration touches them). Restoring checks every value, builds
fresh tables from the rows (``RouteTables.replace_from_rows``, which replicas can use too)
and checks them, and only then swaps them in: a bad snapshot raises SnapshotError and
leaves the manager untouched.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Iterable, Optional

import msgpack

from namesrv.routes import bulk, rows, slicedsnapshot
from namesrv.routes.changes import RouteChanges
from namesrv.routes.invariants import check_invariants
from namesrv.routes.slicedsnapshot import SnapshotError, SlicedSnapshot, is_sliced
from namesrv.routes.tables import RouteTables

if TYPE_CHECKING:   # types only
    from namesrv.routes.manager import RouteInfoManager
    from namesrv.routes.rows import Row

FORMAT = "rocketmq-namesrv-routes"
#: the whole-map encoding (``encode_snapshot``: a takeover's copy to a process that speaks version 2 of the
#: takeover): 2, topics by shape (rows.topic_shapes); 1 (read still): every topic's QueueData rows. Files
#: are written in version 3 (slicedsnapshot.py).
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)

__all__ = ["SnapshotError", "encode_snapshot", "restore_snapshot", "snapshot_owner", "open_sliced",
           "encode_snapshot_delta", "apply_snapshot_delta"]


def encode_snapshot(routes: RouteInfoManager, owner: Optional[dict[str, Any]] = None) -> bytes:
    """The tables as bytes; ``owner`` (a small map: which instance writes) is kept with them."""
    data = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "owner": owner,
        "shapes": rows.topic_shapes(routes),
        "live": rows.live_rows(routes),
        "mappings": routes.topic_queue_mapping_info_table,
        **rows.broker_level_rows(routes),
    }
    # surrogatepass: a topic name may hold a lone surrogate (a broker's JSON "\udc80"); it must
    # come back as it went. An integer beyond 64 bits raises OverflowError: SnapshotError.
    try:
        return msgpack.packb(data, use_bin_type=True, unicode_errors="surrogatepass")
    except (OverflowError, TypeError, ValueError) as e:
        raise SnapshotError("the route tables cannot be saved: %s" % e)


def snapshot_owner(data: bytes) -> Any:   # the map it was written with, as decoded
    """The ``owner`` map a snapshot was written with (None for none), without decoding the tables."""
    if is_sliced(data):
        return open_sliced(data).owner
    try:
        unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, unicode_errors="surrogatepass")
        unpacker.feed(data)
        count = unpacker.read_map_header()
        for _ in range(count):
            key = unpacker.unpack()
            if key == "owner":
                return unpacker.unpack()
            unpacker.skip()
    except Exception as e:  # msgpack raises several unrelated types on garbage
        raise SnapshotError("not a route snapshot: %s" % e)
    return None


def open_sliced(data: bytes) -> SlicedSnapshot:
    """A version 3 snapshot's bytes, checked whole before anything is used (slicedsnapshot.SlicedSnapshot)."""
    return SlicedSnapshot(data, _checked_header)


def _checked_header(header: dict[str, Any]) -> dict[str, Any]:
    """A version 3 header's rows (``_checked_rows``' shape), every value checked, and the broker-level
    tables' rules. (A shape may name a broker gone before the file's moment: its topics were all changed
    meanwhile, and the patch restores them elsewhere; the end of the restore checks that no topic is left
    with a broker the tables lack.)"""
    header = dict(header, shapes={"queueDatas": header["queueDatas"], "shapes": header["shapes"], "topics": {}})
    checked = _checked_rows(header)
    brokers_only = RouteTables(RouteChanges())   # the broker-level rules, before anything is used
    brokers_only.replace_from_rows(topics={}, now=0.0, brokers=checked["brokers"], clusters=checked["clusters"],
                                   filters=checked["filters"], live=checked["live"])
    try:
        check_invariants(brokers_only, per_topic=False)
    except AssertionError as e:
        raise SnapshotError("corrupt route snapshot: %s" % e)
    return checked


def restore_snapshot(routes: RouteInfoManager, data: bytes, emit_events: bool = True) -> None:
    """Replace the tables of ``routes`` with the snapshot ``data`` (all or nothing)."""
    if is_sliced(data):
        return _restore_sliced(routes, data, emit_events)
    try:
        decoded = msgpack.unpackb(data, raw=False, strict_map_key=False, unicode_errors="surrogatepass")
    except Exception as e:  # msgpack raises several unrelated types on garbage
        raise SnapshotError("not a route snapshot: %s" % e)
    if not isinstance(decoded, dict) or decoded.get("format") != FORMAT:
        raise SnapshotError("not a route snapshot")
    if decoded.get("version") not in READABLE_VERSIONS:
        raise SnapshotError("unsupported route snapshot version %r" % (decoded.get("version"),))
    try:
        fresh = RouteTables(RouteChanges())
        checked = _checked_rows(decoded)
        fresh.replace_from_rows(now=routes.clock.seconds(), **checked)
        check_invariants(fresh, per_topic=checked["shapes"] is None)
    except SnapshotError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, AssertionError) as e:
        raise SnapshotError("corrupt route snapshot: %s" % e)
    _replace(routes, fresh, emit_events)


def _restore_sliced(routes: RouteInfoManager, data: bytes, emit_events: bool) -> None:
    """A version 3 snapshot, all at once: restored into tables apart, which replace ``routes``' once whole."""
    snapshot = open_sliced(data)
    fresh = RouteTables(RouteChanges())
    try:
        apart = types.SimpleNamespace(tables=fresh, changes=fresh.changes, events=fresh.changes.events)
        slicedsnapshot.restore_all(apart, snapshot, routes.clock.seconds(), emit_events=False)
    except SnapshotError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
        raise SnapshotError("corrupt route snapshot: %s" % e)
    _replace(routes, fresh, emit_events)


def _replace(routes: RouteInfoManager, fresh: RouteTables, emit_events: bool) -> None:
    emit_events = emit_events and routes.changes.route_events_wanted()
    if emit_events and not routes.topic_queue_table:   # nothing before (a start, a takeover): an event per map
        routes.replace_tables(fresh)
        for qmap in routes.tables.queue_maps:
            names = sorted(qmap.topics)
            if len(names) == 1:
                routes.events.emit("topic_route_changed", topic=names[0], before=[], after=sorted(qmap))
            elif names:
                routes.events.emit("topic_route_changed", topics=names, before=[], after=sorted(qmap))
        return
    before = {topic: tuple(queue_map) for topic, queue_map in routes.topic_queue_table.items()} if emit_events else {}
    routes.replace_tables(fresh)
    if emit_events:
        table = routes.topic_queue_table
        before.update((topic, ()) for topic in table if topic not in before)
        for (was, now), topics in bulk.route_changes(before, table).items():
            if len(topics) == 1:
                routes.events.emit("topic_route_changed", topic=topics[0], before=list(was), after=list(now))
            else:
                routes.events.emit("topic_route_changed", topics=sorted(topics), before=list(was), after=list(now))


def _string(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise SnapshotError("%s is not a string" % what)
    return value


def _integer(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SnapshotError("%s is not an integer" % what)
    return value


def _optional_string(value: object, what: str) -> Optional[str]:
    return None if value is None else _string(value, what)


def _checked_rows(decoded: dict[str, Any]) -> dict[str, Any]:
    """The rows of ``decoded`` (rows.py's shapes), every value checked, as ``RouteTables.replace_from_rows``
    takes them."""
    brokers = [[_string(name, "brokerName"), _string(cluster, "cluster"), _optional_string(zone, "zoneName"),
                bool(acting), [[_integer(broker_id, "brokerId"), _string(addr, "brokerAddr")]
                               for broker_id, addr in addrs]]
               for name, cluster, zone, acting, addrs in decoded["brokers"]]
    clusters = {_string(cluster, "cluster"): [_string(n, "brokerName") for n in names]
                for cluster, names in decoded["clusters"].items()}
    topics: Optional[dict[str, list[Row]]] = None
    shapes: Optional[dict[str, Any]] = None
    if "shapes" in decoded:
        shapes = _checked_shapes(decoded["shapes"])
    else:
        topics = {_string(topic, "topic"): [_queue_data_row(row) for row in queue_datas]
                  for topic, queue_datas in decoded["topics"].items()}
    live = [[_string(cluster, "cluster"), _string(addr, "brokerAddr"), _optional_string(name, "brokerName"),
             None if broker_id is None else _integer(broker_id, "brokerId"), _optional_string(ha, "haServerAddr"),
             _integer(timeout, "heartbeatTimeoutMillis"),
             [_integer(timestamp, "timestamp"), _integer(counter, "counter"), _integer(state, "stateVersion")]]
            for cluster, addr, name, broker_id, ha, timeout, (timestamp, counter, state) in decoded["live"]]
    filters = [[_string(cluster, "cluster"), _string(addr, "brokerAddr"), [_string(s, "filterServer") for s in servers]]
               for cluster, addr, servers in decoded["filters"]]
    mappings: dict[str, Any] = {}   # the static-topic mappings as decoded (dicts of dicts, re-emitted as is)
    for topic, by_broker in decoded["mappings"].items():
        if not isinstance(by_broker, dict) or not all(isinstance(info, dict) for info in by_broker.values()):
            raise SnapshotError("bad static-topic mapping of %r" % (topic,))
        mappings[_string(topic, "topic")] = by_broker
    return {"topics": topics, "shapes": shapes, "brokers": brokers, "clusters": clusters, "filters": filters,
            "live": live, "mappings": mappings}


def _queue_data_row(row: Iterable[object]) -> Row:
    name, read, write, perm, sys_flag = row
    return [_string(name, "brokerName"), _integer(read, "readQueueNums"), _integer(write, "writeQueueNums"),
            _integer(perm, "perm"), _integer(sys_flag, "topicSysFlag")]


def _checked_shapes(shapes: dict[str, Any]) -> dict[str, Any]:
    """``rows.topic_shapes`` checked: every row, every index in range, one QueueData per broker name in a shape,
    every topic a string mapping to a shape. Passes over the 100,000 topics run in C (a set of their shapes)."""
    queue_rows = [_queue_data_row(row) for row in shapes["queueDatas"]]
    checked = []
    for indexes in shapes["shapes"]:
        if not indexes or not all(type(i) is int and 0 <= i < len(queue_rows) for i in indexes):
            raise SnapshotError("bad QueueData index in a topic shape")
        if len({queue_rows[i][0] for i in indexes}) != len(indexes):
            raise SnapshotError("a topic shape lists one broker twice")
        checked.append(list(indexes))
    by_topic = shapes["topics"]
    if not isinstance(by_topic, dict) or not all(map(str.__instancecheck__, by_topic)):
        raise SnapshotError("a topic is not a string")
    for shape in set(by_topic.values()):
        if shape is not None and not (type(shape) is int and 0 <= shape < len(checked)):
            raise SnapshotError("bad topic shape %r" % (shape,))
    return {"queueDatas": queue_rows, "shapes": checked, "topics": by_topic}


# -- a takeover's second copy: what changed since the first ----------------------------------

DELTA_FORMAT = "rocketmq-namesrv-routes-delta"


def encode_snapshot_delta(routes: RouteInfoManager, topics: Iterable[str]) -> bytes:
    """What changed since a snapshot of ``routes`` was taken, given ``topics`` (every topic whose QueueData
    or static-topic mapping changed since): their current shapes (None: gone) and mappings, and the
    broker-level and live tables whole (one row per broker, not per topic)."""
    topics = sorted(topics)
    mappings = routes.topic_queue_mapping_info_table
    data = {
        "format": DELTA_FORMAT,
        "version": FORMAT_VERSION,
        "shapes": rows.topic_shapes(routes, topics),
        "mappings": {topic: mappings.get(topic) for topic in topics},
        "live": rows.live_rows(routes),
        **rows.broker_level_rows(routes),
    }
    try:
        return msgpack.packb(data, use_bin_type=True, unicode_errors="surrogatepass")
    except (OverflowError, TypeError, ValueError) as e:
        raise SnapshotError("the route tables cannot be saved: %s" % e)


def apply_snapshot_delta(routes: RouteInfoManager, data: bytes) -> set[str]:
    """Bring ``routes`` (restored from the first copy) up to the tables ``data`` describes; returns the topics
    it named (those whose QueueData or mappings changed since the first copy).

    The peer is our own old process, but the bytes are checked like a snapshot's all the same;
    a bad delta raises SnapshotError before anything is changed."""
    try:
        decoded = msgpack.unpackb(data, raw=False, strict_map_key=False, unicode_errors="surrogatepass")
    except Exception as e:  # msgpack raises several unrelated types on garbage
        raise SnapshotError("not a route delta: %s" % e)
    if not isinstance(decoded, dict) or decoded.get("format") != DELTA_FORMAT \
            or decoded.get("version") not in READABLE_VERSIONS:
        raise SnapshotError("not a route delta")
    try:
        shapes = _checked_shapes(decoded["shapes"])
        decoded["topics"] = {}
        decoded["mappings"] = {topic: info for topic, info in decoded["mappings"].items() if info is not None}
        checked = _checked_rows(decoded)
    except SnapshotError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
        raise SnapshotError("corrupt route delta: %s" % e)
    queue_rows, by_shape = shapes["queueDatas"], shapes["shapes"]
    topic_rows = {topic: None if shape is None else [queue_rows[i] for i in by_shape[shape]]
                  for topic, shape in shapes["topics"].items()}
    gone = {topic: None for topic in decoded["shapes"]["topics"] if topic not in checked["mappings"]}
    routes.apply_topic_rows(topic_rows, dict(gone, **checked["mappings"]))
    routes.replace_from_rows(now=routes.clock.seconds(), brokers=checked["brokers"], clusters=checked["clusters"],
                             filters=checked["filters"], live=checked["live"])
    try:
        check_invariants(routes.tables, per_topic=False)
    except AssertionError as e:
        raise SnapshotError("the route delta does not fit the first copy: %s" % e)
    return set(topic_rows)
