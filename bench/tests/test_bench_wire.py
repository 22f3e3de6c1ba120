"""The benchmark's own frames and bodies, checked against the server's codec and decoders."""

import struct

from twisted.internet.testing import StringTransport

from bench.lib import brokers
from bench.lib.baseline import FixedAnswerFactory
from bench.lib.wire import FrameTemplate, frame_opaque, percentile, route_request, scan_frames
from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import SerializeType
from namesrv.routes.bodies.decode import decode_register_broker_body


def test_template_patches_the_opaque():
    template = FrameTemplate(route_request("TopicA"))
    frame = template.frame(1234567890)
    request = decode_frame(frame[4:])
    assert request.opaque == 1234567890
    assert request.ext == {"topic": "TopicA"}
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4


def test_scanner_finds_opaque_and_success_in_both_header_types():
    request = route_request("TopicA")
    request.opaque = 1000000007
    ok = encode_frame(request.make_response(0, body=b"{}"))
    request.serialize_type = SerializeType.ROCKETMQ
    missing = encode_frame(request.make_response(17, "no route"))
    found = list(scan_frames(ok + missing + ok[:10]))
    assert [(opaque, success) for opaque, success, _ in found] == [(1000000007, True), (1000000007, False)]
    assert found[-1][2] == len(ok) + len(missing)
    assert frame_opaque(missing, 0, len(missing)) == (1000000007, False)


def test_bodies_are_what_the_server_decodes():
    topics = brokers.topic_names("T", 3)
    for compressed in (False, True):
        body = brokers.register_body(topics, compressed, counter=5)
        decoded = decode_register_broker_body(body, compressed, 409)
        wrapper = decoded.topic_config_wrapper
        assert sorted(wrapper.topic_config_table) == topics
        assert wrapper.data_version.counter == 5
        assert wrapper.topic_config_table["T-000001"].read_queue_nums == 8
    assert brokers.parse_compressed(brokers.compressed_body(topics))[1]["T-000002"] == (8, 8, 6, "SINGLE_TAG")


def test_baseline_answers_each_request_with_its_own_opaque():
    protocol = FixedAnswerFactory(b'{"route":1}').buildProtocol(None)
    transport = StringTransport()
    protocol.makeConnection(transport)
    json_request = route_request("TopicA")
    json_request.opaque = 42
    binary_request = route_request("TopicB")
    binary_request.opaque = 1000000009
    binary_request.serialize_type = SerializeType.ROCKETMQ
    protocol.dataReceived(encode_frame(json_request) + encode_frame(binary_request))
    data = transport.value()
    first_length = struct.unpack_from(">i", data, 0)[0]
    first = decode_frame(data[4:4 + first_length])
    second = decode_frame(data[8 + first_length:])
    assert (first.opaque, first.code, first.is_response, first.body) == (42, 0, True, b'{"route":1}')
    assert (second.opaque, second.serialize_type, second.body) == (1000000009, SerializeType.ROCKETMQ, b'{"route":1}')


def test_percentile_is_nearest_rank():
    values = list(range(1, 101))
    assert percentile(values, 0.5) == 50
    assert percentile(values, 0.99) == 99
    assert percentile(values, 0.999) == 100
    assert percentile([], 0.5) is None
