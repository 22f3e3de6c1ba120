"""Every implementation of a seam, real or fake, provides the whole interface it claims."""

from twisted.internet.testing import StringTransport
from zope.interface.verify import verifyObject

from namesrv.observe.eventlog import EventLog, NullEventLog
from namesrv.interfaces import IEventLog, IRemotingConnection
from namesrv.protocol.remoting import RemotingProtocol
from tests.fakes import FakeConnection, RecordingEventLog


def test_the_real_connection_and_its_fake_provide_iremotingconnection():
    proto = RemotingProtocol(dispatcher=None)
    proto.makeConnection(StringTransport())
    assert verifyObject(IRemotingConnection, proto) and proto.closing is False
    fake = FakeConnection()
    assert verifyObject(IRemotingConnection, fake) and fake.closing is False
    fake.close()
    assert fake.closing and fake.closed


def test_both_event_logs_and_the_test_recorder_provide_ieventlog(tmp_path):
    assert verifyObject(IEventLog, EventLog(str(tmp_path / "events.log"), "127.0.0.1:9876"))
    assert verifyObject(IEventLog, NullEventLog())
    assert verifyObject(IEventLog, RecordingEventLog())


def test_the_null_event_log_writes_nothing_but_its_listeners_hear_every_event():
    heard = []
    events = NullEventLog()
    events.add_listener(lambda event, fields: 1 / 0)   # a failing listener is logged, never raised
    events.add_listener(lambda event, fields: heard.append((event, fields)))
    events.start()
    events.emit("broker_expired", brokerAddr="127.0.0.1:10911")
    events.record_requests(105, 0, 3, 10, "127.0.0.1:1")
    events.flush_aggregates(force=True)
    events.stop()
    assert heard == [("broker_expired", {"brokerAddr": "127.0.0.1:10911"})]
    assert events.written == 0 and events.dropped == 0
