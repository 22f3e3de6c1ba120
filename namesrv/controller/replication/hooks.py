"""Where we reach into pysyncobj, all in one place, checked when imported.

We keep pysyncobj for what it is good at, Raft's elections and log replication, and replace what
it does unsafely (see the issue behind ``docs/controller.md``'s security section):

1. its ``pickle``: pysyncobj's core calls ``pickle.dumps``/``loads`` for the commands in its log
   and for oversized entries. ``pysyncobj.syncobj.pickle`` becomes ``codec.SafePickle`` (msgpack,
   data only), and so does the snapshot serializer's, which we never let run anyway (we give
   pysyncobj our own serializer, ``snapshot.py``);
2. its journal: ``pysyncobj.syncobj.createJournal`` becomes a lookup of the ``DurableJournal`` the
   Raft log built for that journal name (an unknown name is an error, never a fallback to
   pysyncobj's unsynced mmap file);
3. its election: ``SafeSyncObj`` overrides the one private method pysyncobj asks before raising
   its term (``__connectedToAnyone``), so that it asks our pre-vote instead (``quorum.py``);
4. its wake-up pipe (``PIPE_NOTIFIER_ENABLED``): it wakes pysyncobj's own ticking thread, which is
   off here (the reactor ticks it), and would cost two descriptors per member;
5. its snapshot serializer (``SyncObj.__serializer``): ``use_snapshot_store`` puts ours
   (``snapshotstore.py``) in its place, and ``load_snapshot`` has pysyncobj start from the snapshot
   we read from our disk (pysyncobj would look for a file by name, and only at its first tick);
6. its members (``__otherNodes``, ``__readonlyNodes`` and the leader's per-member indexes):
   ``set_members`` makes them follow the group's configuration in force (``membership.py``) the
   moment an entry adds or a cut removes one, voters as pysyncobj's nodes and learners as its
   read-only nodes (which get the log but count for nothing). pysyncobj's own membership commands
   take effect only when applied, so a restarted member would count votes with an older
   configuration: they are never used.

Each hook depends on pysyncobj's internals, so the version is pinned exactly (setup.cfg) and
``check_hooks`` refuses to start with any other: a new pysyncobj is adopted by reading its code
again, not by accident.
"""

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Optional

import pysyncobj.serializer
import pysyncobj.syncobj
import pysyncobj.version
from pysyncobj import SyncObj
from twisted.logger import Logger, LogLevel

from namesrv.controller.replication.codec import SafePickle

if TYPE_CHECKING:   # types only
    from namesrv.controller.replication.journal import DurableJournal
    from namesrv.controller.replication.snapshotstore import SnapshotStore

PINNED_VERSION = "0.3.17"

_journals: dict[Optional[str], "DurableJournal"] = {}


class HookError(RuntimeError):
    """pysyncobj is not the version whose internals the hooks were written for."""


def check_hooks() -> None:
    version = pysyncobj.version.VERSION
    if version != PINNED_VERSION:
        raise HookError("pysyncobj %s is installed; the controller's Raft hooks are written for %s exactly "
                        "(pip install pysyncobj==%s)" % (version, PINNED_VERSION, PINNED_VERSION))
    for owner, name in ((pysyncobj.syncobj, "pickle"), (pysyncobj.syncobj, "createJournal"),
                        (pysyncobj.syncobj, "PIPE_NOTIFIER_ENABLED"),
                        (pysyncobj.serializer, "pickle"), (SyncObj, "_SyncObj__connectedToAnyone"),
                        (SyncObj, "_SyncObj__loadDumpFile")):
        if not hasattr(owner, name):
            raise HookError("pysyncobj %s has no %s.%s: the hooks do not fit it" % (version, owner.__name__, name))


def _create_journal(name: Optional[str] = None) -> "DurableJournal":
    try:
        return _journals.pop(name)
    except KeyError:
        raise HookError("no journal was prepared for %r: pysyncobj's own journal is never used" % (name,))


class _ToTwistedLog(logging.Handler):
    """pysyncobj logs through ``logging``; its lines go to the server's log with the others.

    One line is lowered to info: "truncating already-applied log entries", which pysyncobj logs
    as critical whenever a leader re-sends entries a member already has (after a lost
    acknowledgement it cuts and re-appends them). By Raft's log matching they are the same
    entries, so nothing diverges; the simulated groups in the tests check that the members'
    states agree after every such run.
    """

    log = Logger(namespace="pysyncobj")
    _levels = {logging.DEBUG: LogLevel.debug, logging.INFO: LogLevel.info, logging.WARNING: LogLevel.warn,
               logging.ERROR: LogLevel.error, logging.CRITICAL: LogLevel.critical}

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        level = self._levels.get(record.levelno, LogLevel.warn)
        if message.startswith("truncating already-applied log entries"):
            level = LogLevel.info
        if record.exc_info:
            message += "\n" + self.format(record).split("\n", 1)[-1]
        self.log.emit(level, "pysyncobj: {message}", message=message)


