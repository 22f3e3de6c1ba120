"""One controller alone: events apply at once and the state is written atomically to a file.

No consensus is needed with one member, so none is paid for: a proposal applies on the reactor
thread and its Deferred fires once the new state is on disk (``SerialFileWriter``: written in
a thread, coalesced, atomic with a backup), so an answer never announces an id or an epoch that
a crash right after could lose. At start the file is read back: a restart keeps ids and epochs.
"""

import json
import os

from twisted.internet import defer
from twisted.logger import Logger
from zope.interface import implementer

from namesrv.controller.replication import NotLeader
from namesrv.interfaces import IReplicatedLog
from namesrv.kvconfig.filewriter import SerialFileWriter

STATE_FILE = "controller-state.json"


class ControllerStateError(Exception):
    """The state file exists but cannot be read: refuse to start rather than hand out ids again."""


@implementer(IReplicatedLog)
class LocalLog:
    log = Logger()
    #: a proposal is applied before ``propose`` returns (only its write to disk is still to come)
    applies_at_once = True

    def __init__(self, state, store_dir, self_id, address, group, reactor):
        self.state = state
        self.self_id = self_id
        self.group = group
        self.peers = {self_id: address}
        self.path = os.path.join(store_dir, STATE_FILE)
        self.role_listeners = []
        self._writer = SerialFileWriter(self.path, self._encode, reactor=reactor, keep_backup=True,
                                        what="controller state")
        self._running = False

    # -- IReplicatedLog -------------------------------------------------------------------------
    @property
    def is_leader(self):
        return self._running

    @property
    def leader_id(self):
        return self.self_id if self._running else None

    def start(self):
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self.load()
        self._running = True
        for listener in list(self.role_listeners):
            listener(True)

    def stop(self):
        self._running = False
        self._writer.flush_sync()

    def propose(self, events):
        if not self._running:
            return defer.fail(NotLeader("controller stopped"))
        for event in events:
            self.state.apply(event)
        return self._writer.changed()

    def status(self):
        return {"mode": "single", "role": "leader" if self._running else "stopped", "term": 0,
                "applied": self.state.applied, "peers": dict(self.peers), "leaderId": self.leader_id,
                "connectedPeers": []}

    # -- the file -------------------------------------------------------------------------------
    def load(self):
        try:
            with open(self.path, "rb") as f:
                data = json.loads(f.read().decode("utf-8"))
        except FileNotFoundError:
            return False
        except (OSError, ValueError) as e:
            raise ControllerStateError("cannot read the controller state %s: %s" % (self.path, e))
        self.state.load_dict(data)
        self.log.info("controller: {n} broker groups restored from {path} ({applied} events)",
                      n=len(self.state.groups), path=self.path, applied=self.state.applied)
        return True

    def _encode(self):
        return json.dumps(self.state.to_dict(), sort_keys=True).encode("utf-8")

