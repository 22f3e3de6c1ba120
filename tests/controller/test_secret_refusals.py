"""Every refusal about the controllers' shared secret (controllerPeerSecretFile) says what to do, as every
other refusal to start does: not set, missing or unreadable, too short."""

import pytest

from namesrv.config import NamesrvConfig
from namesrv.controller.service import ControllerConfigError, peer_secret

PEERS = {"n0": "127.0.0.1:9878", "n1": "127.0.0.1:9888", "n2": "127.0.0.1:9898"}


def refusal(**properties):
    config = NamesrvConfig()
    config.update(properties, announce=False)
    with pytest.raises(ControllerConfigError) as refused:
        peer_secret(config, PEERS)
    return str(refused.value)


def test_a_secret_file_that_is_not_there_is_refused_with_the_fix(tmp_path):
    missing = tmp_path / "controller.secret"
    assert refusal(controllerPeerSecretFile=str(missing)) == (
        "controllerPeerSecretFile=%s cannot be read (No such file or directory): correct the path, or give every "
        "member the same secret file (e.g. head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE), readable by "
        "the user that runs the name server" % missing)


@pytest.mark.parametrize("case", ["not set", "unreadable", "too short"])
def test_every_secret_refusal_says_how_to_make_one(tmp_path, case):
    if case == "not set":
        text = refusal()
    elif case == "unreadable":
        (tmp_path / "a-directory").mkdir()
        text = refusal(controllerPeerSecretFile=str(tmp_path / "a-directory"))
    else:
        short = tmp_path / "short.secret"
        short.write_text("too short")
        text = refusal(controllerPeerSecretFile=str(short))
    assert "head -c 32 /dev/urandom | base64 > FILE" in text and "every member" in text, text