def install() -> None:
    check_hooks()
    logger = logging.getLogger("pysyncobj")
    if not any(isinstance(h, _ToTwistedLog) for h in logger.handlers):
        logger.addHandler(_ToTwistedLog())
        logger.propagate = False
    pysyncobj.syncobj.pickle = SafePickle
    pysyncobj.serializer.pickle = SafePickle
    pysyncobj.syncobj.createJournal = _create_journal
    pysyncobj.syncobj.PIPE_NOTIFIER_ENABLED = False


def prepare_journal(name: str, journal: "DurableJournal") -> None:
    """The journal pysyncobj will get for ``journalFile=name`` (taken once, by the next SyncObj)."""
    _journals[name] = journal


def forget_journal(name: str) -> None:
    _journals.pop(name, None)


#: the instance attributes ``set_members`` and ``use_snapshot_store`` change (checked once built)
_INSTANCE = ("_SyncObj__otherNodes", "_SyncObj__readonlyNodes", "_SyncObj__connectedNodes", "_SyncObj__raftNextIndex",
             "_SyncObj__raftMatchIndex", "_SyncObj__lastResponseTime", "_SyncObj__serializer",
             "_SyncObj__needLoadDumpFile", "_SyncObj__raftLog")


def check_instance(syncobj: "SafeSyncObj") -> None:
    missing = [name for name in _INSTANCE if not hasattr(syncobj, name)]
    if missing:
        raise HookError("pysyncobj %s has no %s: the hooks do not fit it" % (pysyncobj.version.VERSION,
                                                                           ", ".join(missing)))


def use_snapshot_store(syncobj: "SafeSyncObj", store: "SnapshotStore") -> None:
    syncobj._SyncObj__serializer = store
    syncobj._SyncObj__needLoadDumpFile = False


def load_snapshot(syncobj: "SafeSyncObj") -> None:
    """pysyncobj starts from the snapshot our store read (its state, and its log's first two entries)."""
    syncobj._SyncObj__loadDumpFile(clearJournal=False)


def set_members(syncobj: "SafeSyncObj", voters: Iterable[str], learners: Iterable[str],
                node_of: Callable[[str], Any], connected: Callable[[str], bool], now: float) -> None:
    """pysyncobj's nodes (Any: its TCPNode objects, untyped) become ``voters`` and ``learners`` (ids, this
    member's own left out); a member added starts from the leader's next entry, one kept keeps its indexes (a
    learner promoted does not start over)."""
    others = {node_of(member) for member in voters}
    readonly = {node_of(member) for member in learners}
    before = syncobj._SyncObj__otherNodes | syncobj._SyncObj__readonlyNodes
    after = others | readonly
    next_index = syncobj._SyncObj__raftNextIndex
    match_index = syncobj._SyncObj__raftMatchIndex
    response = syncobj._SyncObj__lastResponseTime
    connected_nodes = syncobj._SyncObj__connectedNodes
    last = syncobj._SyncObj__raftLog[-1][1]
    leading = syncobj._isLeader()
    for node in after - before:
        next_index[node] = last + 1
        match_index[node] = 0
        if connected(node.id):
            connected_nodes.add(node)
    for node in before - after:
        next_index.pop(node, None)
        match_index.pop(node, None)
        response.pop(node, None)
        connected_nodes.discard(node)
    if leading:
        for node in after:
            response.setdefault(node, now)
    syncobj._SyncObj__otherNodes = others
    syncobj._SyncObj__readonlyNodes = readonly


def match_index(syncobj: "SafeSyncObj", node: Any) -> int:
    """The leader's idea of how far ``node``'s log matches its own (0 when unknown)."""
    return syncobj._SyncObj__raftMatchIndex.get(node, 0)


class SafeSyncObj(SyncObj):
    """pysyncobj's SyncObj asking ``election_gate`` (the pre-vote) before it starts an election."""

    election_gate: Optional[Callable[[], bool]] = None

    def _SyncObj__connectedToAnyone(self) -> bool:
        gate = self.election_gate
        return gate() if gate is not None else False


install()
