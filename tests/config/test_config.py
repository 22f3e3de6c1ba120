import os

import pytest

from namesrv.config import PROPERTIES, ConfigError, NamesrvConfig, property_named
from namesrv.config.confgen import render
from namesrv.config.properties import parse_properties

#: Field names of the Java classes (read from NamesrvConfig.java / NettyServerConfig.java).
JAVA_4_9 = ("rocketmqHome kvConfigPath configStorePath productEnvName clusterTest orderMessageEnable configBlackList "
            "listenPort serverWorkerThreads serverCallbackExecutorThreads serverSelectorThreads "
            "serverOnewaySemaphoreValue serverAsyncSemaphoreValue serverChannelMaxIdleTimeSeconds "
            "serverSocketSndBufSize serverSocketRcvBufSize writeBufferHighWaterMark writeBufferLowWaterMark "
            "serverSocketBacklog serverPooledByteBufAllocatorEnable useEpollNativeSelector").split()
JAVA_5_X = JAVA_4_9 + ("returnOrderTopicConfigToBroker clientRequestThreadPoolNums defaultThreadPoolNums "
                       "clientRequestThreadPoolQueueCapacity defaultThreadPoolQueueCapacity "
                       "scanNotActiveBrokerInterval unRegisterBrokerQueueCapacity supportActingMaster "
                       "enableAllTopicList enableTopicList notifyMinBrokerIdChanged enableControllerInNamesrv "
                       "needWaitForService waitSecondsForService deleteTopicWithBrokerRegistration bindAddress "
                       "serverNettyWorkerGroupEnable enableShutdownGracefully shutdownWaitTimeSeconds").split()


def test_defaults():
    config = NamesrvConfig()
    assert config.listenPort == 9876 and config.bindAddress == "127.0.0.1"
    assert config.serverChannelMaxIdleTimeSeconds == 120
    assert config.orderMessageEnable is False and config.returnOrderTopicConfigToBroker is True
    assert config.kvConfigPath == os.path.expanduser("~/namesrv/kvConfig.json")
    assert config.routeSnapshotPath == os.path.expanduser("~/namesrv/routeSnapshot.msgpack")
    assert config.waitSecondsForService == 45 and config.enableAllTopicList is True
    assert config.scanNotActiveBrokerInterval == 10000 and config.brokerChannelExpiredTime == 120000
    assert config.maxFrameLength == 16777216 and config.kvConfigPrintInterval == 600
    assert config.eventLogMaxBytes == 104857600 and config.eventLogBackups == 10


def test_every_java_field_is_a_property():
    names = set(NamesrvConfig().names())
    assert set(JAVA_5_X) <= names
    assert property_named("scanNotActiveBrokerInterval").kind == "long"
    assert all(p.description and "\n" not in p.description for p in PROPERTIES)
    assert len({p.name for p in PROPERTIES}) == len(PROPERTIES)


def test_rocketmq_home_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("ROCKETMQ_HOME", "/opt/rocketmq")
    config = NamesrvConfig()
    assert config.rocketmqHome == "/opt/rocketmq"
    config.update({"rocketmqHome": ""})  # as the generated conf file says: empty means the environment
    assert config.rocketmqHome == "/opt/rocketmq"
    monkeypatch.delenv("ROCKETMQ_HOME")
    assert NamesrvConfig().rocketmqHome == ""  # unset: we start anyway (Java exits)


def test_load_file_applies_types_keeps_unknown_keys_and_sets_config_store_path(tmp_path):
    path = tmp_path / "n.properties"
    path.write_text("listenPort=19876\norderMessageEnable=TRUE\nmyCustomKey=x\nkvConfigPath= /tmp/kv.json \n"
                    "routeSnapshotPath=~/snap\n")
    config = NamesrvConfig()
    assert config.load_file(str(path)) == ["myCustomKey"]
    assert config.listenPort == 19876 and config.orderMessageEnable is True
    assert config.kvConfigPath == "/tmp/kv.json"
    assert config.routeSnapshotPath == os.path.expanduser("~/snap")
    assert config.configStorePath == str(path)
    assert "myCustomKey" in config and config.get("myCustomKey") == "x"
    assert "myCustomKey=x\n" in config.to_properties_text()


