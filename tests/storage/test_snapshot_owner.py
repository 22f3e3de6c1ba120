"""Whose route snapshot a start restores (namesrv/storage/instance.py, snapshotfile.py): this instance's on the
same port, whatever address it binds now; not another instance's, nor its own from another port, and the line
that says so names what differs, in plain words."""

from twisted.internet.task import Clock
from twisted.logger import Logger, formatEvent

from namesrv.routes import RouteInfoManager
from namesrv.storage.instance import InstanceIdentity
from namesrv.storage.snapshotfile import RouteSnapshotFile
from tests.fakes import FakeConnection, run_turns, turn_scheduler
from tests.routes.helpers import register

ID = "5d85b82c0a6f4e7e9d1c2b3a4f5e6d7c"


def written_by(tmp_path, owner):
    routes = RouteInfoManager(clock=Clock())
    register(routes, "Kept", "Other", name="broker-a", addr="127.0.0.1:10911", conn=FakeConnection(), base_topic=False)
    path = str(tmp_path / "routes.snapshot")
    clock = Clock()
    RouteSnapshotFile(path, routes, clock, turn_scheduler(clock), owner=owner).save_now()
    return path


def restored_by(path, owner):
    """(restored?, the tables, the lines logged) of a start as ``owner`` on ``path``."""
    routes = RouteInfoManager(clock=Clock())
    lines = []
    clock = Clock()
    snapshots = RouteSnapshotFile(path, routes, clock, turn_scheduler(clock), owner=owner)
    snapshots.log = Logger(observer=lambda event: lines.append(formatEvent(event)))
    done = snapshots.restore()
    run_turns(clock)
    snapshots.release_baseline()
    return done, routes, lines


def test_the_same_instance_binding_another_address_on_its_port_keeps_its_routes(tmp_path):
    path = written_by(tmp_path, InstanceIdentity(ID, "127.0.0.1:9876"))
    done, routes, lines = restored_by(path, InstanceIdentity(ID, "0.0.0.0:9876"))
    assert done and "broker-a" in routes.broker_addr_table
    assert lines == ["route snapshot %s: written while this instance listened on 127.0.0.1:9876, restored on "
                     "0.0.0.0:9876 (the same port: its brokers register here)" % path] + lines[1:]


def test_the_same_instance_on_another_port_says_plainly_why_it_starts_empty(tmp_path):
    path = written_by(tmp_path, InstanceIdentity(ID, "127.0.0.1:9876"))
    done, routes, lines = restored_by(path, InstanceIdentity(ID, "127.0.0.1:9877"))
    assert not done and routes.broker_addr_table == {}
    (line,) = lines
    assert line.startswith("route snapshot %s ignored, starting empty: this instance wrote it while listening on "
                           "port 9876, and listens on port 9877 now" % path)
    assert ID not in line     # no id named twice, as if two instances differed


def test_another_instances_snapshot_is_named_as_anothers(tmp_path):
    path = written_by(tmp_path, InstanceIdentity("another", "127.0.0.1:9876"))
    done, routes, lines = restored_by(path, InstanceIdentity(ID, "127.0.0.1:9876"))
    assert not done and routes.broker_addr_table == {}
    (line,) = lines
    assert "it was written by another instance (another, listening on 127.0.0.1:9876; this one is %s" % ID in line
    assert line.count(ID) == 1


def test_a_takeover_still_asks_for_the_very_same_address():
    me = InstanceIdentity(ID, "127.0.0.1:9876")
    assert me.owns({"instance": ID, "listen": "127.0.0.1:9876"})
    assert not me.owns({"instance": ID, "listen": "0.0.0.0:9876"})
    assert me.may_restore({"instance": ID, "listen": "0.0.0.0:9876"})
    assert me.may_restore({"instance": ID, "listen": "[::1]:9876"}) and not me.may_restore(None)
