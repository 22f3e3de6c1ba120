import struct

import pytest

from namesrv.protocol.codec import (
    FrameDecodeError, decode_frame, encode_frame, encode_json_header, encode_rocketmq_header)
from namesrv.protocol.codes import LanguageCode, RequestCode, SerializeType
from namesrv.protocol.command import HeaderFieldError, RemotingCommand, make_request
from tests.vectors import vector, vector_names


@pytest.mark.parametrize("name", vector_names())
def test_every_captured_frame_decodes_and_reencodes_byte_for_byte(name):
    frame = vector(name)
    command = decode_frame(frame[4:])
    assert encode_frame(command) == frame


def test_rocketmq_route_request_fields():
    command = decode_frame(vector("req_route_rocketmq")[4:])
    assert command.serialize_type == SerializeType.ROCKETMQ
    assert (command.code, command.version, command.opaque, command.flag) == (105, 409, 2002, 0)
    assert command.language == LanguageCode.JAVA
    assert command.ext == {"topic": "VecTopicA"}
    assert command.remark is None and command.body is None


def test_slave_answer_has_master_addresses_in_ext():
    command = decode_frame(vector("resp_register_slave_rocketmq")[4:])
    assert command.is_response
    assert command.ext == {"haServerAddr": "127.0.0.1:10912", "masterAddr": "127.0.0.1:10911"}


def test_json_header_matches_fastjson_layout():
    response = make_request(105, {"topic": "T"}, opaque=7).make_response(17, "no route")
    header = encode_json_header(response).decode()
    assert header.startswith('{"code":17,"flag":1,"language":"JAVA","opaque":7,"remark":"no route",')
    assert '"extFields"' not in header
    assert encode_json_header(response.with_changes(ext={})).decode().startswith('{"code":17,"extFields":{},')


def test_json_header_tolerates_other_clients():
    header = b'{"opaque":5,"code":105,"language":"GO","extFields":{"topic":"T","n":3,"b":true},"extra":1}'
    frame = struct.pack(">i", len(header)) + header
    command = decode_frame(frame)
    assert command.code == 105 and command.opaque == 5 and command.version == 0
    assert command.language == LanguageCode.GO
    assert command.ext == {"topic": "T", "n": "3", "b": "true"}


def test_unknown_language_name_is_other():
    header = b'{"code":1,"language":"COBOL"}'
    assert decode_frame(struct.pack(">i", len(header)) + header).language == LanguageCode.OTHER


@pytest.mark.parametrize("header", [
    b'not json', b'[1,2]', b'{"flag":0}', b'{"code":"x"}', b'{"code":1,"extFields":[1]}',
    b'{"code":1e40}', b'{"code":1,"opaque":99999999999}', b'\xff\xfe',
])
def test_bad_json_headers_are_decode_errors(header):
    with pytest.raises(FrameDecodeError):
        decode_frame(struct.pack(">i", len(header)) + header)


def test_header_longer_than_frame():
    with pytest.raises(FrameDecodeError, match="bad header length"):
        decode_frame(struct.pack(">i", 50) + b"{}")


def test_unknown_serialize_type():
    with pytest.raises(FrameDecodeError, match="serialize type"):
        decode_frame(struct.pack(">i", (2 << 24) | 2) + b"{}")


def test_rocketmq_roundtrip_with_remark_and_unicode():
    command = RemotingCommand(code=RequestCode.PUT_KV_CONFIG, opaque=-3, flag=2, remark="héllo",
                              ext={"namespace": "ns", "key": "ключ", "value": "v"}, body=b"xyz",
                              serialize_type=SerializeType.ROCKETMQ)
    decoded = decode_frame(encode_frame(command)[4:])
    assert decoded == command


def test_rocketmq_empty_strings_decode_as_absent():
    command = RemotingCommand(code=1, ext={"a": "", "b": "x"}, serialize_type=SerializeType.ROCKETMQ)
    decoded = decode_frame(encode_frame(command)[4:])
    assert decoded.ext == {"b": "x"} and decoded.remark is None


@pytest.mark.parametrize("mutate", [
    lambda h: h[:10],                                   # truncated fixed part
    lambda h: h[:13] + struct.pack(">i", 1000) + h[17:],  # remark longer than header
    lambda h: h[:17] + struct.pack(">i", 5000) + h[21:],  # ext longer than header
    lambda h: h[:21] + struct.pack(">h", 300) + h[23:],   # key longer than ext
])
def test_bad_rocketmq_headers_are_decode_errors(mutate):
    good = encode_rocketmq_header(RemotingCommand(code=105, ext={"topic": "T"}))
    header = mutate(good)
    with pytest.raises(FrameDecodeError):
        decode_frame(struct.pack(">i", (1 << 24) | len(header)) + header)


def test_rocketmq_code_wraps_like_a_java_short():
    command = RemotingCommand(code=40000, serialize_type=SerializeType.ROCKETMQ)
    assert decode_frame(encode_frame(command)[4:]).code == 40000 - 65536


def test_header_field_helpers():
    request = make_request(103, {"brokerId": "x1", "compressed": "TRUE", "empty": "", "n": " 12 "})
    with pytest.raises(HeaderFieldError, match=r"<brokerId> is not a number"):
        request.get_int("brokerId")
    with pytest.raises(HeaderFieldError, match=r"the custom field <brokerName> is null"):
        request.require("brokerName")
    with pytest.raises(HeaderFieldError, match=r"<empty> is null"):
        request.require("empty")
    assert request.get_bool("compressed") is True
    assert request.get_int("n") == 12
    assert make_request(1, {"x": True, "y": 3}).ext == {"x": "true", "y": "3"}
