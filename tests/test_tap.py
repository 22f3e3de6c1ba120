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


def test_no_options_gives_the_property_table_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))   # no runtime overlay of this machine's
    config = parsed()["config"]
    assert config.listenPort == 9876 and config.bindAddress == "127.0.0.1"
    assert config.scanNotActiveBrokerInterval == 10000 and config.orderMessageEnable is False


def test_config_file_is_applied_and_becomes_the_store_for_updates(tmp_path):
    path = write(tmp_path / "namesrv.properties", "listenPort=9877\norderMessageEnable=true\n")
    config = parsed("-c", path)["config"]
    assert config.listenPort == 9877 and config.orderMessageEnable is True
    assert config.configStorePath == os.path.abspath(path)
    assert parsed("--configFile", path)["config"].listenPort == 9877


def test_listen_port_and_host_win_over_the_file(tmp_path):
    path = write(tmp_path / "namesrv.properties", "listenPort=9877\nbindAddress=127.0.0.2\n")
    config = parsed("-c", path, "--listenPort", "9999", "--host", "127.0.0.3")["config"]
    assert config.listenPort == 9999 and config.bindAddress == "127.0.0.3"


def refused(capsys, *argv):
    """The one line a refused start prints (and its exit status 1)."""
    with pytest.raises(SystemExit) as caught:
        parsed(*argv)
    assert caught.value.code == 1
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and not captured.out, captured
    assert "Traceback" not in captured.err and "Usage" not in captured.err
    return lines[0]


def test_a_listen_port_that_is_not_a_number_is_one_line_naming_the_property(capsys):
    assert refused(capsys, "--listenPort", "nine") == \
        "namesrv: refusing to start: command line: bad value 'nine' for listenPort (int): not an integer"


def test_a_listen_port_beyond_a_java_int_is_one_line_naming_the_key(capsys):
    assert "listenPort" in refused(capsys, "--listenPort", str(2 ** 31))


def test_a_port_outside_0_to_65535_is_refused_before_anything_binds(tmp_path, capsys):
    path = write(tmp_path / "p.properties", "listenPort=99999\n")
    assert refused(capsys, "-c", path) == ("namesrv: refusing to start: %s: bad value '99999' for listenPort (int): "
                                           "not a TCP port (0-65535)" % path)
    assert "statusListenPort" in refused(capsys, "--statusListenPort", "70000")


def test_a_missing_file_is_one_line_naming_it(tmp_path, capsys):
    missing = str(tmp_path / "nowhere.properties")
    line = refused(capsys, "-c", missing)
    assert "nowhere.properties" in line and "No such file or directory" in line


def test_a_bad_value_in_the_file_is_one_line_naming_file_and_key(tmp_path, capsys):
    path = write(tmp_path / "bad.properties", "orderMessageEnable=yes\n")
    assert refused(capsys, "-c", path) == ("namesrv: refusing to start: %s: bad value 'yes' for orderMessageEnable "
                                           "(boolean): not a boolean (true or false)" % path)


def test_a_misspelt_key_is_refused_with_the_property_it_meant(tmp_path, capsys):
    path = write(tmp_path / "typo.properties", "listenport=9877\n")
    assert refused(capsys, "-c", path) == ("namesrv: refusing to start: %s: unknown property listenport: did you "
                                           "mean listenPort? (names are case-sensitive, as in Java)" % path)


def test_print_config_item_warns_about_unknown_keys_and_prints_properties_only(tmp_path, capsys):
    path = write(tmp_path / "n.properties", "listenport=9877\nmyOwnKey=1\nclientWorkerThreads=4\n")
    with pytest.raises(SystemExit) as caught:
        parsed("-c", path, "-p")
    assert caught.value.code == 0
    captured = capsys.readouterr()
    keys = [line.split("=", 1)[0] for line in captured.out.splitlines()]
    assert "listenPort" in keys and not {"listenport", "myOwnKey", "clientWorkerThreads"} & set(keys)
    warnings = captured.err.splitlines()
    assert len(warnings) == 3 and all(line.startswith("namesrv: warning: ") for line in warnings)
    assert "did you mean listenPort?" in warnings[0]


def test_a_bad_value_with_print_is_one_line_too(tmp_path, capsys):
    path = write(tmp_path / "bad.properties", "listenPort=x\n")
    with pytest.raises(SystemExit) as caught:
        parsed("-c", path, "-p")
    assert caught.value.code == 1
    assert capsys.readouterr().err.startswith("namesrv: %s: bad value 'x' for listenPort" % path)


def test_unknown_keys_in_the_file_are_kept_as_extras(tmp_path):
    path = write(tmp_path / "namesrv.properties", "clientWorkerThreads=4\n")
    assert parsed("-c", path)["config"].extras() == {"clientWorkerThreads": "4"}


def test_print_config_item_prints_every_property_and_exits(tmp_path, capsys):
    path = write(tmp_path / "namesrv.properties", "listenPort=9877\n")
    with pytest.raises(SystemExit) as caught:
        parsed("-c", path, "-p")
    assert caught.value.code == 0
    out = capsys.readouterr().out
    comments = [line for line in out.splitlines() if line.startswith("#")]
    lines = [line for line in out.splitlines() if not line.startswith("#")]
    assert "listenPort=9877" in lines and "orderMessageEnable=false" in lines
    assert lines == sorted(lines) and out.startswith("\n".join(comments))   # the origins come first
    assert not any("=" in line for line in comments)                         # `"=" in line` keeps the pairs


def test_make_service_refuses_a_corrupt_kv_file_with_a_message(tmp_path, capsys, monkeypatch):
    """Refused for its KV file, whatever else runs on this machine: the other files under a HOME of its own, no
    fixed port (port 9876, or the real HOME's default route snapshot, may be another server's)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    kv = tmp_path / "kvConfig.json"
    kv.write_bytes(b"{not json")
    path = write(tmp_path / "namesrv.properties", "kvConfigPath=%s\neventLogEnable=false\nlistenPort=0\n" % kv)
    with pytest.raises(SystemExit) as caught:
        tap.makeService(parsed("-c", path))
    assert caught.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("namesrv: refusing to start: ") and str(kv) in err, err
    assert kv.read_bytes() == b"{not json"
