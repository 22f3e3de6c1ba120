"""Every NameServer property with its Java name, type, default and meaning."""

import os
from dataclasses import dataclass

from namesrv.properties import format_properties, load_properties_file


class ConfigError(ValueError):
    """A property has a value of the wrong type; the message names file, key and value."""


@dataclass(frozen=True)
class Property:
    name: str
    type: type
    default: object
    description: str


def _home(*parts):
    return os.path.join("~", *parts)


#: Java's default (configBlackList;configStorePath;kvConfigPath) plus the security switches:
#: with ACL on, an admin must not be able to turn it off remotely.
DEFAULT_BLACK_LIST = ("configBlackList;configStorePath;kvConfigPath;aclEnable;aclFile;aclSignedClasses;"
                      "brokerAllowedAddresses;tlsMode;prometheusListenPort")

PROPERTIES = [
    # NamesrvConfig (4.9 and 5.x)
    Property("rocketmqHome", str, "", "RocketMQ installation directory (default: $ROCKETMQ_HOME); base of a relative aclFile"),
    Property("kvConfigPath", str, _home("namesrv", "kvConfig.json"), "KV config store file"),
    Property("configStorePath", str, _home("namesrv", "namesrv.properties"), "where UPDATE_NAMESRV_CONFIG persists; the -c file when given"),
    Property("productEnvName", str, "center", "cluster-test product environment name"),
    Property("clusterTest", bool, False, "cluster-test mode (not implemented; kept for compatibility)"),
    Property("orderMessageEnable", bool, False, "add orderTopicConf from the ORDER_TOPIC_CONFIG KV namespace to routes"),
    Property("configBlackList", str, DEFAULT_BLACK_LIST, "keys UPDATE_NAMESRV_CONFIG refuses (rocketmqHome always); Java's default plus our security keys"),
    Property("returnOrderTopicConfigToBroker", bool, True, "send the ORDER_TOPIC_CONFIG KV table in REGISTER_BROKER answers"),
    Property("clientRequestThreadPoolNums", int, 8, "Java route-query pool size (informational here)"),
    Property("defaultThreadPoolNums", int, 16, "Java default pool size (informational here)"),
    Property("clientRequestThreadPoolQueueCapacity", int, 50000, "Java route-query queue capacity (informational here)"),
    Property("defaultThreadPoolQueueCapacity", int, 10000, "Java default queue capacity (informational here)"),
    Property("scanNotActiveBrokerInterval", int, 10000, "ms between dead-broker scans (Java 5.x default 5000; 4.9 scans every 10 s)"),
    Property("unRegisterBrokerQueueCapacity", int, 3000, "Java unregister queue capacity (unregistration is immediate here)"),
    Property("supportActingMaster", bool, False, "show the smallest slave as read-only master when a master is gone"),
    Property("enableAllTopicList", bool, True, "allow GET_ALL_TOPIC_LIST_FROM_NAMESERVER"),
    Property("enableTopicList", bool, True, "allow GET_TOPICS_BY_CLUSTER and the unit topic lists"),
    Property("notifyMinBrokerIdChanged", bool, False, "notify brokers of min broker id changes (not sent)"),
    Property("enableControllerInNamesrv", bool, False, "embedded controller (not supported)"),
    Property("needWaitForService", bool, False, "refuse route queries during the start-up grace"),
    Property("waitSecondsForService", int, 45, "length of the start-up grace in seconds"),
    Property("deleteTopicWithBrokerRegistration", bool, False, "a master registration removes topics it no longer reports"),
    # NettyServerConfig
    Property("bindAddress", str, "127.0.0.1", "address to listen on (Java: 0.0.0.0)"),
    Property("listenPort", int, 9876, "TCP port"),
    Property("serverWorkerThreads", int, 8, "Java worker threads (informational here)"),
    Property("serverCallbackExecutorThreads", int, 0, "Java callback threads (informational here)"),
    Property("serverSelectorThreads", int, 3, "Java selector threads (informational here)"),
    Property("serverOnewaySemaphoreValue", int, 256, "Java oneway semaphore (informational here)"),
    Property("serverAsyncSemaphoreValue", int, 64, "Java async semaphore (informational here)"),
    Property("serverChannelMaxIdleTimeSeconds", int, 120, "close connections idle this long"),
    Property("serverSocketSndBufSize", int, 0, "socket send buffer (0 = OS default)"),
    Property("serverSocketRcvBufSize", int, 0, "socket receive buffer (0 = OS default)"),
    Property("writeBufferHighWaterMark", int, 0, "Java write buffer high water mark (informational here)"),
    Property("writeBufferLowWaterMark", int, 0, "Java write buffer low water mark (informational here)"),
    Property("serverSocketBacklog", int, 1024, "listen backlog"),
    Property("serverPooledByteBufAllocatorEnable", bool, True, "Java buffer pooling (informational here)"),
    Property("useEpollNativeSelector", bool, False, "Java epoll selector (informational here)"),
    # ours
    Property("brokerChannelExpiredTime", int, 120000, "ms without heartbeat before a broker expires (when it sends no heartbeatTimeoutMillis)"),
    Property("maxFrameLength", int, 16777216, "largest frame accepted, length field included (Java frameMaxLength)"),
    Property("maxHeaderLength", int, 1048576, "largest frame header accepted (JSON or ROCKETMQ)"),
    Property("maxExtFields", int, 128, "most extFields one request may carry"),
    Property("maxRequestBodyLength", int, 1048576, "largest body of any request but REGISTER_BROKER (checked as soon as the header is in)"),
    Property("maxInflatedBodyLength", int, 67108864, "largest inflated size of a compressed REGISTER_BROKER body"),
    Property("serverReadFrameTimeoutSeconds", int, 60, "close a connection whose started frame is not complete after this long"),
    Property("serverMaxConnections", int, 10000, "connections above this are closed at once (0 = no limit)"),
    Property("serverSlowReaderTimeoutSeconds", int, 30, "disconnect a peer that has not read its answers for this long"),
    Property("routeSnapshotEnable", bool, True, "save and restore the route tables (warm restart)"),
    Property("routeSnapshotPath", str, _home("namesrv", "routeSnapshot.msgpack"), "route snapshot file"),
    Property("routeSnapshotInterval", int, 30, "seconds between route snapshots"),
    Property("eventLogEnable", bool, True, "write the structured event log"),
    Property("logDir", str, _home("logs", "rocketmqlogs"), "directory of the event log"),
    Property("eventLogPath", str, "", "event log file (empty: <logDir>/namesrv-events.log)"),
    Property("eventLogMaxBytes", int, 104857600, "rotate the event log at this size"),
    Property("eventLogBackups", int, 10, "rotated event log files kept"),
    Property("kvConfigPrintInterval", int, 600, "seconds between KV table prints to the log"),
    # security and operations (namesrv/security, namesrv/isolation.py, namesrv/metrics.py)
    Property("aclEnable", bool, False, "require signed requests (RocketMQ ACL 1.0) for aclSignedClasses"),
    Property("aclFile", str, "conf/plain_acl.yml", "credentials (Java plain_acl.yml format), relative to rocketmqHome; reloaded on change"),
    Property("aclSignedClasses", str, "adminWrite", "classes that must be signed: routeRead, brokerControl, adminRead, adminWrite or all"),
    Property("brokerAllowedAddresses", str, "", "IPs/CIDRs allowed to send broker-control requests (empty: anyone)"),
    Property("routeReadMaxInFlight", int, 50000, "route reads in flight before SYSTEM_BUSY (0 = unlimited)"),
    Property("brokerControlMaxInFlight", int, 10000, "broker-control requests in flight before SYSTEM_BUSY"),
    Property("brokerControlMaxInFlightBytes", int, 268435456, "broker-control request bodies held before SYSTEM_BUSY"),
    Property("adminReadMaxInFlight", int, 1000, "admin reads in flight before SYSTEM_BUSY"),
    Property("adminWriteMaxInFlight", int, 1000, "admin writes in flight before SYSTEM_BUSY"),
    Property("isolationSchedulerEnable", bool, True, "answer route reads first; run other classes in bounded turns"),
    Property("isolationTurnBudgetMillis", int, 5, "longest scheduler turn before the reactor gets control back"),
    Property("tlsMode", str, "disabled", "disabled, permissive (TLS and plain on one port) or enforcing"),
    Property("tlsServerCertPath", str, "", "PEM certificate chain (watched for changes)"),
    Property("tlsServerKeyPath", str, "", "PEM private key (watched for changes)"),
    Property("tlsServerKeyPasswordFile", str, "", "file holding the key's password"),
    Property("tlsServerNeedClientAuth", str, "none", "client certificates: none, optional or require"),
    Property("tlsServerTrustCertPath", str, "", "CA bundle for client certificates"),
    Property("tlsTestModeEnable", bool, False, "self-signed certificate when no paths are set (tests only)"),
    Property("prometheusListenPort", int, 0, "Prometheus metrics HTTP port (0 = off), bound to bindAddress"),
    Property("fileWatchIntervalMillis", int, 500, "how often the ACL and TLS files are checked for changes"),
]

