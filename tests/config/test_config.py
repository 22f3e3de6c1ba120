import os

import pytest

from namesrv.config import PROPERTIES, ConfigError, NamesrvConfig
from namesrv.confgen import render


def test_defaults_match_the_java_nameserver():
    config = NamesrvConfig()
    assert config.listenPort == 9876
    assert config.serverChannelMaxIdleTimeSeconds == 120
    assert config.orderMessageEnable is False
    assert config.kvConfigPath == os.path.expanduser("~/namesrv/kvConfig.json")
    assert config.waitSecondsForService == 45 and config.enableAllTopicList is True


def test_every_key_java_4_9_8_reports_is_present():
    # the keys the captured GET_NAMESRV_CONFIG answer of a 4.9.8 server listed (shared/vectors/README.md)
    java = ("clusterTest configBlackList configStorePath kvConfigPath listenPort orderMessageEnable productEnvName "
            "rocketmqHome serverAsyncSemaphoreValue serverCallbackExecutorThreads serverChannelMaxIdleTimeSeconds "
            "serverOnewaySemaphoreValue serverPooledByteBufAllocatorEnable serverSelectorThreads serverSocketBacklog "
            "serverSocketRcvBufSize serverSocketSndBufSize serverWorkerThreads useEpollNativeSelector "
            "writeBufferHighWaterMark writeBufferLowWaterMark").split()
    assert set(java) <= set(NamesrvConfig().names())


def test_load_file_applies_types_keeps_unknown_keys_and_sets_config_store_path(tmp_path):
    path = tmp_path / "n.properties"
    path.write_text("listenPort=19876\norderMessageEnable=TRUE\nmyCustomKey=x\nkvConfigPath= /tmp/kv.json \n")
    config = NamesrvConfig()
    assert config.load_file(str(path)) == ["myCustomKey"]
    assert config.listenPort == 19876 and config.orderMessageEnable is True
    assert config.kvConfigPath == "/tmp/kv.json"
    assert config.configStorePath == str(path)
    assert "myCustomKey=x\n" in config.to_properties_text()


def test_malformed_value_refuses_and_changes_nothing(tmp_path):
    path = tmp_path / "bad.properties"
    path.write_text("listenPort=1234\nserverChannelMaxIdleTimeSeconds=soon\n")
    config = NamesrvConfig()
    with pytest.raises(ConfigError, match=r"bad\.properties.*'soon'.*serverChannelMaxIdleTimeSeconds"):
        config.load_file(str(path))
    assert config.listenPort == 9876


def test_bad_boolean_is_an_error():
    with pytest.raises(ConfigError, match="orderMessageEnable"):
        NamesrvConfig().update({"orderMessageEnable": "yes"})


def test_update_notifies_listeners_of_changes_only():
    config = NamesrvConfig()
    seen = []
    config.add_listener(lambda *change: seen.append(change))
    changes = config.update({"orderMessageEnable": "true", "listenPort": "9876"})
    assert changes == {"orderMessageEnable": (False, True)}
    assert seen == [("orderMessageEnable", False, True)]


def test_black_list_always_holds_java_hard_coded_keys():
    config = NamesrvConfig()
    config.update({"configBlackList": "listenPort"})
    assert config.black_list() == {"listenPort", "configBlackList", "configStorePath", "kvConfigPath",
                                   "rocketmqHome"}


def test_print_is_sorted_key_value_lines():
    lines = NamesrvConfig().to_properties_text().splitlines()
    assert lines == sorted(lines) and "listenPort=9876" in lines and "clusterTest=false" in lines


def test_shipped_properties_file_lists_every_property_with_its_default():
    shipped = os.path.join(os.path.dirname(__file__), "..", "..", "conf", "namesrv.properties")
    with open(shipped) as f:
        assert f.read() == render(), "regenerate: python -m namesrv.confgen > conf/namesrv.properties"
    config = NamesrvConfig()
    unknown = config.load_file(shipped)
    assert unknown == []
    assert {p.name for p in PROPERTIES} <= set(config.names())
