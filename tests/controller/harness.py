"""A controller processor behind its registry, and fake brokers that speak its request codes."""

import json

from twisted.internet import task

from namesrv.controller.service import ControllerContext
from namesrv.dispatch.chain import controller_chain
from namesrv.security.signature import sign_request_ext
from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request
from namesrv.controller.processor import ControllerProcessor
from tests.controller.fakes import make_controller
from tests.fakes import FakeConnection, result_of


class ControllerHarness:
    """The controller's processor behind the controller port's chain (its policies; ``acl_store`` when ACL is on)."""

    def __init__(self, acl_store=None, **properties):
        self.controller, self.clock = make_controller(**properties)
        self.context = ControllerContext(config=self.controller.config, controller=self.controller,
                                         reactor=self.clock, events=self.controller.events)
        self.chain = controller_chain([ControllerProcessor(self.context)], self.controller.config,
                                      self.controller.events, task.Clock(), acl_store=acl_store)
        self.registry = self.chain.registry

    def call(self, code, ext=None, body=None, connection=None, oneway=False, credentials=None):
        """The answer as a client decodes it (encoded and decoded again: what the wire carries); signed with
        ``credentials`` (accessKey, secretKey) when given, as AclClientRPCHook signs."""
        if credentials is not None:
            ext = sign_request_ext({key: str(value) for key, value in (ext or {}).items() if value is not None},
                                   body, *credentials)
        request = decode_frame(encode_frame(make_request(code, ext=ext, body=body, oneway=oneway))[4:])
        answer = self.registry.dispatch(request, connection or FakeConnection())
        if answer is not None and hasattr(answer, "addCallback"):
            answer = result_of(answer)
        return None if answer is None else decode_frame(encode_frame(answer)[4:])

    @property
    def notifier(self):
        return self.controller.notifier

    @property
    def state(self):
        return self.controller.state


class FakeBroker:
    """A 5.x broker in controller mode, as far as the controller sees it."""

    def __init__(self, harness, name="broker-a", port=30911, cluster="DefaultCluster", credentials=None):
        self.h = harness
        self.credentials = credentials
        self.name = name
        self.cluster = cluster
        self.address = "127.0.0.1:%d" % port
        self.connection = FakeConnection("127.0.0.1:%d" % (port + 20000))
        self.broker_id = None
        self.master_epoch = None

    def call(self, code, ext=None, body=None, oneway=False):
        return self.h.call(code, ext, body, self.connection, oneway, credentials=self.credentials)

    def start(self, check_code_time=1700000000000):
        """1012 -> 1013 -> 1003 -> heartbeat, as ReplicasManager.startBasicService does."""
        answer = self.call(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, {"clusterName": self.cluster,
                                                                        "brokerName": self.name})
        assert answer.code == 0, answer
        broker_id = int(answer.ext["nextBrokerId"])
        answer = self.call(RequestCode.CONTROLLER_APPLY_BROKER_ID, {
            "clusterName": self.cluster, "brokerName": self.name, "appliedBrokerId": broker_id,
            "registerCheckCode": "%s;%d" % (self.address, check_code_time)})
        assert answer.code == 0, answer
        self.broker_id = broker_id
        self.beat()
        return self.register()

    def register(self):
        return self.call(RequestCode.CONTROLLER_REGISTER_BROKER, {
            "clusterName": self.cluster, "brokerName": self.name, "brokerId": self.broker_id,
            "brokerAddress": self.address})

    def beat(self, epoch=None, max_offset=None, timeout=10000, priority=None):
        ext = {"clusterName": self.cluster, "brokerAddr": self.address, "brokerName": self.name,
               "brokerId": self.broker_id, "heartbeatTimeoutMills": timeout, "epoch": epoch,
               "maxOffset": max_offset, "electionPriority": priority}
        return self.call(RequestCode.BROKER_HEARTBEAT, ext)

    def elect(self, designate=False, cluster=None):
        return self.call(RequestCode.CONTROLLER_ELECT_MASTER, {
            "clusterName": cluster if cluster is not None else self.cluster, "brokerName": self.name,
            "brokerId": self.broker_id, "designateElect": designate})

    def replica_info(self):
        return self.call(RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": self.name})

    def alter_sync_state_set(self, members, epoch, master_id=None, master_epoch=None):
        body = json.dumps({"syncStateSet": sorted(members), "syncStateSetEpoch": epoch}).encode()
        return self.call(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, {
            "brokerName": self.name, "masterBrokerId": self.broker_id if master_id is None else master_id,
            "masterEpoch": master_epoch}, body)

    def die(self):
        """The broker's connection to the controller closes (kill -9)."""
        self.h.controller.heartbeats.connection_closed(self.connection)
