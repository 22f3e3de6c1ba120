"""The ACL 1.0 signature: our validator accepts what the Java AclClientRPCHook signs, and nothing else."""

import base64
import hashlib
import hmac
import os
import random
import shutil
import string
import subprocess

import pytest

from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode, SerializeType
from namesrv.protocol.command import make_request
from namesrv.security.signature import (
    calculate_signature, sign_request_ext, signature_matches, signed_content,
)

HERE = os.path.dirname(os.path.abspath(__file__))


def java_hook_signature(ext, body, secret):
    """The algorithm written out independently of the module under test: TreeMap order, values, body, HmacSHA1."""
    keys = sorted((k for k in ext if k != "Signature"), key=lambda k: [ord(c) for c in k.encode("utf-16-be").decode("latin-1")])
    content = "".join(ext[k] for k in keys).encode("utf-8") + (body or b"")
    return base64.b64encode(hmac.new(secret.encode(), content, hashlib.sha1).digest()).decode()


def test_vector_computed_by_java():
    # `java AclSignCheck 12345678 - namespace=ns key=k value=v AccessKey=RocketMQ` (tests/security/AclSignCheck.java)
    ext = sign_request_ext({"namespace": "ns", "key": "k", "value": "v"}, None, "RocketMQ", "12345678")
    assert ext["Signature"] == "o9N72JxoU4ePBhe7vIjrQgZfrrM="
    assert ext["AccessKey"] == "RocketMQ"


def test_content_is_values_in_java_key_order_then_body():
    ext = {"b": "2", "AccessKey": "AK", "a": "1", "Signature": "ignored", "Z": "z"}
    # Java String order: uppercase before lowercase; Signature left out.
    assert signed_content(ext, b"BODY") == b"AKz12BODY"


def test_java_order_differs_from_code_point_order_above_the_bmp():
    # U+FFFD sorts after a surrogate pair in Java (UTF-16 units), before it by code point.
    ext = {"\ufffd": "A", "\U0001F600": "B"}
    assert signed_content(ext, None) == b"BA"


@pytest.mark.parametrize("body", [None, b"", b"\x00\x01binary\xff", "ünïcödé".encode()])
def test_hook_signature_verifies_and_matches_an_independent_computation(body):
    ext = {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicA", "value": "broker-a:4;broker-b:4"}
    signed = sign_request_ext(ext, body, "rocketmq2", "secret-12345", security_token="tok")
    assert signed["SecurityToken"] == "tok"
    assert signed["Signature"] == java_hook_signature(signed, body, "secret-12345")
    assert signature_matches(signed, body, 409, "secret-12345")


@pytest.mark.parametrize("tamper", ["value", "body", "secret", "extra_field", "drop_field", "signature"])
def test_any_tampering_is_refused(tamper):
    body = b'{"x":1}'
    signed = sign_request_ext({"key": "k", "value": "v"}, body, "rocketmq2", "secret-12345")
    secret = "secret-12345"
    if tamper == "value":
        signed["value"] = "w"
    elif tamper == "body":
        body = b'{"x":2}'
    elif tamper == "secret":
        secret = "secret-12346"
    elif tamper == "extra_field":
        signed["namespace"] = "n"
    elif tamper == "drop_field":
        del signed["key"]
    elif tamper == "signature":
        signed["Signature"] = signed["Signature"][:-2] + "A="
    assert not signature_matches(signed, body, 409, secret)


def test_missing_or_empty_signature_is_refused():
    assert not signature_matches({"AccessKey": "ak"}, None, 409, "secret-12345")
    assert not signature_matches({"AccessKey": "ak", "Signature": ""}, None, 409, "secret-12345")
    assert not signature_matches(None, None, 409, "secret-12345")


def test_unique_key_query_flag_is_unsigned_only_for_clients_up_to_4_9_3():
    ext = {"topic": "t", "AccessKey": "ak"}
    old = dict(ext, Signature=calculate_signature(signed_content(ext, None), "secret-12345"),
               _UNIQUE_KEY_QUERY="true")
    assert signature_matches(old, None, 400, "secret-12345")      # V4_9_3 added it after signing
    assert not signature_matches(old, None, 401, "secret-12345")  # newer clients sign it
    new = sign_request_ext(dict(ext, _UNIQUE_KEY_QUERY="true"), None, "ak", "secret-12345")
    assert signature_matches(new, None, 401, "secret-12345")


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_signature_survives_the_wire_in_both_header_encodings(serialize_type):
    body = b"some body"
    ext = sign_request_ext({"namespace": "ns", "key": "k", "value": "v"}, body, "rocketmq2", "secret-12345")
    request = make_request(RequestCode.PUT_KV_CONFIG, ext, body=body, serialize_type=serialize_type)
    decoded = decode_frame(encode_frame(request)[4:])
    assert signature_matches(decoded.ext, decoded.body, decoded.version, "secret-12345")
    assert not signature_matches(decoded.ext, decoded.body, decoded.version, "secret-99999")


@pytest.mark.skipif(shutil.which("javac") is None or shutil.which("java") is None, reason="needs a JDK")
def test_random_requests_match_a_java_program(tmp_path):
    """Compile tests/security/AclSignCheck.java (javax.crypto + TreeMap, as the Java hook) and compare."""
    shutil.copy(os.path.join(HERE, "AclSignCheck.java"), tmp_path)
    subprocess.run(["javac", "AclSignCheck.java"], cwd=tmp_path, check=True, timeout=120)
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + "_-:;., é中\U0001F600\ufffd"
    env = dict(os.environ, LC_ALL="C.UTF-8", LANG="C.UTF-8")
    cases = [({"\ufffd": "A", "\U0001F600": "B", "brokerName": "b", "Zone": "z"}, b"\x00body")]
    for _ in range(6):
        ext = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))):
               "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(1, 6))}
        ext = {k: v for k, v in ext.items() if "=" not in k}
        body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))) or None
        cases.append((ext, body))
    for ext, body in cases:
        secret = "".join(rng.choice(alphabet) for _ in range(10))
        signed = sign_request_ext(ext, body, "AK" + secret, secret)
        args = ["java", "-Dsun.jnu.encoding=UTF-8", "-Dfile.encoding=UTF-8", "-cp", str(tmp_path), "AclSignCheck",
                secret, body.hex() if body else "-"]
        args += ["%s=%s" % (k, v) for k, v in signed.items() if k != "Signature"]
        out = subprocess.run(args, capture_output=True, check=True, env=env, timeout=60).stdout.decode().strip()
        assert out == signed["Signature"], (ext, body)
