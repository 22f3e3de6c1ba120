"""What a server opens and owns (namesrv/startup/plan.py), as the checks before a start see it."""

import os

from namesrv.config import NamesrvConfig
from namesrv.controller.service import store_dir
from namesrv.startup.plan import controller_listens, namesrv_listens, namesrv_state_files


def config_of(**values):
    config = NamesrvConfig()
    config.update({key: str(value) for key, value in values.items()})
    return config


def test_the_default_controller_store_is_per_instance_as_the_other_files():
    assert store_dir(config_of()) == os.path.expanduser("~/DLedgerController")   # Java's, on 9876
    assert store_dir(config_of(listenPort=9886)) == os.path.expanduser("~/DLedgerController-9886")
    assert store_dir(config_of(listenPort=9886, controllerStorePath="/srv/c")) == "/srv/c"


def test_a_name_server_claims_its_files_the_controller_store_too_when_embedded(tmp_path):
    config = config_of(listenPort=9886)
    assert [f.prop for f in namesrv_state_files(config)] == ["kvConfigPath", "runtimeConfigPath", "routeSnapshotPath"]
    assert [f.prop for f in namesrv_state_files(config_of(routeSnapshotEnable="false"))] == \
        ["kvConfigPath", "runtimeConfigPath"]
    (c_file, *rest) = namesrv_state_files(config_of(configStorePath=tmp_path / "n.properties"), "n.properties")
    assert c_file.prop == "configStorePath" and not c_file.required   # read, never written: it may sit anywhere
    embedded = config_of(listenPort=9886, enableControllerInNamesrv="true", controllerDLegerPeers="n0-127.0.0.1:9878",
                         controllerDLegerSelfId="n0")
    (store,) = [f for f in namesrv_state_files(embedded) if f.prop == "controllerStorePath"]
    assert store.directory and store.lock_path == os.path.expanduser("~/DLedgerController-9886/owner.lock")


def test_the_ports_checked_before_a_start():
    config = config_of(listenPort=9886, statusListenPort=9887, enableControllerInNamesrv="true",
                       controllerDLegerPeers="n0-127.0.0.1:9878;n1-127.0.0.1:9879", controllerDLegerSelfId="n1")
    assert [(listen.what, listen.port) for listen in namesrv_listens(config)] == [
        ("listenPort", 9886), ("statusListenPort", 9887), ("prometheusListenPort", 0),
        ("the controller's port (n1-127.0.0.1:9879 in controllerDLegerPeers)", 9879)]
    assert namesrv_listens(config, takeover=True) == []   # the old process's, until it hands them over
    assert [listen.port for listen in controller_listens(config)] == [9879, 0]


def test_the_runtime_overlay_sits_beside_the_kv_store_and_follows_the_port(tmp_path):
    assert config_of().runtimeConfigPath == os.path.expanduser("~/namesrv/namesrv-runtime.properties")
    assert config_of(listenPort=9886).runtimeConfigPath == os.path.expanduser("~/namesrv/namesrv-runtime-9886.properties")
    moved = config_of(listenPort=9886, kvConfigPath=tmp_path / "ns1" / "kv.json")
    assert moved.runtimeConfigPath == str(tmp_path / "ns1" / "namesrv-runtime-9886.properties")
    assert config_of(runtimeConfigPath=tmp_path / "o.properties").runtimeConfigPath == str(tmp_path / "o.properties")
    (overlay,) = [f for f in namesrv_state_files(moved) if f.prop == "runtimeConfigPath"]
    assert overlay.lock_path == str(tmp_path / "ns1" / "namesrv-runtime-9886.properties.lock")
