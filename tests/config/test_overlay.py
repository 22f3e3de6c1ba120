"""The runtime overlay: applied after the -c file at start, holding runtime keys only, and ``-p`` naming where
each value came from (namesrv/config/overlay.py, origins.py, namesrv/startup)."""

import re

import pytest

from namesrv import tap
from namesrv.config import PROPERTIES, ConfigError, NamesrvConfig
from namesrv.config.origins import COMMAND_LINE, CONFIG_FILE, DEFAULT, OVERLAY
from namesrv.config.properties import parse_properties


def start_config(tmp_path, c_text, overlay_text=None):
    """A -c file in ``tmp_path`` whose KV store (and so the overlay) is there too."""
    c_file = tmp_path / "namesrv.properties"
    c_file.write_text("kvConfigPath=%s\n%s" % (tmp_path / "kv.json", c_text))
    if overlay_text is not None:
        (tmp_path / "namesrv-runtime.properties").write_text(overlay_text)
    return str(c_file)


def parsed(*argv):
    options = tap.Options()
    options.parseOptions(list(argv))
    return options["config"]


def test_the_overlay_is_applied_after_the_c_file(tmp_path):
    c_file = start_config(tmp_path, "orderMessageEnable=false\nwaitSecondsForService=10\n",
                          "orderMessageEnable=true\nserverMaxConnections=64\n")
    config = parsed("-c", c_file, "--statusListenPort", "0")
    assert config.orderMessageEnable is True and config.serverMaxConnections == 64
    assert config.waitSecondsForService == 10
    assert [config.origin(key) for key in ("orderMessageEnable", "waitSecondsForService", "statusListenPort",
                                           "serverMaxConnections", "enableTopicList")] == \
        [OVERLAY, CONFIG_FILE, COMMAND_LINE, OVERLAY, DEFAULT]
    assert config.replaced_origin("orderMessageEnable") == CONFIG_FILE


@pytest.mark.parametrize("line", ["listenPort=9999", "kvConfigPath=/tmp/elsewhere.json", "aclEnable=false",
                                  "controllerDLegerPeers=n0-6.6.6.6:666", "myExtra=1"])
def test_a_hand_edited_overlay_with_a_key_that_is_not_runtime_refuses_the_start(tmp_path, capsys, line):
    c_file = start_config(tmp_path, "", "orderMessageEnable=true\n%s\n" % line)
    with pytest.raises(SystemExit) as caught:
        parsed("-c", c_file)
    assert caught.value.code == 1
    err = capsys.readouterr().err
    key = line.split("=")[0]
    assert err.count("\n") == 1 and err.startswith("namesrv: refusing to start: runtimeConfigPath %s: %s is "
                                                   % (tmp_path / "namesrv-runtime.properties", key))
    assert err.endswith("so it cannot be in the runtime overlay: set it in the -c file and delete its line here\n")


def test_a_bad_value_in_the_overlay_refuses_naming_the_file(tmp_path, capsys):
    c_file = start_config(tmp_path, "", "scanNotActiveBrokerInterval=often\n")
    with pytest.raises(SystemExit):
        parsed("-c", c_file)
    assert "namesrv-runtime.properties: bad value 'often' for scanNotActiveBrokerInterval" in capsys.readouterr().err


def test_print_names_where_each_value_came_from_and_stays_a_properties_file(tmp_path, capsys):
    c_file = start_config(tmp_path, "orderMessageEnable=false\nlistenPort=9876\n", "orderMessageEnable=true\n")
    with pytest.raises(SystemExit) as caught:
        parsed("-c", c_file, "--host", "127.0.0.1", "-p")
    assert caught.value.code == 0
    out = capsys.readouterr().out
    comments = [line for line in out.splitlines() if line.startswith("#")]
    assert comments == [
        "# effective configuration: the defaults, then the -c file, then the command line, then the runtime overlay",
        "# from the -c file %s:" % c_file,
        "#   configStorePath, kvConfigPath, listenPort",
        "# from the command line:",
        "#   bindAddress",
        "# from the runtime overlay %s:" % (tmp_path / "namesrv-runtime.properties"),
        "#   orderMessageEnable (over the -c file's value)",
        "# every other key has its default"]
    printed = parse_properties(out)
    assert printed["orderMessageEnable"] == "true" and set(printed) == {p.name for p in PROPERTIES}


def test_the_overlay_holds_what_the_network_changed_and_reads_back(tmp_path):
    config = NamesrvConfig()
    config.update({"kvConfigPath": str(tmp_path / "kv.json")})
    config.update({"enableTopicList": "false", "routeReadMaxInFlight": "100"}, origin=OVERLAY)
    text = config.overlay.text()
    assert text.startswith("# The runtime overlay of one name server")
    assert parse_properties(text) == {"enableTopicList": "false", "routeReadMaxInFlight": "100"}
    (tmp_path / "namesrv-runtime.properties").write_text(text)
    again = NamesrvConfig()
    again.update({"kvConfigPath": str(tmp_path / "kv.json")})
    assert again.load_overlay() == [] and again.enableTopicList is False and again.routeReadMaxInFlight == 100


def test_no_overlay_file_is_no_change(tmp_path):
    config = NamesrvConfig()
    config.update({"runtimeConfigPath": str(tmp_path / "absent.properties")})
    assert config.load_overlay() == [] and config.names_from(OVERLAY) == []


def test_an_unreadable_overlay_is_one_line(tmp_path):
    config = NamesrvConfig()
    config.update({"runtimeConfigPath": str(tmp_path)})   # a directory
    with pytest.raises(ConfigError, match="runtimeConfigPath %s cannot be read" % tmp_path):
        config.load_overlay()


def test_no_runtime_property_is_a_path_a_port_or_a_secret():
    """What a runtime key's value may be is written to the event log and the overlay as it is."""
    for prop in PROPERTIES:
        if prop.runtime:
            assert not (prop.path or prop.port or prop.per_instance), prop.name
            words = {word.lower() for word in re.findall("[A-Z]?[a-z]+", prop.name)}
            assert not words & {"secret", "password", "key", "acl", "tls", "peers", "addr", "addresses", "path",
                                "port", "dir", "file", "home"}, prop.name