_BY_NAME = {p.name: p for p in PROPERTIES}
_PATHS = {"kvConfigPath", "configStorePath", "routeSnapshotPath", "logDir", "eventLogPath"}


def parse_value(prop, text):
    """Parse like the Java setters, but refuse what does not parse (Java silently ignores it)."""
    text = text.strip()
    if prop.type is bool:
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise ValueError("not a boolean (true/false)")
        return lowered == "true"
    if prop.type is int:
        return int(text)
    return text


class NamesrvConfig:
    def __init__(self):
        values = {p.name: p.default for p in PROPERTIES}
        values["rocketmqHome"] = os.environ.get("ROCKETMQ_HOME", "")
        values.update({name: os.path.expanduser(values[name]) for name in _PATHS if values[name]})
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_extras", {})
        object.__setattr__(self, "_listeners", [])

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(name)

    def __setattr__(self, name, value):
        raise AttributeError("use update() to change %s" % name)

    def names(self):
        return sorted(set(self._values) | set(self._extras))

    def get(self, name):
        if name in self._values:
            return self._values[name]
        return self._extras.get(name)

    def add_listener(self, callback):
        self._listeners.append(callback)

    def black_list(self):
        listed = {k.strip() for k in self.configBlackList.split(";") if k.strip()}
        return listed | {"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"}

    def update(self, mapping, source="update"):
        parsed, extras = {}, {}
        for key, text in mapping.items():
            prop = _BY_NAME.get(key)
            if prop is None:
                extras[key] = str(text)
                continue
            try:
                value = parse_value(prop, str(text))
            except ValueError as e:
                raise ConfigError("%s: bad value %r for %s (%s): %s"
                                  % (source, text, key, prop.type.__name__, e))
            if key in _PATHS and value:
                value = os.path.expanduser(value)
            parsed[key] = value
        changes = {}
        for key, value in parsed.items():
            old = self._values[key]
            self._values[key] = value
            if old != value:
                changes[key] = (old, value)
        for key, value in extras.items():
            old = self._extras.get(key)
            self._extras[key] = value
            if old != value:
                changes[key] = (old, value)
        for key, (old, new) in changes.items():
            for listener in list(self._listeners):
                listener(key, old, new)
        return changes

    def load_file(self, path):
        mapping = load_properties_file(path)
        unknown = [key for key in mapping if key not in _BY_NAME]
        mapping = dict(mapping)
        mapping["configStorePath"] = os.path.abspath(path)  # as Java's NamesrvStartup: the -c file wins
        self.update(mapping, source=path)
        return unknown

    def to_properties_text(self):
        items = [(name, self.get(name)) for name in self.names()]
        return format_properties((k, java_text(v)) for k, v in items if v is not None)

    def event_log_path(self):
        if self.eventLogPath:
            return self.eventLogPath
        return os.path.join(self.logDir, "namesrv-events.log")


def java_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
