"""The route tables' changes of many topics at once, in passes over C iterators.

A broker's registration carries up to 50,000 topics: a Python loop over them costs more than
the dicts it makes. Each shortcut here is exact (the same result as the per-topic code:
``route_changes`` below and the loop of ``RouteTables.put_broker_topics``, which
``tests/routes/test_bulk_apply.py`` runs side by side) and answers None or False when it
does not apply.
"""

from itertools import repeat
from operator import attrgetter, contains, is_

from namesrv.routes.model import QueueData, shared_queue_data

_SETTINGS = attrgetter("read_queue_nums", "write_queue_nums", "perm", "topic_sys_flag")


class _SharedQueueDatas(dict):
    """settings -> the shared QueueData of one broker, made on first use (a broker's topics have few)."""

    def __init__(self, broker_name):
        dict.__init__(self)
        self.broker_name = broker_name

    def __missing__(self, settings):
        queue_data = self[settings] = shared_queue_data(QueueData(self.broker_name, *settings))
        return queue_data


def queue_datas(broker_name, topic_configs, perm_mask):
    """An iterator over the shared QueueData of each TopicConfig, in order (no per-topic Python code)."""
    settings = map(_SETTINGS, topic_configs)
    if perm_mask != -1:
        settings = ((read, write, perm & perm_mask, flag) for read, write, perm, flag in settings)
    return map(_SharedQueueDatas(broker_name).__getitem__, settings)


def route_changes(touched, table):
    """{(brokers before, brokers after): [topic, ...]} of the touched topics whose broker set changed."""
    groups = {}
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


def none_known(table, topics):
    """True when no topic of ``topics`` is in ``table`` (a scan in C)."""
    return not any(map(table.__contains__, topics))


def nothing_to_put(table, topics, broker_name, queue_datas, only_missing):
    """True when ``RouteTables.put_broker_topics``' loop would change nothing: the broker already has every topic
    (with ``only_missing``) or the very same shared QueueData in every one (passes in C)."""
    qmaps = list(map(table.get, topics))
    if None in qmaps:
        return False
    olds = list(map(dict.get, qmaps, repeat(broker_name)))
    if any(map(is_, olds, repeat(None))):
        return False
    return only_missing or all(map(is_, olds, queue_datas))


def created_alone_change(created, touched, table):
    """``route_changes`` when the operation's only change was ``RouteTables.put_broker_topics`` creating ``topics``
    (a broker's first registration), checked in a few passes in C; else None."""
    broker_name, topics, qmaps = created
    if len(touched) != len(topics):   # touched only grows, and started as exactly these topics
        return None
    if not all(map(is_, map(table.get, topics), qmaps)) or set(map(len, qmaps)) != {1} \
            or not all(map(contains, qmaps, repeat(broker_name))):
        return None
    return {((), (broker_name,)): topics}


def uniform_change(touched, table):
    """``route_changes`` when every touched topic went from one broker set to one other (a second
    broker of the same thousands of topics: one group), computed without a Python loop; else None."""
    if len(touched) < 64:
        return None
    befores = set(touched.values())
    if len(befores) != 1:
        return None
    qmaps = list(map(table.get, touched))
    if None in qmaps:
        return None
    afters = set(map(tuple, map(sorted, qmaps)))
    if len(afters) != 1:
        return None
    (before,), (after,) = befores, afters
    before = tuple(sorted(before))
    return {} if before == after else {(before, after): list(touched)}
