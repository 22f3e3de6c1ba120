"""A real `twistd namesrv` with its controller and a read worker: when the controller elects a new master,
producers reading routes from the worker are sent to it at once, before its own registration as master,
and a late registration from an older master epoch does not take the route back (controller/routing.py)."""

import json
import os
import time

from namesrv.protocol.codes import RequestCode, ResponseCode
from tests.brokers import register_request, route_request
from tests.controller.wire import WireBroker, controller_ports, controller_properties
from tests.integration.server import NamesrvProcess
from tests.integration.workers import WORKERS, answered_by_workers

CLUSTER = "ClusterW"


def register(client, broker, broker_id, epoch, counter):
    """``broker`` (a WireBroker) registers with the name server as a 5.x broker in controller mode does."""
    return client.call(register_request(CLUSTER, broker.name, broker.address, broker_id=broker_id,
                                        topics=["Failover", "Other"], counter=counter, state_version=epoch))


def master_routed(client):
    answer = client.call(route_request("Failover"))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    (broker_data,) = json.loads(answer.body)["brokerDatas"]
    return broker_data["brokerAddrs"]


def test_an_elected_master_is_routed_by_the_workers_before_it_registers_as_master(tmp_path):
    (port,) = controller_ports(1)
    properties = dict(controller_properties(tmp_path, port), **WORKERS)
    server = NamesrvProcess(tmp_path, properties).start()
    a1, a2 = WireBroker(port), WireBroker(port)
    registrations, producer = server.client(), server.client()
    try:
        assert a1.start().code == ResponseCode.SUCCESS and a1.elect().code == ResponseCode.SUCCESS   # epoch 1
        a2.start()
        altered = a1.call(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
                          {"brokerName": "broker-a", "masterBrokerId": 1, "masterEpoch": 1},
                          json.dumps({"syncStateSet": [1, 2], "syncStateSetEpoch": 1}).encode())
        assert altered.code == ResponseCode.SUCCESS
        assert register(registrations, a1, 0, 1, 1).code == ResponseCode.SUCCESS
        assert register(registrations, a2, 2, 1, 1).code == ResponseCode.SUCCESS
        assert master_routed(producer) == {"0": a1.address, "2": a2.address}

        # the master is lost to the controller (its controller connection closes) but stays registered here,
        # as a master cut off from the controllers is; a2 has not registered as master
        a1.die()
        assert a2.notifications.arrived.wait(20), "the controller did not elect the slave"
        deadline = time.monotonic() + 20
        while master_routed(producer) != {"0": a2.address}:
            assert time.monotonic() < deadline, master_routed(producer)
            time.sleep(0.05)

        # a1's registration from epoch 1 reaches this name server late: refused by the stale-address guard
        register(registrations, a1, 0, 1, 2)
        assert master_routed(producer) == {"0": a2.address}
        # a2's own registration at epoch 2, then a1 as the slave it was told it is
        assert register(registrations, a2, 0, 2, 2).code == ResponseCode.SUCCESS
        assert register(registrations, a1, 1, 2, 3).code == ResponseCode.SUCCESS
        assert master_routed(producer) == {"0": a2.address, "1": a1.address}
        for closeable in (registrations, producer, a1, a2):
            closeable.close()
        assert answered_by_workers(server) > 0
    finally:
        for closeable in (registrations, producer, a1, a2):
            closeable.close()
        server.stop()
    logs = tmp_path / "logs"
    events = [json.loads(line) for name in os.listdir(logs) if name.startswith("namesrv-events")
              for line in open(logs / name)]
    # a1 routed by its registration; a2 by the controller, and not again by its own registration as master
    routed = [(e["trigger"], e["masterAddress"], e["masterBrokerId"], e["masterEpoch"]) for e in events
              if e["event"] == "route_master_changed"]
    assert routed == [("registration", a1.address, 0, 1), ("controller", a2.address, 2, 2)]
    assert "Traceback" not in server.log()