@pytest.mark.parametrize("content, key", [
    ("listenPort=1234\nserverChannelMaxIdleTimeSeconds=soon\n", "serverChannelMaxIdleTimeSeconds"),
    ("listenPort=1234\nserverSocketBacklog=1_024\n", "serverSocketBacklog"),
    ("listenPort=1234\nserverWorkerThreads=0x10\n", "serverWorkerThreads"),
    ("listenPort=1234\nlistenPort=2147483648\n", "listenPort"),            # beyond a Java int
    ("listenPort=1234\nscanNotActiveBrokerInterval=9223372036854775808\n", "scanNotActiveBrokerInterval"),
    ("listenPort=1234\nclusterTest=yes\n", "clusterTest"),
])
def test_malformed_value_refuses_naming_file_key_value_and_changes_nothing(tmp_path, content, key):
    path = tmp_path / "bad.properties"
    path.write_text(content)
    config = NamesrvConfig()
    with pytest.raises(ConfigError) as info:
        config.load_file(str(path))
    message = str(info.value)
    assert "bad.properties" in message and key in message and content.split("=")[-1].strip() in message
    assert config.listenPort == 9876 and config.configStorePath.endswith("namesrv.properties")
    assert "bad.properties" not in config.configStorePath


def test_unreadable_or_unparseable_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="absent.properties"):
        NamesrvConfig().load_file(str(tmp_path / "absent.properties"))
    path = tmp_path / "escape.properties"
    path.write_text("productEnvName=\\u12\n")
    with pytest.raises(ConfigError, match="escape.properties.*uxxxx"):
        NamesrvConfig().load_file(str(path))


def test_java_style_values_are_accepted():
    config = NamesrvConfig()
    config.update({"orderMessageEnable": " True ", "listenPort": "+10911 ", "productEnvName": "  prod  ",
                   "scanNotActiveBrokerInterval": "9000000000"})
    assert config.orderMessageEnable is True and config.listenPort == 10911
    assert config.productEnvName == "prod" and config.scanNotActiveBrokerInterval == 9000000000


def test_update_is_all_or_nothing():
    config = NamesrvConfig()
    with pytest.raises(ConfigError, match="UPDATE.*'often'.*waitSecondsForService"):
        config.update({"orderMessageEnable": "true", "waitSecondsForService": "often", "extra": "1"},
                      source="UPDATE")
    assert config.orderMessageEnable is False and "extra" not in config


def test_update_notifies_listeners_of_changes_only_after_applying():
    config = NamesrvConfig()
    seen = []

    def broken(name, old, new):
        raise RuntimeError("a broken listener must not stop the others")

    config.add_listener(broken)
    config.add_listener(lambda name, old, new: seen.append((name, old, new, config.get(name))))
    changes = config.update({"orderMessageEnable": "true", "listenPort": "9876", "custom": "v"})
    assert changes == {"orderMessageEnable": (False, True), "custom": (None, "v")}
    assert sorted(seen) == [("custom", None, "v", "v"), ("orderMessageEnable", False, True, True)]


def test_attributes_are_read_only():
    config = NamesrvConfig()
    with pytest.raises(AttributeError):
        config.listenPort = 1
    with pytest.raises(AttributeError):
        config.noSuchProperty


def test_black_list_always_holds_java_hard_coded_keys():
    config = NamesrvConfig()
    assert {"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome", "aclEnable"} <= config.black_list()
    config.update({"configBlackList": " listenPort ;; "})
    assert config.black_list() == {"listenPort", "configBlackList", "configStorePath", "kvConfigPath",
                                   "rocketmqHome"}


def test_print_is_sorted_and_reads_back_to_the_same_values(tmp_path):
    config = NamesrvConfig()
    config.update({"productEnvName": "C:\\prod été", "zzExtra": "1"})
    text = config.to_properties_text()
    lines = text.splitlines()
    assert [line.split("=")[0] for line in lines] == sorted(config.names())
    assert "listenPort=9876" in lines and "clusterTest=false" in lines and "zzExtra=1" in lines
    path = tmp_path / "printed.properties"
    path.write_text(text)
    again = NamesrvConfig()
    assert again.load_file(str(path)) == ["zzExtra"]
    assert all(again.get(n) == config.get(n) for n in config.names() if n != "configStorePath")


