"""The controller group's own administration on the controller port: its members and its leadership.

Java's controllers have no such codes (their members are fixed at start); these are ours, in a range
Java's RequestCode leaves unused, and ``namesrv-admin`` sends them (``admin_members.py``):

- CONTROLLER_LIST_MEMBERS (1104, admin read): every controller answers with the configuration it
  has in force; the leader adds each member's lag and last contact;
- CONTROLLER_ADD_MEMBER (1101: ``controllerId``, ``controllerAddress``), CONTROLLER_PROMOTE_MEMBER
  (1102: ``controllerId``), CONTROLLER_REMOVE_MEMBER (1103: ``controllerId``) and
  CONTROLLER_TRANSFER_LEADER (1105: ``toControllerId``, a voter's id or ``any``), admin writes
  (signed by an admin account when ``aclEnable``): only the leader answers them, once the change is
  committed (or the new leader serves); elsewhere CONTROLLER_NOT_LEADER, as the other leader-only codes.

A change the group's rules refuse (``replication/changes.py``, ``replication/transfer.py``) is
CONTROLLER_INVALID_REQUEST with the reason and what to do in the remark. One controller alone
(``controllerDLegerPeers`` lists one) has no Raft group to change: it says so.
"""

import json
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from twisted.internet import defer
from twisted.python.failure import Failure
from zope.interface import implementer

from namesrv.controller.replication import NotLeader
from namesrv.controller.replication.changes import ChangeRefused
from namesrv.controller.replication.membership import Configuration
from namesrv.controller.replication.transfer import TransferRefused
from namesrv.interfaces import Answer, IRemotingConnection, IReplicatedLog, IRequestProcessor, Refusal
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import RemotingCommand

if TYPE_CHECKING:   # types only
    from namesrv.controller.replication.raft import RaftLog
    from namesrv.controller.service import ControllerContext

_REFUSED = (ChangeRefused, TransferRefused)


@implementer(IRequestProcessor)
class ControllerMembershipProcessor:
    name = "controller-membership"
    codes = frozenset([RequestCode.CONTROLLER_LIST_MEMBERS, RequestCode.CONTROLLER_ADD_MEMBER,
                       RequestCode.CONTROLLER_PROMOTE_MEMBER, RequestCode.CONTROLLER_REMOVE_MEMBER,
                       RequestCode.CONTROLLER_TRANSFER_LEADER])

    def __init__(self, context: "ControllerContext") -> None:
        self.context = context

    @property
    def replicated(self) -> IReplicatedLog:
        return self.context.controller.replicated

    def reject_request(self, request: RemotingCommand) -> Refusal | None:
        return None

    def process_request(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        if request.code == RequestCode.CONTROLLER_LIST_MEMBERS:
            return self.list_members(request)
        changes = getattr(self.replicated, "changes", None)
        if changes is None:
            return request.make_response(ResponseCode.CONTROLLER_INVALID_REQUEST,
                                         "this controller is alone (controllerDLegerPeers lists one): its group has "
                                         "no members to change")
        if request.code == RequestCode.CONTROLLER_TRANSFER_LEADER:
            raft = cast("RaftLog", self.replicated)        # the only log with changes
            start = partial(raft.transfer_leadership, request.require("toControllerId").strip())
            return self._answer(request, start, partial(self._new_leader, self.context.reactor.seconds()))
        member = request.require("controllerId").strip()
        if request.code == RequestCode.CONTROLLER_ADD_MEMBER:
            start = partial(changes.add, member, request.require("controllerAddress").strip())
        elif request.code == RequestCode.CONTROLLER_PROMOTE_MEMBER:
            start = partial(changes.promote, member)
        else:
            start = partial(changes.remove, member)
        return self._answer(request, start, _configuration)

    def _new_leader(self, started: float, leader: str) -> dict[str, object]:
        return {"leaderId": leader, "leaderAddress": self.replicated.peers.get(leader),
                "millis": int((self.context.reactor.seconds() - started) * 1000)}

    def _answer(self, request: RemotingCommand, start: Callable[[], "defer.Deferred[Any]"],
                describe: Callable[[Any], object]) -> Answer:
        try:
            d = start()
        except NotLeader:
            return request.make_response(ResponseCode.CONTROLLER_NOT_LEADER, "The controller is not in leader state")
        except _REFUSED as e:
            return request.make_response(ResponseCode.CONTROLLER_INVALID_REQUEST, str(e))

        def done(result: object) -> RemotingCommand:
            return request.make_response(ResponseCode.SUCCESS, body=json.dumps(describe(result), sort_keys=True)
                                         .encode("utf-8"))

        def failed(failure: Failure) -> RemotingCommand | Failure:
            if failure.check(NotLeader):
                return request.make_response(ResponseCode.CONTROLLER_NOT_LEADER, str(failure.value))
            if failure.check(*_REFUSED):
                return request.make_response(ResponseCode.CONTROLLER_INVALID_REQUEST, str(failure.value))
            return failure
        return d.addCallbacks(done, failed)

    def list_members(self, request: RemotingCommand) -> RemotingCommand:
        """The configuration this controller has in force, as ``listControllers`` prints it."""
        replicated = self.replicated
        status = replicated.status()
        members = status.get("members") or [{"id": replicated.self_id, "address": replicated.peers.get(replicated.self_id),
                                             "role": "voter", "leader": replicated.is_leader, "self": True,
                                             "connected": True, "lag": 0, "lastContactSeconds": 0.0}]
        # the configuration's wire form (membership.Configuration.to_wire) where a Raft group reports one
        configuration = cast("dict[str, Any]", status.get("configuration") or {})
        body = {"group": replicated.group, "selfId": replicated.self_id, "leaderId": replicated.leader_id,
                "epoch": configuration.get("epoch", 0), "generation": configuration.get("generation", ""),
                "fenced": configuration.get("fenced", []), "members": members, "role": status.get("role"),
                "term": status.get("term"), "store": status.get("store"), "lastLogIndex": status.get("lastLogIndex"),
                "lastLogTerm": status.get("lastLogTerm")}
        return request.make_response(ResponseCode.SUCCESS, body=json.dumps(body, sort_keys=True).encode("utf-8"))


def _configuration(configuration: Configuration) -> dict[str, Any]:
    return configuration.to_wire()
