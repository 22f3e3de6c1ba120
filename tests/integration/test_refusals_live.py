"""A refusal over a real socket: the broker reads why, and the operator's log says it once."""

from namesrv.protocol.codes import ResponseCode
from tests.brokers import register_request


def test_single_topic_first_registration_explains_itself_and_is_logged_once(namesrv):
    with namesrv.client() as broker:
        for _ in range(3):
            answer = broker.call(register_request("C", "broker-one", "127.0.0.1:10911", topics=["Lonely"]))
            assert answer.code == ResponseCode.SYSTEM_ERROR
            assert answer.remark.startswith("register broker failed: broker broker-one id 0 at 127.0.0.1:10911 is "
                                            "not registered here and sent a registration with a single topic")
            assert "its next full registration (within 30 s) is accepted" in answer.remark
    namesrv.stop()
    log = namesrv.log()
    assert log.count("got SYSTEM_ERROR to REGISTER_BROKER: register broker failed: broker broker-one") == 1
