"""mqadmin 5.3.3's own controller commands against our embedded controller, side by side with
namesrv-admin's: the same answers, printed the same way (skipped without $JAVAPEER5).

The fleet is ``test_controller_commands``'s (groups made over the controller's port as 5.x brokers
make them, broker-e in the name server answering GET_BROKER_EPOCH_CACHE). Java prints a ``Properties``
and a ``HashSet`` in hash order, and mqadmin 5.3.3 decodes electMaster's body at the wrong level
(no ``#Broker`` lines): those are compared as sets, or without the lines only we print.
"""

import os
import subprocess

import pytest

from tests.admin.cli import admin
from tests.admin.controllers import fleet  # noqa: F401 (the fixture)
from tests.javapeers import peer


@pytest.fixture(scope="module")
def mqadmin(tmp_path_factory):
    """Runs mqadmin.sh; asked for before ``fleet`` by every test, so that it skips before a server starts."""
    home = peer("5.3.3")
    user_home = str(tmp_path_factory.mktemp("mqadmin-home"))

    def run(*argv):
        env = dict(os.environ, JAVA_TOOL_OPTIONS="-Duser.home=%s" % user_home)
        done = subprocess.run([os.path.join(home, "mqadmin.sh"), *argv], capture_output=True, text=True,
                              timeout=120, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout
    return run


def ours(*argv):
    status, out, err = admin(*argv)
    assert (status, err) == (0, ""), err
    return out


def test_metadata_and_sync_state_sets_print_the_same(mqadmin, fleet):   # noqa: F811
    a, n = fleet["a"], fleet["n"]
    assert mqadmin("getControllerMetaData", "-a", a) == ours("getControllerMetaData", "-a", a)
    assert mqadmin("getSyncStateSet", "-a", a, "-b", "broker-a") == ours("getSyncStateSet", "-a", a, "-b", "broker-a")
    java = mqadmin("getSyncStateSet", "-a", a, "-c", "ClusterA", "-n", n)
    assert sorted(java.split("\n#brokerName")) == sorted(ours("getSyncStateSet", "-a", a, "-c", "ClusterA", "-n", n)
                                                         .split("\n#brokerName"))


def test_configuration_read_and_update(mqadmin, fleet):   # noqa: F811
    a = fleet["a"]
    java = mqadmin("getControllerConfig", "-a", a).splitlines()
    mine = ours("getControllerConfig", "-a", a).splitlines()
    assert java[0] == mine[0] and sorted(java[1:]) == sorted(mine[1:])
    assert mqadmin("updateControllerConfig", "-a", a, "-k", "scanInactiveMasterInterval", "-v", "7000") == \
        "update controller config success![%s]\nscanInactiveMasterInterval : 7000\n" % a
    assert "%-50s=  %s" % ("scanInactiveMasterInterval", "7000") in ours("getControllerConfig", "-a", a).splitlines()


def test_broker_epoch_prints_the_same(mqadmin, fleet):   # noqa: F811
    n = fleet["n"]
    assert mqadmin("getBrokerEpoch", "-b", "broker-e", "-n", n) == ours("getBrokerEpoch", "-b", "broker-e", "-n", n)


def test_elect_and_clean_from_mqadmin_change_what_namesrv_admin_reads(mqadmin, fleet):   # noqa: F811
    a = fleet["a"]
    before = ours("--json", "getSyncStateSet", "-a", a, "-b", "broker-c")
    master = 1 if '"masterBrokerId": 2' in before else 2
    java = mqadmin("electMaster", "-a", a, "-c", "ClusterA", "-bn", "broker-c", "-b", str(master))
    address = fleet["brokers"][("broker-c", master)].address
    assert java.splitlines()[:4] == ["", "#ClusterName\tClusterA", "#BrokerName\tbroker-c",
                                     "#BrokerMasterAddr\t%s" % address]
    assert "#MasterBrokerId\t%d" % master in ours("getSyncStateSet", "-a", a, "-b", "broker-c").splitlines()
    assert mqadmin("cleanBrokerMetadata", "-a", a, "-bn", "broker-d", "-c", "ClusterA", "-l") == \
        "clear broker broker-d metadata from controller success! \n"
    assert ours("--json", "getSyncStateSet", "-a", a, "-b", "broker-d") == "{}\n"
