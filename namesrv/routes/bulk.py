"""The route tables' changes of many topics at once, in passes over C iterators.

A broker's registration carries up to 50,000 topics: a Python loop over them costs more than
the work it does. Here: a registration's shared QueueData (no per-topic Python code), its
topics grouped by QueueData, and the topic_route_changed groups of a batch of changes, from the
moves themselves or (several batches in one operation) per topic.
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import attrgetter, is_
from typing import TYPE_CHECKING, Collection, Iterable, Iterator, Mapping, Optional, Sequence

from namesrv.routes.model import QueueData, TopicSettings, shared_queue_data

if TYPE_CHECKING:   # types only
    from namesrv.routes.queuemaps import QueueMap

#: read_queue_nums, write_queue_nums, perm, topic_sys_flag
Settings = tuple[int, int, int, int]
#: (brokers before, brokers after) -> the topics that went from the one to the other
RouteChangeGroups = dict[tuple[tuple[str, ...], tuple[str, ...]], list[str]]

_SETTING_NAMES = ("read_queue_nums", "write_queue_nums", "perm", "topic_sys_flag")
_SETTINGS = attrgetter(*_SETTING_NAMES)
_SETTING_FIELDS = tuple(map(attrgetter, _SETTING_NAMES))


class _SharedQueueDatas(dict[Settings, QueueData]):
    """settings -> the shared QueueData of one broker, made on first use (a broker's topics have few)."""

    def __init__(self, broker_name: str) -> None:
        dict.__init__(self)
        self.broker_name = broker_name

    def __missing__(self, settings: Settings) -> QueueData:
        queue_data = self[settings] = shared_queue_data(QueueData(self.broker_name, *settings))
        return queue_data


def queue_datas(broker_name: str, topic_configs: Iterable[TopicSettings], perm_mask: int) -> Iterator[QueueData]:
    """An iterator over the shared QueueData of each TopicConfig, in order (no per-topic Python code)."""
    settings: Iterator[Settings] = map(_SETTINGS, topic_configs)
    if perm_mask != -1:
        settings = ((read, write, perm & perm_mask, flag) for read, write, perm, flag in settings)
    return map(_SharedQueueDatas(broker_name).__getitem__, settings)


def uniform_queue_data(broker_name: str, topic_configs: Sequence[TopicSettings], perm_mask: int) \
        -> Optional[QueueData]:
    """The shared QueueData of every TopicConfig of ``topic_configs`` (a list) when they all have the same
    queue settings (a broker's usual case), else None: a pass in C per field (no tuple per topic)."""
    if not topic_configs:
        return None
    first, count = topic_configs[0], len(topic_configs)
    settings = []
    for field in _SETTING_FIELDS:
        value = field(first)
        if list(map(field, topic_configs)).count(value) != count:
            return None
        settings.append(value)
    read, write, perm, flag = settings
    return shared_queue_data(QueueData(broker_name, read, write, perm & perm_mask, flag))


def by_queue_data(queue_datas: list[QueueData], names: list[str], olds: list[Optional[QueueMap]]) \
        -> list[tuple[QueueData, list[str], list[Optional[QueueMap]]]]:
    """[(queue_data, its names, their maps), ...]: the topics of a registration grouped by QueueData (one group,
    checked in C, when all its topics have the same queue settings)."""
    if not queue_datas:
        return []
    first = queue_datas[0]
    if all(map(is_, queue_datas, repeat(first))):
        return [(first, names, olds)]
    groups: dict[int, tuple[QueueData, list[str], list[Optional[QueueMap]]]] = {}
    for queue_data, name, old in zip(queue_datas, names, olds):
        group = groups.get(id(queue_data))
        if group is None:
            groups[id(queue_data)] = (queue_data, [name], [old])
        else:
            group[1].append(name)
            group[2].append(old)
    return list(groups.values())


#: from this many topics on, a change of many topics looks for maps it takes whole before looking up each topic
WHOLE_MAPS_FROM = 256
#: how many of its topics' maps it looks at to find them
WHOLE_MAP_SAMPLES = 32


def whole_maps(table: Mapping[str, QueueMap], names: list[str]) -> tuple[list[QueueMap], list[str]]:
    """(maps, rest): the maps of ``table`` (topic -> QueueMap) all of whose topics are among ``names`` (distinct
    topics), found from the maps of a sample of ``names``, and the other names, in order.

    A broker's first registration of 4,000 topics finds most of them on a few maps of its neighbours (topics
    created on a cluster's brokers): a map taken whole is a probe per topic in a set of the names (small, in
    cache) instead of a look-up in a million-topic table (three cache misses). The probes are bounded: maps
    are disjoint, so those of the maps taken add up to at most ``len(names)``, and a map that is not taken
    stops at its first topic not named. Below ``WHOLE_MAPS_FROM`` names: none (the look-ups are cheap)."""
    if len(names) < WHOLE_MAPS_FROM:
        return [], names
    get = table.get
    candidates = dict.fromkeys(filter(None, map(get, names[::max(1, len(names) // WHOLE_MAP_SAMPLES)])))
    if not candidates:
        return [], names
    wanted = set(names)
    taken = []
    for qmap in candidates:
        topics = qmap.topics
        if len(topics) <= len(wanted) and topics <= wanted:
            wanted.difference_update(topics)
            taken.append(qmap)
    if not taken:
        return [], names
    return taken, list(compress(names, map(wanted.__contains__, names)))


def route_changes(touched: Mapping[str, Collection[str]], table: Mapping[str, QueueMap]) -> RouteChangeGroups:
    """{(brokers before, brokers after): [topic, ...]} of the touched topics whose broker set changed
    (``touched``: topic -> its map before, or () for none)."""
    groups: RouteChangeGroups = {}
    for topic, before in touched.items():
        qmap = table.get(topic)
        if qmap is None:
            if before:
                groups.setdefault((tuple(sorted(before)), ()), []).append(topic)
        elif not before and len(qmap) == 1:   # a new topic (a first registration's common case)
            groups.setdefault(((), tuple(qmap)), []).append(topic)
        elif len(qmap) != len(before) or any(name not in qmap for name in before):
            groups.setdefault((tuple(sorted(before)), tuple(sorted(qmap))), []).append(topic)
    return groups


def moved_changes(moves: Iterable[tuple[Iterable[str], Iterable[str], Iterable[str]]]) -> RouteChangeGroups:
    """``route_changes`` of one batch of moves (tables.RouteTables._apply: each topic in one move), from the
    moves themselves: {(brokers before, brokers after): [topic, ...]}."""
    groups: RouteChangeGroups = {}
    for topics, before, after in moves:
        was = tuple(sorted(before)) if before else ()
        now = tuple(sorted(after)) if after else ()
        if was != now:
            group = groups.get((was, now))
            if group is None:
                groups[(was, now)] = list(topics)
            else:
                group.extend(topics)
    return groups
