"""A name server with a controller in its process names the master the controller committed to a slave
whose master has not registered here yet (routes/registration.py ``_tell_master``)."""

from namesrv.controller.state import ReplicaGroup
from namesrv.service import make_service
from tests.config_for import service_config
from tests.integration.server import free_port
from tests.routes.helpers import CLUSTER, register

MASTER, MASTER_HA, SLAVE = "127.0.0.1:50911", "127.0.0.1:50912", "127.0.0.1:30911"


def test_an_embedded_controllers_committed_master_reaches_a_slaves_registration(tmp_path):
    config = service_config(tmp_path, enableControllerInNamesrv=True, controllerDLegerGroup="g",
                            controllerDLegerSelfId="n0", controllerDLegerPeers="n0-127.0.0.1:%d" % free_port(),
                            controllerStorePath=str(tmp_path / "controller"))
    svc = make_service(config)
    routes = svc.routes
    register(routes, "T", addr=MASTER, broker_id=2, ha=MASTER_HA)   # live here as the slave it was
    assert register(routes, "T", addr=SLAVE, broker_id=3).master_addr is None   # the controller knows nothing
    svc.controller.state.groups["broker-a"] = ReplicaGroup(CLUSTER, "broker-a", brokers={
        2: (MASTER, MASTER + ";1"), 3: (SLAVE, SLAVE + ";1")}, master_id=2, master_epoch=2)
    result = register(routes, "T", addr=SLAVE, broker_id=3, counter=2)
    assert (result.master_addr, result.ha_server_addr) == (MASTER, MASTER_HA)


def test_without_a_controller_no_hint_is_asked(tmp_path):
    assert make_service(service_config(tmp_path)).routes.registrations.master_hint is None
