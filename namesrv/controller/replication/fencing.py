"""Back from a lost quorum: a survivor forces a new group of one, and the members it left behind are fenced.

With a majority of the voters gone for good, nothing can be elected again. ``twistd namesrv
--force-new-controller-group`` (or ``twistd controller ...``) starts one survivor as a group of
its own (as etcd's ``--force-new-cluster``), from its own store:

- every entry of its log is kept, committed or not, so every event it acknowledged survives (an
  event a leader acknowledged to a broker was in a majority's logs, so in any survivor's that was
  part of that majority; a survivor that was not may lack the latest ones, which is why the
  runbook says to force the member with the longest log);
- a configuration entry follows them: this member the only voter, the group's epoch raised by one
  and a new random generation, and every other member of the old configuration listed as fenced.
  Its term is raised past every term in the log, so that no old member's log can win a vote
  against it;
- pysyncobj then elects it alone, and its first entry commits everything before it.

Fencing. Each member says its epoch and generation in the member link's handshake
(``members.GroupState``), after both ends proved who they are. Two members of different
generations never link. The one with the older epoch learns that it was left behind, writes a
marker (``fenced`` in its store, through the disk queue) and stops taking part in Raft, now and at
every start, until its store is moved aside and it is added again as a new member
(``addController``); it answers brokers CONTROLLER_NOT_LEADER meanwhile. The survivor dials every
fenced member's address every ``FENCE_DIAL_SECONDS`` to tell it. A member whose store was moved
aside starts fresh and may join any generation it is added to.

What it cannot do: old members that come back together while the survivor cannot reach them still
hold a majority of the old configuration and may elect a leader of the old group among themselves;
keep them down (or move their stores aside) until the survivor has fenced them. docs/runbook.md
has the procedure.
"""

import os
from typing import TYPE_CHECKING, Optional

from twisted.logger import Logger

from namesrv.controller.replication import split_address
from namesrv.controller.replication.disk import Disk
from namesrv.controller.replication.journal import DurableJournal
from namesrv.controller.replication.membership import VOTER, Configuration, encode_command
from namesrv.controller.replication.snapshot import Decoded

if TYPE_CHECKING:   # types only
    from namesrv.controller.replication.members import GroupState
    from namesrv.controller.replication.mesh import MemberMesh
    from namesrv.controller.replication.raft import RaftLog

FENCED_FILE = "fenced"
#: seconds between two dials of a fenced member's address
FENCE_DIAL_SECONDS = 2.0

log = Logger()


class Fenced(Exception):
    """This member belongs to a group that a forced new group replaced."""


class ForceError(ValueError):
    """The store cannot be forced into a new group (says why)."""


def read_marker(disk: Disk) -> Optional[str]:
    """The reason this member was fenced (text), or None."""
    data = disk.read_file(FENCED_FILE)
    if data is None:
        return None
    return data.decode("utf-8", "replace").strip() or "fenced (no reason recorded)"


def fence(raftlog: "RaftLog", peer: str, theirs: "GroupState") -> str:
    """Record, durably and before anything else is written, that ``peer`` proved a newer group exists."""
    reason = ("fenced by %s: the controller group was forced anew (%s) while this member was away; this member's "
              "store is stale. Move %s aside and add this member again (namesrv-admin addController)"
              % (peer, theirs.describe(), raftlog.store_dir))
    disk = raftlog._disk
    assert disk is not None             # a link is up: the log was started, with its disk
    disk.write_file(FENCED_FILE, reason.encode("utf-8"))
    disk.sync()
    return reason


def force_new_group(raftlog: "RaftLog", journal: DurableJournal,
                    decoded: Optional[Decoded]) -> Optional[Configuration]:
    """Make ``journal`` (this survivor's, read at start) a group of one: see the module docstring."""
    in_force = journal.configuration()
    assert in_force is not None         # raft.py gave the journal its base (snapshot's or static) before
    _, old = in_force
    me = raftlog.self_id
    if set(old.members) == {me} and old.role(me) == VOTER:
        log.warn("controller {id}: --force-new-controller-group: this member is already a group of one "
                 "({members}); nothing forced", id=me, members=old.describe())
        return None
    address = old.addresses().get(me) or raftlog.self_address
    fenced = dict(old.fenced)
    fenced.update({m: a for m, a in old.addresses().items() if m != me})
    forced = Configuration({me: (address, VOTER)}, old.epoch + 1, os.urandom(16).hex(), fenced)
    last = journal[-1] if len(journal) else (decoded[1] if decoded is not None else None)
    last_index = last[1] if last is not None else 0
    last_term = last[2] if last is not None else 0
    term = max(journal.getCurrentTerm(), last_term) + 1
    journal.add(encode_command(forced), last_index + 1, term)
    journal.setCurrentTerm(term, me)
    log.critical("controller {id}: FORCED A NEW CONTROLLER GROUP of one from this store: every entry up to {index} "
                 "kept, epoch {epoch}, generation {generation}; fenced: {fenced}. Grow it back with "
                 "namesrv-admin addController/promoteController", id=me, index=last_index,
                 epoch=forced.epoch, generation=forced.generation, fenced=", ".join(sorted(fenced)) or "none")
    return forced


def dial_fenced(mesh: "MemberMesh", configuration: Configuration) -> None:
    """The survivor keeps telling the members it fenced (those not added back) that they are."""
    set_fenced = getattr(mesh, "set_fenced", None)
    if set_fenced is not None:
        set_fenced({m: split_address(a) for m, a in configuration.fenced.items()
                    if m not in configuration.members})