def test_event_log_path():
    config = NamesrvConfig()
    assert config.event_log_path() == os.path.join(os.path.expanduser("~/logs/rocketmqlogs"), "namesrv-events.log")
    config.update({"eventLogPath": "~/ev.log"})
    assert config.event_log_path() == os.path.expanduser("~/ev.log")


SHIPPED = os.path.join(os.path.dirname(__file__), "..", "..", "conf", "namesrv.properties")


def test_shipped_properties_file_is_generated_from_the_table():
    with open(SHIPPED) as f:
        assert f.read() == render(), "regenerate: python -m namesrv.config.confgen > conf/namesrv.properties"


def test_shipped_properties_file_lists_every_property_with_its_default():
    with open(SHIPPED) as f:
        text = f.read()
    listed = parse_properties(text)
    assert list(listed) == [p.name for p in PROPERTIES if not p.per_instance]
    for prop in PROPERTIES:
        assert "# %s%s\n%s%s=" % (prop.description, " (runtime)" if prop.runtime else "",
                                   "# (its default follows listenPort: set it only to move this instance's file)\n#"
                                   if prop.per_instance else "", prop.name) in text
    config, defaults = NamesrvConfig(), NamesrvConfig()
    assert config.load_file(SHIPPED) == []
    assert {n: config.get(n) for n in config.names() if n != "configStorePath"} == \
        {n: defaults.get(n) for n in defaults.names() if n != "configStorePath"}


@pytest.mark.parametrize("cpus, expected", [({0}, 0), ({0, 1}, 1), ({0, 1, 2, 3}, 3), ({5, 7}, 1)])
def test_route_read_workers_auto_is_one_fewer_than_the_usable_cpus(monkeypatch, cpus, expected):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(cpus))
    config = NamesrvConfig()
    assert property_named("routeReadWorkers").default == "auto"
    assert config.routeReadWorkers == expected and config.routeReadWorkersExclusive is True
    config.update({"routeReadWorkers": "2"})
    assert config.routeReadWorkers == 2
    config.update({"routeReadWorkers": " AUTO "})
    assert config.routeReadWorkers == expected
    assert "routeReadWorkers=%d" % expected in config.to_properties_text().splitlines()
    with pytest.raises(ConfigError, match="not an integer or auto"):
        config.update({"routeReadWorkers": "many"})


def test_default_files_carry_the_port_except_on_java_port_and_stay_once_pinned():
    from namesrv.config import instance_path
    assert instance_path("/n/kvConfig.json", 9876) == "/n/kvConfig.json"
    assert instance_path("/n/kvConfig.json", 9877) == "/n/kvConfig-9877.json"
    config = NamesrvConfig()
    java = config.kvConfigPath, config.routeSnapshotPath, config.configStorePath, config.event_log_path()
    config.update({"listenPort": "10001"})
    assert config.kvConfigPath.endswith("kvConfig-10001.json") and config.instance_id_path().endswith(".json.instance")
    assert config.routeSnapshotPath.endswith("routeSnapshot-10001.msgpack")
    assert config.configStorePath.endswith("namesrv-10001.properties")
    assert config.event_log_path().endswith("namesrv-events-10001.log")
    config.update({"routeSnapshotPath": "/s/mine.snapshot", "listenPort": "9876"})
    assert (config.kvConfigPath, config.configStorePath) == java[0::2]
    assert config.routeSnapshotPath == "/s/mine.snapshot" and config.event_log_path() == java[3]
    config.pin_instance_paths()
    config.update({"listenPort": "10002"})
    assert config.kvConfigPath == java[0]


