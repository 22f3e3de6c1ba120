"""One read-only brokerName -> QueueData map per distinct set of QueueData, shared by every topic that has it.

A topic's entry in ``topic_queue_table`` is a map of its brokers' QueueData. A fleet has few distinct
ones: the QueueData are shared already (model.shared_queue_data, one per broker and settings), and
topics created on the same brokers have the same set of them. At a million topics on four brokers each,
a dict per topic was hundreds of MiB in every process holding the tables (figures:
bench/results/design-figures.md#shared-queue-maps); a thousand shared maps are nothing.

So a map is never changed in place: a change gives the topic another map (``QueueMaps.with_queue_data``,
``without``), interned here (``QueueMap`` refuses in-place changes with a TypeError, so a code path that
would change a map of a million topics at once fails loudly). And each map knows the topics that have it
(``topics``): the reverse index brokerName -> topics is the union of the maps holding the broker, one
entry per topic in all instead of one per (topic, broker), and the work of a change is per map in C
(a thousand topics moving from one map to another is a set difference and a dict update), not per topic
in Python. The route tables (tables.py) keep both in step.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Mapping, NoReturn, Optional

from namesrv.routes.model import QueueData

#: a map's interning key: the identities of its QueueData, sorted
MapKey = tuple[int, ...]


class QueueMap(dict[str, QueueData]):
    """A read-only brokerName -> QueueData map; reads cost what a dict's do. ``topics``: the topics whose
    map it is (kept by RouteTables); ``key``: the identities of its QueueData, its interning key."""

    __slots__ = ("topics", "key")
    topics: set[str]
    key: MapKey

    #: hashable by identity (a dict is not): a registration counts its 4,000 topics' maps with a Counter in C,
    #: not by their ``id``s and a dict back from them. Equality stays a dict's; within one QueueMaps two maps
    #: are never equal (one map per set of shared QueueData), so hash and equality agree where maps meet.
    __hash__ = object.__hash__   # type: ignore[assignment]   # dict's is None

    def _read_only(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("a shared queue map is read-only: replace the topic's map instead")

    # every call that changes a dict in place refuses (their signatures differ from dict's: any call raises)
    __setitem__ = __delitem__ = pop = popitem = clear = update = setdefault = __ior__ = _read_only

    def copy(self) -> dict[str, QueueData]:
        return dict(self)

    def __reduce__(self) -> tuple[type[dict[str, QueueData]], tuple[dict[str, QueueData]]]:
        return dict, (dict(self),)


#: kept for the readers that name it (a replica's maps were the first to be shared)
SharedQueueMap = QueueMap


def map_key(queue_datas: Iterable[QueueData]) -> MapKey:
    """The interning key of a map holding ``queue_datas`` (shared QueueData: their identities)."""
    return tuple(sorted(map(id, queue_datas)))


class QueueMaps:
    """The interned maps of one set of tables: ``get(queue_datas)`` gives the one QueueMap holding exactly
    these QueueData (made if none), ``by_broker[name]`` the maps that hold ``name`` (by key). A map is dropped
    (``release``) when no topic has it any more; until then it keeps its QueueData alive, so their
    identities (the key) stay unique."""

    def __init__(self) -> None:
        self.maps: dict[MapKey, QueueMap] = {}
        #: brokerName -> {key: QueueMap} of the maps holding it
        self.by_broker: dict[str, dict[MapKey, QueueMap]] = {}
        #: (id(map) or 0, id(QueueData)) -> (map, QueueData, the map with it put in)
        self._steps: dict[tuple[int, int], tuple[Optional[QueueMap], QueueData, QueueMap]] = {}

    def __len__(self) -> int:
        return len(self.maps)

    def __iter__(self) -> Iterator[QueueMap]:
        return iter(self.maps.values())

    def get(self, queue_datas: list[QueueData]) -> Optional[QueueMap]:
        """The map of ``queue_datas`` (shared QueueData, one per broker name), or None for none."""
        if not queue_datas:
            return None
        key = map_key(queue_datas)
        found = self.maps.get(key)
        if found is None:
            found = QueueMap((qd.broker_name, qd) for qd in queue_datas)
            found.topics = set()
            found.key = key
            self.maps[key] = found
            by_broker = self.by_broker
            for name in found:
                held = by_broker.get(name)
                if held is None:
                    by_broker[name] = {key: found}
                else:
                    held[key] = found
        return found

    def of(self, qmap: Mapping[str, QueueData]) -> Optional[QueueMap]:
        """The interned map with the same QueueData as ``qmap`` (any mapping), or None if it is empty."""
        if type(qmap) is QueueMap and self.maps.get(qmap.key) is qmap:
            return qmap
        return self.get(list(qmap.values()))

    def with_queue_data(self, old: Optional[QueueMap], queue_data: QueueData) -> QueueMap:
        """``old`` (a map or None) with ``queue_data`` put under its broker name (the same map if it is there)."""
        key = (id(old) if old is not None else 0, id(queue_data))
        step = self._steps.get(key)   # holds both: their identities are not reused while it does
        if step is not None and step[0] is old and step[1] is queue_data and self.maps.get(step[2].key) is step[2]:
            return step[2]
        if old is None:
            found = self.get([queue_data])
        elif old.get(queue_data.broker_name) is queue_data:
            found = old
        else:
            kept = [qd for name, qd in old.items() if name != queue_data.broker_name]
            found = self.get(kept + [queue_data])
        assert found is not None   # a map of at least one QueueData
        if len(self._steps) > 4 * len(self.maps) + 1024:
            self._steps.clear()
        self._steps[key] = (old, queue_data, found)
        return found

    def without(self, old: QueueMap, names: set[str]) -> Optional[QueueMap]:
        """``old`` without the QueueData of ``names`` (a set), or None when nothing is left."""
        return self.get([qd for name, qd in old.items() if name not in names])

    def become(self, qmap: QueueMap, other: QueueMap) -> None:
        """``qmap`` (a map with topics) takes the QueueData of ``other`` (a map made for them, no topic has it
        yet), which goes: the topics keep their map object, and their table entries stay as they are. Only
        when all of ``qmap``'s topics take ``other``'s QueueData (tables.RouteTables._apply_moves)."""
        by_broker = self.by_broker
        held: Optional[dict[MapKey, QueueMap]]
        del self.maps[qmap.key]
        for name in qmap:
            held = by_broker[name]
            del held[qmap.key]
            if not held:
                del by_broker[name]
        self.release(other)
        dict.clear(qmap)
        dict.update(qmap, other)
        qmap.key = other.key
        self.maps[qmap.key] = qmap
        for name in qmap:
            held = by_broker.get(name)
            if held is None:
                by_broker[name] = {qmap.key: qmap}
            else:
                held[qmap.key] = qmap
        self._steps.clear()   # it may name ``qmap`` as what it was, or ``other``

    def release(self, qmap: QueueMap) -> None:
        """``qmap`` has no topic any more: forget it."""
        if self.maps.get(qmap.key) is not qmap:
            return
        del self.maps[qmap.key]
        by_broker = self.by_broker
        for name in qmap:
            held = by_broker.get(name)
            if held is not None:
                held.pop(qmap.key, None)
                if not held:
                    del by_broker[name]
