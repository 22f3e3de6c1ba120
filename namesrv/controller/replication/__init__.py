"""The replicated log at the controller's edge: where events go to be applied on every controller.

Two implementations of ``IReplicatedLog`` (namesrv/interfaces.py), chosen by the peer list:
``LocalLog`` for one controller alone (applies at once, persists the state atomically to a
file, always leader) and ``RaftLog`` for several (pysyncobj's Raft: elections, a journal and
snapshots). The state and the decisions never know which one carries them.
"""


class NotLeader(Exception):
    """This controller cannot commit: it is not the leader (or stopped being it meanwhile)."""


def peer_table(peers_text: str | None) -> dict[str, str]:
    """``controllerDLegerPeers`` (``n0-host:port;n1-host:port``) as an ordered {id: 'host:port'}.

    Raises ValueError naming the bad entry.
    """
    table: dict[str, str] = {}
    for entry in (peers_text or "").split(";"):
        entry = entry.strip()
        if not entry:
            continue
        peer_id, sep, address = entry.partition("-")
        host, colon, port = address.rpartition(":")
        if not sep or not peer_id or not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError("controllerDLegerPeers entry %r is not id-host:port" % entry)
        if peer_id in table:
            raise ValueError("controllerDLegerPeers names %s twice" % peer_id)
        table[peer_id.strip()] = "%s:%d" % (host.strip(), int(port))
    return table


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)
