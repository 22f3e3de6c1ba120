"""A 5.x broker in controller mode over a real socket: what ReplicasManager sends to the controller's
port (1012, 1013, a heartbeat, 1003, 1002; 1001 as a master), one connection per broker so that
closing it is the broker's death."""

import json

from namesrv.client import BlockingRemotingClient
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request


class ControllerBroker:
    """One broker in controller mode, as far as the controller's port sees it."""

    def __init__(self, port, cluster, name, address):
        self.client = BlockingRemotingClient("127.0.0.1", port)
        self.cluster, self.name, self.address = cluster, name, address
        self.broker_id = None

    def call(self, code, ext=None, body=None):
        return self.client.call(make_request(code, ext, body))

    def ok(self, code, ext=None, body=None):
        answer = self.call(code, ext, body)
        assert answer.code == ResponseCode.SUCCESS, (code, answer.code, answer.remark)
        return answer

    def start(self):
        """ReplicasManager.startBasicService: an id, a beat, the registration, then an election."""
        where = {"clusterName": self.cluster, "brokerName": self.name}
        self.broker_id = int(self.ok(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, where).ext["nextBrokerId"])
        self.ok(RequestCode.CONTROLLER_APPLY_BROKER_ID, dict(where, appliedBrokerId=self.broker_id,
                                                             registerCheckCode="%s;1700000000000" % self.address))
        self.ok(RequestCode.BROKER_HEARTBEAT, dict(where, brokerAddr=self.address, brokerId=self.broker_id,
                                                   heartbeatTimeoutMills=600000, epoch=1, maxOffset=100))
        self.ok(RequestCode.CONTROLLER_REGISTER_BROKER, dict(where, brokerId=self.broker_id,
                                                             brokerAddress=self.address))
        return self.call(RequestCode.CONTROLLER_ELECT_MASTER, dict(where, brokerId=self.broker_id,
                                                                   designateElect="false"))

    def sync(self, members, epoch):
        """As a master: the in-sync set is now ``members`` (CONTROLLER_ALTER_SYNC_STATE_SET)."""
        body = json.dumps({"syncStateSet": sorted(members), "syncStateSetEpoch": epoch}).encode()
        self.ok(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, {"brokerName": self.name,
                                                               "masterBrokerId": self.broker_id, "masterEpoch": 1}, body)

    def close(self):
        self.client.close()


def embedded_controller(workdir, controller_port, **extra):
    """NamesrvProcess properties for a name server running a one-member controller on ``controller_port``."""
    properties = {"enableControllerInNamesrv": "true", "controllerDLegerGroup": "group1",
                  "controllerDLegerPeers": "n0-127.0.0.1:%d" % controller_port, "controllerDLegerSelfId": "n0",
                  "controllerStorePath": str(workdir / "controller"), "notifyBrokerRoleChanged": "false"}
    properties.update(extra)
    return properties
