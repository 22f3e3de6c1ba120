"""Whole-table topic lists, built a slice at a time and never past the frame limit.

GET_ALL_TOPIC_LIST_FROM_NAMESERVER, GET_TOPICS_BY_CLUSTER and the unit-topic lists answer with
every topic (of a cluster, or of a kind) in one TopicList body. Java builds it under its route
lock and sends it whatever its size. At a million topics of 20 characters that is 25 MB: past the
16 MiB frame that every RocketMQ client's decoder accepts (``NettyDecoder``,
``com.rocketmq.remoting.frameMaxLength``), so the client drops the connection and waits out its
timeout (apache/rocketmq#7534 is the same list timing out at 50,000 topics). Sorting and
encoding a million names here takes over a second of one core.

So each list is a generator: it yields after every ``SLICE`` names, for the caller to run it over
many reactor turns (registrations and forwarded reads go on in between), and it raises
``TooLarge`` as soon as the body can no longer fit in ``limit`` bytes: first from a lower bound
that costs one pass of ``len`` (a name takes at least its length plus two quotes and a comma), so
a million topics are refused in tens of milliseconds without being sorted, then exactly while
encoding. The names are taken from the tables at the start (a C-level copy of the keys), so a topic added
or removed while the list is built is in it or not, as with a read just before or after; a cluster's list
visits its brokers' topic sets one after the other (figures: bench/results/design-figures.md#topic-lists).

``drain(gen)`` runs one to the end at once: the synchronous queries use it (tests, small tables).
"""

from __future__ import annotations

import heapq
import itertools
from typing import TYPE_CHECKING, Callable, Generator, Optional, TypeVar

from namesrv.codec import fastjson
from namesrv.routes.model import FLAG_UNIT, FLAG_UNIT_SUB

if TYPE_CHECKING:   # types only
    from namesrv.routes.queuemaps import QueueMap
    from namesrv.routes.tables import RouteTables

Result = TypeVar("Result")
#: a list built a slice at a time: yields None between slices, returns what it built
Steps = Generator[None, None, Result]

#: names handled between two yields: sorting or encoding this many takes a small part of a reactor turn
SLICE = 4096


class TooLarge(Exception):
    """The list's body would take more than ``limit`` bytes (``size`` is what was counted when it
    went past: a lower bound, or the exact size of the part encoded so far)."""

    def __init__(self, count: int, size: int, limit: int) -> None:
        Exception.__init__(self, count, size, limit)
        self.count, self.size, self.limit = count, size, limit


def drain(gen: Steps[Result]) -> Result:
    """Run a generator of this module to the end; its return value."""
    while True:
        try:
            next(gen)
        except StopIteration as done:
            return done.value


# -- names -------------------------------------------------------------------------------
def all_names(tables: RouteTables) -> Steps[list[str]]:
    """Every topic (a list, unsorted): a copy of the keys, taken at once; a generator like the others."""
    names = list(tables.topic_queue_table)
    yield
    return names


def names_by_cluster(tables: RouteTables, cluster: str) -> Steps[list[str]]:
    """Topics with QueueData on any broker of ``cluster`` (unknown cluster: none), unsorted. Each topic is
    tested against the cluster's brokers: a union of the brokers' topic sets would grow a set of a
    million names, whose resizing is one long step."""
    brokers = frozenset(tables.cluster_addr_table.get(cluster, ()))
    return (yield from _names_where(tables, lambda queue_map: not brokers.isdisjoint(queue_map)))


def names_by_sys_flag(tables: RouteTables, accept: Callable[[int], object]) -> Steps[list[str]]:
    """Topics whose first QueueData's topicSysFlag ``accept`` takes (Java tests the first one only)."""
    return (yield from _names_where(
        tables, lambda queue_map: accept(next(iter(queue_map.values())).topic_sys_flag)))


def _names_where(tables: RouteTables, keep: Callable[[QueueMap], object]) -> Steps[list[str]]:
    """Topics whose (non-empty) map ``keep`` takes, a slice per step. The names are copied, not the items:
    a million (topic, map) tuples would be a million objects for the cyclic collector to walk, and a full
    collection over them would hold the reactor."""
    table = tables.topic_queue_table
    names = list(table)
    found = []
    for start in range(0, len(names), SLICE):
        for topic in names[start:start + SLICE]:
            queue_map = table.get(topic)
            if queue_map and keep(queue_map):
                found.append(topic)
        yield
    return found


def is_unit(flag: int) -> int:
    return flag & FLAG_UNIT


def is_unit_sub(flag: int) -> int:
    return flag & FLAG_UNIT_SUB


def is_unit_sub_ununit(flag: int) -> int:
    return flag & FLAG_UNIT_SUB and not flag & FLAG_UNIT


# -- sorting and the body -----------------------------------------------------------------
def sorted_names(names: list[str]) -> Steps[list[str]]:
    """``names`` sorted, in runs of ``SLICE`` merged a slice at a time (one ``sorted`` of a million
    names would hold the reactor for all of it)."""
    runs: list[list[str]] = []
    for start in range(0, len(names), SLICE):
        runs.append(sorted(names[start:start + SLICE]))
        yield
    if len(runs) <= 1:
        return runs[0] if runs else []
    out: list[str]
    merged, out = heapq.merge(*runs), []
    while True:
        chunk = list(itertools.islice(merged, max(1, SLICE // 4)))   # a merged name costs 4 sorted ones
        if not chunk:
            return out
        out.extend(chunk)
        yield


def topic_list_body(names: list[str], limit: int, broker_addr: Optional[str] = None) -> Steps[bytes]:
    """The TopicList body of ``names`` (sorted here), as ``encode.encode_topic_list`` writes it, or
    TooLarge past ``limit`` bytes."""
    head, tail = _frame(broker_addr)
    count = len(names)
    floor = len(head) + len(tail) + max(0, 3 * count - 1)
    for start in range(0, count, SLICE):
        floor += sum(map(len, names[start:start + SLICE]))
        yield
    if floor > limit:   # counted to the end: the remark says how large the list is
        raise TooLarge(count, floor, limit)
    ordered = yield from sorted_names(names)
    pieces, size = [head], len(head) + len(tail)
    for start in range(0, count, SLICE):
        piece = fastjson.dumps_plain(ordered[start:start + SLICE])[1:-1].encode("utf-8")
        if len(pieces) > 1:
            pieces.append(b",")
            size += 1
        size += len(piece)
        if size > limit:
            raise TooLarge(count, size, limit)
        pieces.append(piece)
        yield
    pieces.append(tail)
    return b"".join(pieces)   # one copy of the body (megabytes at a million topics: each copy counts)


def _frame(broker_addr: Optional[str]) -> tuple[bytes, bytes]:
    """The bytes before and after the names: ``{"topicList":[`` and ``]}`` (brokerAddr first when set)."""
    empty = fastjson.dumps_plain({"brokerAddr": broker_addr, "topicList": []}).encode("utf-8")
    return empty[:-2], empty[-2:]
