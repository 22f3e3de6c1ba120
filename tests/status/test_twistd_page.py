"""The page served by a real `twistd namesrv` over HTTP on 127.0.0.1, ACL on."""

import base64
import urllib.error
import urllib.request

import pytest

from namesrv.protocol.codes import ResponseCode
from tests.brokers import register_request
from tests.integration.server import NamesrvProcess, free_port

ACL = """
accounts:
  - accessKey: watcher
    secretKey: watcher-secret
"""


def fetch(port, path, user=None, password=None):
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path))
    if user is not None:
        token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        request.add_header("Authorization", "Basic " + token)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.status, answer.read().decode()


def test_page_asks_for_admin_read_credentials(tmp_path):
    (tmp_path / "acl.yml").write_text(ACL)
    port = free_port()
    server = NamesrvProcess(tmp_path, {"statusListenPort": str(port), "aclEnable": "true",
                                       "aclFile": str(tmp_path / "acl.yml"), "aclSignedClasses": "adminRead"}).start()
    try:
        with server.client() as broker:
            answer = broker.call(register_request("C1", "broker-a", "127.0.0.1:10911", 0, ["TopicA", "TopicB"]))
            assert answer.code == ResponseCode.SUCCESS
            with pytest.raises(urllib.error.HTTPError) as refused:
                fetch(port, "/")
            assert refused.value.code == 401
            assert refused.value.headers["WWW-Authenticate"].startswith('Basic realm="RocketMQ NameServer status"')
            with pytest.raises(urllib.error.HTTPError) as wrong:
                fetch(port, "/", "watcher", "not-the-secret")
            assert wrong.value.code == 401
            status, text = fetch(port, "/fragment/brokers", "watcher", "watcher-secret")
            assert status == 200 and 'data-addr="127.0.0.1:10911"' in text
            with pytest.raises(urllib.error.HTTPError) as post:
                urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/" % port, data=b"x"), timeout=10)
            assert post.value.code == 405   # read-only: GET (and HEAD) only
    finally:
        server.stop()
    assert "Traceback" not in server.log()
