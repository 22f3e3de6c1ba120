"""The controller group's configuration: its members (voters and learners), where they listen, and the
group's generation, as entries of the Raft log.

Raft's single-server changes (Ongaro's thesis, 4.1): a configuration entry takes effect on a
member as soon as it is in its log, committed or not, and is undone if that part of the log is cut
back; a leader proposes one only once an entry of its own term is committed and no other
configuration entry is still uncommitted, so two configurations in force differ by one member at
most. A learner receives the log (or a snapshot) and counts towards nothing; once it has caught up
it is promoted to voter.

The configuration in force is the last one in the member's log, else the one its snapshot holds,
else the static one of ``controllerDLegerPeers`` (all voters, generation 0). The journal tracks it
as entries come and go (``journal.py``), and ``raft.py`` gives it to pysyncobj (``hooks.py``).

A configuration entry is pysyncobj's regular command calling our second replicated method
(``apply_members``, id 1) with one map::

    {"members": [[id, "host:port", "voter" | "learner"], ...], "epoch": int, "generation": hex (32) or "",
     "fenced": [[id, "host:port"], ...]}

``epoch`` and ``generation`` change only when a survivor forces a new group of one
(``fencing.py``); ``fenced`` lists the members it left behind, dialled so that they learn it.
pysyncobj's own membership commands are never used: they take effect only when applied, so a
restarted member would count votes with an old configuration.
"""

from collections.abc import Iterable, Mapping
from typing import Any

import re

from namesrv.controller.replication.values import CodecError, pack, unpack

#: pysyncobj's command type of a regular command (pysyncobj.syncobj._COMMAND_TYPE.REGULAR)
COMMAND_REGULAR = 0
APPLY_MEMBERS_ID = 1
VOTER = "voter"
LEARNER = "learner"
ROLES = (VOTER, LEARNER)
#: members one configuration may hold (a controller group is 3 or 5; this only bounds what is read)
MAX_MEMBERS = 64
_ADDRESS = re.compile(r"^[^\s:;]{1,253}:\d{1,5}$")
#: the first bytes of every configuration command (msgpack [1, ...]); other commands start b"\x00\x92\x00"
_PREFIX = bytes([COMMAND_REGULAR]) + b"\x92\x01"


class Configuration:
    """One configuration of the group (an immutable value)."""

    __slots__ = ("members", "epoch", "generation", "fenced")

    def __init__(self, members: Mapping[str, tuple[str, str]], epoch: int = 0, generation: str = "",
                 fenced: Mapping[str, str] | None = None) -> None:
        self.members = dict(members)          # id -> (address, role)
        self.epoch = epoch
        self.generation = generation          # "" or 32 hex digits
        self.fenced = dict(fenced or {})      # id -> address: members a forced new group left behind

    @classmethod
    def static(cls, peers: Mapping[str, str], learners: Iterable[str] = ()) -> "Configuration":
        """The configuration of ``controllerDLegerPeers``: every member a voter (but ``learners``)."""
        return cls({peer: (address, LEARNER if peer in learners else VOTER) for peer, address in peers.items()})

    def voters(self) -> list[str]:
        return sorted(m for m, (_, role) in self.members.items() if role == VOTER)

    def learners(self) -> list[str]:
        return sorted(m for m, (_, role) in self.members.items() if role == LEARNER)

    def addresses(self) -> dict[str, str]:
        return {m: address for m, (address, _) in self.members.items()}

    def role(self, member: str) -> str | None:
        entry = self.members.get(member)
        return entry[1] if entry is not None else None

    def generation_bytes(self) -> bytes:
        return bytes.fromhex(self.generation) if self.generation else b""

    def with_member(self, member: str, address: str, role: str) -> "Configuration":
        members = dict(self.members)
        members[member] = (address, role)
        return Configuration(members, self.epoch, self.generation, self.fenced)

    def without_member(self, member: str) -> "Configuration":
        members = dict(self.members)
        members.pop(member, None)
        return Configuration(members, self.epoch, self.generation, self.fenced)

    def voter_change(self, other: "Configuration") -> set[str]:
        """Voters in one and not the other (Raft's single-server rule: at most one)."""
        return set(self.voters()) ^ set(other.voters())

    def to_wire(self) -> dict[str, Any]:
        return {"members": [[m, address, role] for m, (address, role) in sorted(self.members.items())],
                "epoch": self.epoch, "generation": self.generation,
                "fenced": [[m, address] for m, address in sorted(self.fenced.items())]}

    @classmethod
    def from_wire(cls, value: Any) -> "Configuration":
        check_wire(value)
        return cls({m: (address, role) for m, address, role in value["members"]}, value["epoch"],
                   value["generation"], {m: address for m, address in value["fenced"]})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Configuration) and self.to_wire() == other.to_wire()

    def __hash__(self) -> int:
        return hash(repr(self.to_wire()))

    def describe(self) -> str:
        parts = ["%s=%s%s" % (m, address, "" if role == VOTER else " (learner)")
                 for m, (address, role) in sorted(self.members.items())]
        return ", ".join(parts) + (" [epoch %d]" % self.epoch if self.epoch else "")

    def __repr__(self) -> str:
        return "Configuration(%s)" % self.describe()