def test_instance_id_is_made_once_and_kept(tmp_path):
    from namesrv.storage.instance import InstanceIdentity, load_instance_id
    path = str(tmp_path / "kv.json.instance")
    first = load_instance_id(path)
    assert load_instance_id(path) == first and len(first) == 32
    me = InstanceIdentity(first, "127.0.0.1:9876")
    assert me.owns(me.as_record())
    assert not me.owns({"instance": first, "listen": "127.0.0.1:9877"}) and not me.owns(None)


def test_a_copy_of_the_template_with_another_port_writes_files_of_its_own(tmp_path):
    """The template leaves every per-instance path to its default, so a copy with only listenPort
    changed is an instance of its own (issue 39: the copy used to share the 9876 instance's files)."""
    copy = tmp_path / "second.properties"
    with open(SHIPPED) as f:
        copy.write_text(f.read().replace("\nlistenPort=9876\n", "\nlistenPort=9886\n"))
    first, second = NamesrvConfig(), NamesrvConfig()
    first.load_file(SHIPPED)
    second.load_file(str(copy))
    assert second.listenPort == 9886
    for name in ("kvConfigPath", "routeSnapshotPath"):
        assert first.get(name) != second.get(name)
        assert "-9886." in second.get(name)
    assert first.event_log_path() != second.event_log_path()


def test_a_port_outside_0_to_65535_is_refused_naming_the_key():
    config = NamesrvConfig()
    for name in ("listenPort", "statusListenPort", "prometheusListenPort"):
        with pytest.raises(ConfigError, match="%s.*not a TCP port" % name):
            config.update({name: "99999"})
        with pytest.raises(ConfigError, match=name):
            config.update({name: "-1"})
    config.update({"listenPort": "0", "statusListenPort": "65535"})
    assert (config.listenPort, config.statusListenPort) == (0, 65535)


def test_a_value_with_a_trailing_comment_is_refused_with_what_to_do(tmp_path):
    path = tmp_path / "c.properties"
    path.write_text("prometheusListenPort=28080 # the port the list is served on\n")
    with pytest.raises(ConfigError) as caught:
        NamesrvConfig().load_file(str(path))
    message = str(caught.value)
    assert "prometheusListenPort=28080 # the port" in message and "line of its own" in message
    path.write_text("controllerDLegerSelfId=n0                 # this name server's controller\n")
    with pytest.raises(ConfigError, match="controllerDLegerSelfId"):
        NamesrvConfig().load_file(str(path))
    path.write_text("# a comment line\ncontrollerDLegerSelfId=n0#1\n")   # no blank before '#': a value
    config = NamesrvConfig()
    config.load_file(str(path))
    assert config.controllerDLegerSelfId == "n0#1"


def test_unknown_keys_are_kept_quietly_and_explained(tmp_path):
    path = tmp_path / "k.properties"
    path.write_text("listenport=9877\nclientWorkerThreads=4\nmyOwnKey=x\nkvConfigPth=/tmp/kv.json\n")
    config = NamesrvConfig()
    changes = []
    config.add_listener(lambda *change: changes.append(change))
    unknown = config.load_file(str(path))
    assert unknown == ["listenport", "clientWorkerThreads", "myOwnKey", "kvConfigPth"]
    assert [name for name, _, _ in changes] == ["configStorePath"]   # extras are no change
    assert config.extras() == {"listenport": "9877", "clientWorkerThreads": "4", "myOwnKey": "x",
                               "kvConfigPth": "/tmp/kv.json"}
    refusals, notes = config.unknown_keys(unknown, "k.properties")
    assert refusals == [
        "k.properties: unknown property listenport: did you mean listenPort? (names are case-sensitive, as in Java)",
        "k.properties: unknown property kvConfigPth: did you mean kvConfigPath?"]
    assert notes == ["k.properties: clientWorkerThreads is read by the Java NameServer only: kept, unused here",
                     "k.properties: unknown property myOwnKey: kept (GET_NAMESRV_CONFIG lists it, as Java's does), "
                     "unused"]


def test_a_renamed_property_is_refused_naming_its_new_name():
    """An old file's isolationTurnBudgetMillis would otherwise be kept and silently unused."""
    refusals, notes = NamesrvConfig().unknown_keys(["isolationTurnBudgetMillis"], "old.properties")
    assert refusals == ["old.properties: isolationTurnBudgetMillis is now called schedulerTurnBudgetMillis: "
                        "use that name"]
    assert notes == []


