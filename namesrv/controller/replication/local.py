"""One controller alone: events apply at once and are journalled to a file before they are answered.

No consensus is needed with one member, so none is paid for. A proposal applies on the reactor
thread; its events are appended, one JSON line each, to ``controller-events.jsonl`` and fsynced
in a thread, and only then does its Deferred fire: an answer never announces an id or an epoch
that a crash right after could lose. Appends coalesce: whatever was proposed while a write ran
goes in the next one. Every ``COMPACT_EVERY`` events the whole state is written atomically to
``controller-state.json`` (with a backup) and the journal starts again. At start the snapshot
is read and the journal replayed after it (lines are numbered, so a replay after a crash between
snapshot and truncation applies nothing twice; a torn last line is dropped). A restart keeps
every id and epoch.

Rewriting the whole state for every event would cost the reactor far more, and write far more, than
one journal line (figures: bench/results/design-figures.md#controller-journal).
"""

import json
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Optional

from twisted.internet import defer, threads
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from namesrv.controller.replication import NotLeader
from namesrv.controller.state import Event, ReplicaState
from namesrv.interfaces import IReplicatedLog
from namesrv.storage.atomicfile import write_atomic

if TYPE_CHECKING:   # types only
    from namesrv.context import IServerReactor

STATE_FILE = "controller-state.json"
JOURNAL_FILE = "controller-events.jsonl"
COMPACT_EVERY = 5000


class ControllerStateError(ValueError):
    """The state file exists but cannot be read: refuse to start rather than hand out ids again."""


@implementer(IReplicatedLog)
class LocalLog:
    log = Logger()
    #: a proposal is applied before ``propose`` returns (only its write to disk is still to come)
    applies_at_once = True

    def __init__(self, state: ReplicaState, store_dir: str, self_id: str, address: str, group: str,
                 reactor: "IServerReactor", compact_every: int = COMPACT_EVERY) -> None:
        self.state = state
        self.self_id = self_id
        self.group = group
        self.peers = {self_id: address}
        self.reactor = reactor
        self.snapshot_path = os.path.join(store_dir, STATE_FILE)
        self.journal_path = os.path.join(store_dir, JOURNAL_FILE)
        self.compact_every = compact_every
        self.role_listeners: list[Callable[[bool], object]] = []
        self._running = False
        self._lines: list[str] = []            # journal lines not handed to a write yet
        self._waiters: list[defer.Deferred[object]] = []          # their Deferreds
        self._writing: Optional[defer.Deferred[None]] = None
        self._journalled = 0        # lines in the journal file (after the last snapshot)
        self._lock = threading.Lock()
        self._loaded = False

    # -- IReplicatedLog -------------------------------------------------------------------------
    @property
    def is_leader(self) -> bool:
        return self._running

    @property
    def leader_id(self) -> Optional[str]:
        return self.self_id if self._running else None

    def start(self) -> None:
        os.makedirs(os.path.dirname(self.snapshot_path) or ".", exist_ok=True)
        if not self._loaded:
            self.load()
        self._running = True
        for listener in list(self.role_listeners):
            listener(True)

    def stop(self) -> None:
        self._running = False
        lines, self._lines = self._lines, []
        if lines:
            self._write(lines, None)     # on this thread: shutdown

    def propose(self, events: list[Event]) -> defer.Deferred[object]:
        if not self._running:
            return defer.fail(NotLeader("controller stopped"))
        for event in events:
            self.state.apply(event)
            self._lines.append(json.dumps({"n": self.state.applied, "event": event}, sort_keys=True) + "\n")
        d: defer.Deferred[object] = defer.Deferred()
        self._waiters.append(d)
        if self._writing is None:
            self._start_write()
        return d

    def status(self) -> dict[str, object]:
        return {"mode": "single", "role": "leader" if self._running else "stopped", "term": 0,
                "applied": self.state.applied, "peers": dict(self.peers), "leaderId": self.leader_id,
                "connectedPeers": []}

    # -- writing ----------------------------------------------------------------------------------
    def _start_write(self) -> None:
        lines, self._lines = self._lines, []
        waiters, self._waiters = self._waiters, []
        snapshot = None
        if self._journalled + len(lines) >= self.compact_every:
            # the state as it is now holds every line above: after the snapshot the journal starts again
            snapshot = json.dumps(self.state.to_dict(), sort_keys=True).encode("utf-8")
        self._writing = threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(), self._write,
                                                  lines, snapshot)
        self._writing.addBoth(self._written, waiters, len(lines), snapshot is not None)

    def _write(self, lines: list[str], snapshot: Optional[bytes]) -> None:
        with self._lock:
            if lines:
                with open(self.journal_path, "ab") as f:
                    f.write("".join(lines).encode("utf-8"))
                    f.flush()
                    os.fsync(f.fileno())
            if snapshot is not None:
                write_atomic(self.snapshot_path, snapshot, keep_backup=True)
                with open(self.journal_path, "wb") as f:
                    os.fsync(f.fileno())

    def _written(self, result: Optional[Failure], waiters: list[defer.Deferred[object]], count: int,
                 compacted: bool) -> None:
        self._writing = None
        if isinstance(result, Failure):
            self.log.error("controller: journal {path} not written: {err}", path=self.journal_path,
                           err=result.value)
            for d in waiters:
                d.errback(result)
        else:
            self._journalled = 0 if compacted else self._journalled + count
            for d in waiters:
                d.callback(None)
        if self._waiters:
            self._start_write()

    # -- reading ----------------------------------------------------------------------------------
    def load(self) -> bool:
        """Read the snapshot and replay the journal (once: the service reads it when built, so that an
        unreadable file refuses to start with a message)."""
        self._loaded = True
        try:
            with open(self.snapshot_path, "rb") as f:
                self.state.load_dict(json.loads(f.read().decode("utf-8")))
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as e:
            raise ControllerStateError("cannot read the controller state %s: %s" % (self.snapshot_path, e))
        replayed, good_bytes = 0, 0
        try:
            with open(self.journal_path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        for raw in data.splitlines(keepends=True):
            try:
                if not raw.endswith(b"\n"):
                    raise ValueError("torn line")
                entry = json.loads(raw.decode("utf-8"))
                number, event = int(entry["n"]), entry["event"]
            except (ValueError, KeyError, TypeError):
                self.log.warn("controller: journal {path} ends with a torn line after {n} events: dropped",
                              path=self.journal_path, n=replayed)
                with open(self.journal_path, "r+b") as f:
                    f.truncate(good_bytes)
                break
            good_bytes += len(raw)
            self._journalled += 1
            if number > self.state.applied:
                self.state.apply(event)
                replayed += 1
        if self.state.groups or replayed:
            self.log.info("controller: {n} broker groups restored from {dir} ({replayed} journal events)",
                          n=len(self.state.groups), dir=os.path.dirname(self.snapshot_path), replayed=replayed)
        return True