def check_id(value: object) -> None:
    if not isinstance(value, str) or not 0 < len(value.encode("utf-8")) <= 32 or "\0" in value:
        raise CodecError("a member id is 1-32 bytes of text")


def check_address(value: object) -> None:
    if not isinstance(value, str) or not _ADDRESS.match(value) or not 0 < int(value.rsplit(":", 1)[1]) < 65536:
        raise CodecError("a member address is host:port, got %r" % (value,))


def check_wire(value: object) -> None:
    """A configuration map as members send it; CodecError when anything is off."""
    if not (isinstance(value, dict) and set(value) == {"members", "epoch", "generation", "fenced"}):
        raise CodecError("a configuration is {members, epoch, generation, fenced}")
    members, fenced = value["members"], value["fenced"]
    if not isinstance(members, list) or not 0 < len(members) <= MAX_MEMBERS:
        raise CodecError("a configuration holds 1-%d members" % MAX_MEMBERS)
    if not isinstance(fenced, list) or len(fenced) > MAX_MEMBERS:
        raise CodecError("a configuration fences at most %d members" % MAX_MEMBERS)
    seen: set[str] = set()
    for entry in members:
        if not (isinstance(entry, list) and len(entry) == 3 and entry[2] in ROLES):
            raise CodecError("a configuration member is [id, address, voter|learner]")
        check_id(entry[0])
        check_address(entry[1])
        if entry[0] in seen:
            raise CodecError("a configuration names %s twice" % entry[0])
        seen.add(entry[0])
    if not any(entry[2] == VOTER for entry in members):
        raise CodecError("a configuration without a voter")
    for entry in fenced:
        if not (isinstance(entry, list) and len(entry) == 2):
            raise CodecError("a fenced member is [id, address]")
        check_id(entry[0])
        check_address(entry[1])
    epoch, generation = value["epoch"], value["generation"]
    if not isinstance(epoch, int) or isinstance(epoch, bool) or not 0 <= epoch < 1 << 32:
        raise CodecError("a configuration epoch is a 32-bit count")
    if not (isinstance(generation, str) and (generation == "" or re.fullmatch(r"[0-9a-f]{32}", generation))):
        raise CodecError("a configuration generation is 32 hex digits or empty")


def encode_command(configuration: Configuration) -> bytes:
    """The log command of a configuration entry (what ``apply_members`` pickles, in msgpack)."""
    return bytes([COMMAND_REGULAR]) + pack([APPLY_MEMBERS_ID, [configuration.to_wire()]])


def is_configuration(command: bytes) -> bool:
    return command[:3] == _PREFIX


def decode_command(command: bytes) -> Configuration:
    """The Configuration of a configuration entry; CodecError when it is not a good one."""
    call = unpack(command[1:])
    if not (isinstance(call, list) and len(call) == 2 and call[0] == APPLY_MEMBERS_ID and isinstance(call[1], list)
            and len(call[1]) == 1):
        raise CodecError("a configuration command is apply_members([configuration])")
    return Configuration.from_wire(call[1][0])
