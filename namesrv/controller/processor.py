"""The controller processor: every request code Java's ControllerRequestProcessor answers.

Served on the controller's own port (the controller's address in ``controllerDLegerPeers``),
never on the name server's: BROKER_HEARTBEAT (904) means a controller heartbeat there and a
name server one here. Headers are read as Java's request header classes read them (a
``@CFNotNull`` field missing is ``the custom field <x> is null``, SYSTEM_ERROR); a body that does
not decode is SYSTEM_ERROR naming what failed. Where Java would throw a NullPointerException
for a field it does not require (a GET_REPLICA_INFO without brokerName), we answer the same
SYSTEM_ERROR with the field's name instead.

Reads and writes go through the leader's serial queue (namesrv/controller/core.py); metadata,
heartbeats and the configuration are answered by every controller, leader or not, as in Java.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Optional

from twisted.internet import defer
from zope.interface import implementer

from namesrv.config import java_text
from namesrv.config.properties import format_properties
from namesrv.config.remote import answer_config_update
from namesrv.config.runtime import CONTROLLER
from namesrv.controller import bodies, decisions
from namesrv.controller.bodies import BodyError
from namesrv.controller.core import Controller
from namesrv.controller.decisions import Liveness, Result
from namesrv.controller.limits import Refused
from namesrv.controller.state import ReplicaState
from namesrv.interfaces import Answer, IRemotingConnection, IRequestProcessor, Refusal
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import HeaderFieldError, RemotingCommand

if TYPE_CHECKING:   # types only
    from namesrv.controller.service import ControllerContext

#: a request code's handler
Handler = Callable[[RemotingCommand, IRemotingConnection], Answer]

#: Java's ControllerRequestProcessor black list, always refused on top of configBlackList. The controller's
#: identity, peers and store are never changeable from the network anyway (not runtime: namesrv/config/runtime.py)
CONTROLLER_BLACK_LIST = frozenset(["configBlackList", "configStorePath", "rocketmqHome"])


@implementer(IRequestProcessor)
class ControllerProcessor:
    name = "controller"
    codes = frozenset([
        RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, RequestCode.CONTROLLER_ELECT_MASTER,
        RequestCode.CONTROLLER_REGISTER_BROKER, RequestCode.CONTROLLER_GET_REPLICA_INFO,
        RequestCode.CONTROLLER_GET_METADATA_INFO, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA,
        RequestCode.BROKER_HEARTBEAT, RequestCode.UPDATE_CONTROLLER_CONFIG, RequestCode.GET_CONTROLLER_CONFIG,
        RequestCode.CLEAN_BROKER_DATA, RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
        RequestCode.CONTROLLER_APPLY_BROKER_ID])

    def __init__(self, context: "ControllerContext") -> None:
        self.context = context
        self.controller: Controller = context.controller
        self._handlers: dict[int, Handler] = {
            RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET: self.alter_sync_state_set,
            RequestCode.CONTROLLER_ELECT_MASTER: self.elect_master,
            RequestCode.CONTROLLER_REGISTER_BROKER: self.register_broker,
            RequestCode.CONTROLLER_GET_REPLICA_INFO: self.get_replica_info,
            RequestCode.CONTROLLER_GET_METADATA_INFO: self.get_metadata_info,
            RequestCode.CONTROLLER_GET_SYNC_STATE_DATA: self.get_sync_state_data,
            RequestCode.BROKER_HEARTBEAT: self.broker_heartbeat,
            RequestCode.UPDATE_CONTROLLER_CONFIG: self.update_config,
            RequestCode.GET_CONTROLLER_CONFIG: self.get_config,
            RequestCode.CLEAN_BROKER_DATA: self.clean_broker_data,
            RequestCode.CONTROLLER_GET_NEXT_BROKER_ID: self.get_next_broker_id,
            RequestCode.CONTROLLER_APPLY_BROKER_ID: self.apply_broker_id,
        }

    @property
    def state(self) -> ReplicaState:
        return self.controller.state

    @property
    def liveness(self) -> Liveness:
        return self.controller.liveness

    def reject_request(self, request: RemotingCommand) -> Optional[Refusal]:
        return None

    def process_request(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        try:
            return self._handlers[request.code](request, connection)
        except BodyError as e:
            return request.make_response(ResponseCode.SYSTEM_ERROR, str(e))

    # -- answers -----------------------------------------------------------------------------------
    @staticmethod
    def _answer(request: RemotingCommand, result: Result) -> RemotingCommand:
        ext = None if result.header is None else {k: java_text(v) for k, v in result.header.items()}
        return request.make_response(result.code, result.remark, ext=ext, body=result.body)

    def _run(self, request: RemotingCommand, decide: Callable[[], Result],
             write: bool = True) -> "defer.Deferred[Optional[RemotingCommand]]":
        return self.controller.run(decide, write).addCallback(lambda result: self._answer(request, result))

    # -- the codes -----------------------------------------------------------------------------------
    def alter_sync_state_set(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        name = request.require("brokerName")
        master_id = request.get_int("masterBrokerId")
        master_epoch = request.get_int("masterEpoch")
        members, epoch = bodies.read_sync_state_set(request.body)
        return self._run(request, lambda: decisions.alter_sync_state_set(
            self.state, self.liveness, name, master_id, master_epoch, members, epoch))

    def elect_master(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        _require_present(request, "clusterName")
        name = request.require("brokerName")
        broker_id = request.require_int("brokerId")
        designate = _require_bool(request, "designateElect")
        trigger = "admin" if designate else "broker"
        d = self.controller.elect(name, broker_id, designate, trigger=trigger)
        return d.addCallback(lambda result: self._answer(request, result))

    def register_broker(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        cluster = request.get("clusterName")
        name = request.require("brokerName")
        broker_id = request.require_int("brokerId")
        address = request.require("brokerAddress")
        return self._run(request, lambda: decisions.register_broker(
            self.state, self.liveness, cluster, name, broker_id, address, self.context.config))

    def get_replica_info(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        name = request.require("brokerName")
        return self._run(request, lambda: decisions.replica_info(self.state, name), write=False)

    def get_metadata_info(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        replicated = self.controller.replicated
        leader = replicated.leader_id
        header = {"group": replicated.group, "controllerLeaderId": leader,
                  "controllerLeaderAddress": replicated.peers.get(leader) if leader is not None else None,
                  "isLeader": replicated.is_leader,
                  "peers": "".join("%s:%s;" % item for item in sorted(replicated.peers.items()))}
        return request.make_response(ResponseCode.SUCCESS, ext={k: java_text(v) for k, v in header.items()
                                                                 if v is not None})

    def get_sync_state_data(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        if not request.body:
            return request.make_response(ResponseCode.SUCCESS)
        names = bodies.read_broker_names(request.body)
        if not names:
            return request.make_response(ResponseCode.SUCCESS)
        return self._run(request, lambda: decisions.sync_state_data(self.state, self.liveness, names), write=False)

    def broker_heartbeat(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        cluster = request.require("clusterName")
        address = request.require("brokerAddr")
        name = request.require("brokerName")
        broker_id = request.get_int("brokerId")
        if broker_id is None:
            return request.make_response(ResponseCode.CONTROLLER_INVALID_REQUEST, "Heart beat with empty brokerId")
        try:
            self.controller.heartbeats.beat(
                cluster, name, address, broker_id, connection,
                timeout_millis=request.get_int("heartbeatTimeoutMills"), epoch=request.get_int("epoch"),
                max_offset=request.get_int("maxOffset"), confirm_offset=request.get_int("confirmOffset"),
                election_priority=request.get_int("electionPriority"))
        except Refused as refusal:
            self.controller.refusals.refused(refusal, getattr(connection, "peer", None))
            return request.make_response(refusal.code, str(refusal))
        return request.make_response(ResponseCode.SUCCESS, "Heart beat success")

    def clean_broker_data(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        cluster = request.get("clusterName")
        name = request.require("brokerName")
        ids = request.get("brokerControllerIdsToClean")
        clean_living = request.get_bool("isCleanLivingBroker", False)
        return self._run(request, lambda: decisions.clean_broker_data(
            self.state, self.liveness, cluster, name, ids, clean_living))

    def get_next_broker_id(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        cluster, name = request.get("clusterName"), request.require("brokerName")
        return self._run(request, lambda: decisions.next_broker_id(self.state, cluster, name), write=False)

    def apply_broker_id(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        cluster, name = request.get("clusterName"), request.require("brokerName")
        broker_id = request.require_int("appliedBrokerId")
        check_code = request.require("registerCheckCode")
        return self._run(request, lambda: decisions.apply_broker_id(self.state, cluster, name, broker_id, check_code,
                                                                    self.context.config))

    # -- configuration (answered by every controller) ---------------------------------------------------
    def get_config(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        text = format_properties((name, java_text(self.context.config.get(name)))
                                 for name in self.context.config_names())
        return request.make_response(ResponseCode.SUCCESS, body=text.encode("utf-8") if text else None)

    def update_config(self, request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        """The controller's runtime properties only (namesrv/config/runtime.py): never the name server's,
        which an embedded controller shares its configuration with; kept in the runtime overlay."""
        config = self.context.config
        answer: Answer = answer_config_update(request, connection, config, CONTROLLER,
                                              CONTROLLER_BLACK_LIST | config.black_list(), self.context.events,
                                              self.context.reactor)
        return answer


def _require_present(request: RemotingCommand, name: str) -> str:
    """A ``@CFNotNull`` String that may be empty (Java checks for null only)."""
    if not request.ext or request.ext.get(name) is None:
        raise HeaderFieldError(name)
    return request.ext[name]


def _require_bool(request: RemotingCommand, name: str) -> bool:
    value = request.get_bool(name)
    if value is None:
        raise HeaderFieldError(name)
    return value