def test_properties_text_without_extras_lists_the_properties_only(tmp_path):
    config = NamesrvConfig()
    config.update({"myOwnKey": "x"})
    assert "myOwnKey=x" in config.to_properties_text().splitlines()
    lines = config.to_properties_text(extras=False).splitlines()
    assert "myOwnKey=x" not in lines and len(lines) == len(PROPERTIES)


REFERENCE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "properties.md")


def test_the_property_reference_is_generated_from_the_table():
    from namesrv.config.reference import SECTIONS, render
    with open(REFERENCE) as f:
        assert f.read() == render(), "regenerate: python -m namesrv.config.reference > docs/properties.md"
    assert set(SECTIONS) <= {p.name for p in PROPERTIES}


def test_the_property_reference_lists_every_property_once():
    with open(REFERENCE) as f:
        text = f.read()
    for prop in PROPERTIES:
        assert text.count("\n| `%s` |" % prop.name) == 1, prop.name


def test_texts_are_every_value_as_java_prints_it_and_follow_every_change(tmp_path):
    """The read workers' copy of the properties is built once per change: after an update, a port change (the
    per-instance paths follow it) and a file's unknown keys, it is what the values print as then."""
    from namesrv.config import java_text

    def plain(config):
        return {name: java_text(config.get(name)) for name in config.names()}

    config = NamesrvConfig()
    texts = config.texts()
    assert texts == plain(config) and config.texts() is texts
    config.update({"orderMessageEnable": "true"})
    assert config.texts()["orderMessageEnable"] == "true" and config.texts() == plain(config)
    config.update({"listenPort": "19877"})
    assert config.texts() == plain(config) and "19877" in config.texts()["kvConfigPath"]
    path = tmp_path / "n.properties"
    path.write_text("myCustomKey=x\n")
    config.load_file(str(path))
    assert config.texts()["myCustomKey"] == "x" and config.texts() == plain(config)


def test_the_tables_follow_the_java_classes():
    """A Java maintainer finds NamesrvConfig's, NettyServerConfig's and ControllerConfig's fields each in the
    module named after the class; ours hold none of them."""
    from namesrv.config.controllerconfig import CONTROLLER_CONFIG
    from namesrv.config.namesrvconfig import NAMESRV_CONFIG
    from namesrv.config.nettyserverconfig import NETTY_SERVER_CONFIG
    from namesrv.config.ours import OURS
    names = lambda table: {p.name for p in table}  # noqa: E731
    assert {"kvConfigPath", "orderMessageEnable", "enableControllerInNamesrv"} <= names(NAMESRV_CONFIG)
    assert {"listenPort", "bindAddress", "serverWorkerThreads"} <= names(NETTY_SERVER_CONFIG)
    assert {"controllerDLegerPeers", "scanInactiveMasterInterval"} <= names(CONTROLLER_CONFIG)
    java = names(NAMESRV_CONFIG) | names(NETTY_SERVER_CONFIG) | names(CONTROLLER_CONFIG)
    assert not names(OURS) & java
    assert [p.name for p in PROPERTIES] == [p.name for p in NAMESRV_CONFIG + CONTROLLER_CONFIG
                                            + NETTY_SERVER_CONFIG + OURS]


def test_an_informational_property_set_away_from_its_default_is_warned_about_at_start(tmp_path):
    from twisted.logger import globalLogPublisher

    from namesrv.startup import configure
    path = tmp_path / "namesrv.properties"
    path.write_text("serverWorkerThreads=32\nlistenPort=9999\nclientRequestThreadPoolNums=8\n")
    seen = []
    globalLogPublisher.addObserver(seen.append)
    try:
        config = configure("namesrv", str(path))
    finally:
        globalLogPublisher.removeObserver(seen.append)
    assert config.informational_settings() == [("serverWorkerThreads", "32")]
    warned = [event for event in seen if event.get("name") is not None]
    assert [(event["name"], event["text"]) for event in warned] == [("serverWorkerThreads", "32")]
