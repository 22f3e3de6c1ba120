"""``namesrv.tap``: the ``twistd namesrv`` options and makeService, in-process.

The twistd subprocess tests (tests/integration/test_twistd.py) prove the same paths end to
end; these pin each option's meaning without starting a process.
"""

import os

import pytest
from twisted.python import usage

from namesrv import tap


def parsed(*argv):
    options = tap.Options()
    options.parseOptions(list(argv))
    return options


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_no_options_gives_the_property_table_defaults():
    config = parsed().config
    assert config.listenPort == 9876 and config.bindAddress == "127.0.0.1"
    assert config.scanNotActiveBrokerInterval == 10000 and config.orderMessageEnable is False


def test_config_file_is_applied_and_becomes_the_store_for_updates(tmp_path):
    path = write(tmp_path / "namesrv.properties", "listenPort=9877\norderMessageEnable=true\n")
    config = parsed("-c", path).config
    assert config.listenPort == 9877 and config.orderMessageEnable is True
    assert config.configStorePath == os.path.abspath(path)
    assert parsed("--configFile", path).config.listenPort == 9877


def test_listen_port_and_host_win_over_the_file(tmp_path):
    path = write(tmp_path / "namesrv.properties", "listenPort=9877\nbindAddress=127.0.0.2\n")
    config = parsed("-c", path, "--listenPort", "9999", "--host", "127.0.0.3").config
    assert config.listenPort == 9999 and config.bindAddress == "127.0.0.3"


def test_a_listen_port_that_is_not_a_number_is_a_usage_error():
    with pytest.raises(usage.UsageError):
        parsed("--listenPort", "nine")


def test_a_listen_port_beyond_a_java_int_is_a_usage_error_naming_the_key():
    with pytest.raises(usage.UsageError, match="listenPort"):
        parsed("--listenPort", str(2 ** 31))


def test_a_missing_file_is_a_usage_error_naming_it(tmp_path):
    missing = str(tmp_path / "nowhere.properties")
    with pytest.raises(usage.UsageError, match="nowhere.properties"):
        parsed("-c", missing)


def test_a_bad_value_in_the_file_is_a_usage_error_naming_file_and_key(tmp_path):
    path = write(tmp_path / "bad.properties", "listenPort=98x6\n")
    with pytest.raises(usage.UsageError) as caught:
        parsed("-c", path)
    assert "bad.properties" in str(caught.value) and "listenPort" in str(caught.value)


def test_unknown_keys_in_the_file_are_kept_as_extras(tmp_path):
    path = write(tmp_path / "namesrv.properties", "clientWorkerThreads=4\n")
    assert parsed("-c", path).config.extras() == {"clientWorkerThreads": "4"}


def test_print_config_item_prints_every_property_and_exits(tmp_path, capsys):
    path = write(tmp_path / "namesrv.properties", "listenPort=9877\n")
    with pytest.raises(SystemExit) as caught:
        parsed("-c", path, "-p")
    assert caught.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert "listenPort=9877" in lines and "orderMessageEnable=false" in lines
    assert lines == sorted(lines)


def test_make_service_refuses_a_corrupt_kv_file_with_a_message(tmp_path, capsys):
    kv = tmp_path / "kvConfig.json"
    kv.write_bytes(b"{not json")
    path = write(tmp_path / "namesrv.properties", "kvConfigPath=%s\neventLogEnable=false\n" % kv)
    with pytest.raises(SystemExit) as caught:
        tap.makeService(parsed("-c", path))
    assert caught.value.code == 1
    assert "refusing to start" in capsys.readouterr().err
    assert kv.read_bytes() == b"{not json"
