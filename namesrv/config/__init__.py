"""Every NameServer property with its Java name, type, default and meaning, and the live config.

Names are the Java field names of NamesrvConfig and NettyServerConfig (4.9 and 5.x), so an
existing ``namesrv.config.properties`` keeps working; our own additions follow the same style.
Where Java parses a bad value silently (``Integer.parseInt`` failing leaves the default,
``Boolean.parseBoolean("yes")`` is false), we refuse it with a message naming the key:
a typo must not quietly change behaviour.
"""

import os
import re
from dataclasses import dataclass

from twisted.logger import Logger

from namesrv.config.keys import JAVA_ONLY_KEYS, RENAMED, inline_comment, suggestion
from namesrv.config.properties import PropertiesError, format_properties, load_properties_file

log = Logger()


class ConfigError(ValueError):
    """A property cannot be applied; the message names the source (file), the key and the value."""


@dataclass(frozen=True)
class Property:
    name: str
    kind: str           # Java type: "int", "long", "boolean" or "String"
    default: object
    description: str
    path: bool = False  # a file or directory: "~" is expanded
    auto: object = None  # for "auto": a function giving the value this machine should use
    per_instance: bool = False  # a default file path that carries the port (see instance_path)
    port: bool = False   # a TCP port: 0-65535

    @property
    def type(self):
        return {"int": int, "long": int, "boolean": bool, "String": str}[self.kind]


def Int(name, default, description):
    return Property(name, "int", default, description)


def Long(name, default, description):
    return Property(name, "long", default, description)


def Port(name, default, description):
    """A TCP port: an int Java would take, refused here outside 0-65535 before anything binds it."""
    return Property(name, "int", default, description, port=True)


def Bool(name, default, description):
    return Property(name, "boolean", default, description)


def AutoInt(name, default, description, auto):
    """An int that may also be given as ``auto``: resolved when parsed, so every reader (``-p``,
    GET_NAMESRV_CONFIG, the service) sees the number actually used."""
    return Property(name, "int", default, description, auto=auto)


def usable_cpus():
    """CPUs this process may run on (its affinity mask, as taskset or a container's cpuset sets it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_read_workers():
    """One read worker per usable CPU but one (the main process keeps a core); 0 on one CPU."""
    return max(0, usable_cpus() - 1)


def Str(name, default, description, path=False):
    return Property(name, "String", default, description, path)


def InstanceFile(name, default, description):
    """A file the server writes, whose default differs per listening port (instance_path)."""
    return Property(name, "String", default, description, path=True, per_instance=True)


#: the port whose instance keeps Java's default file names (a drop-in for one Java NameServer)
JAVA_PORT = 9876


def instance_path(path, port):
    """``path`` for the instance on ``port``: Java's name on 9876, ``name-<port>.ext`` elsewhere,
    so two instances on one host never share a default file (a KV store, a route snapshot)."""
    if not path or int(port) == JAVA_PORT:
        return path
    root, ext = os.path.splitext(path)
    return "%s-%d%s" % (root, int(port), ext)


def _home(*parts):
    return os.path.join("~", *parts)


#: Java's default (configBlackList;configStorePath;kvConfigPath) plus the security switches:
#: with ACL on, an admin must not be able to turn it off remotely.
DEFAULT_BLACK_LIST = ("configBlackList;configStorePath;kvConfigPath;aclEnable;aclFile;aclSignedClasses;"
                      "brokerAllowedAddresses;tlsMode;prometheusListenPort;addressServiceNamesrvAddr;"
                      "addressServiceSubgroups;controllerPeerSecretFile;controllerPeerAuthDisabled")

#: Always refused by UPDATE_NAMESRV_CONFIG, whatever configBlackList says (Java hard-codes these).
ALWAYS_BLACK_LISTED = frozenset(["configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"])

PROPERTIES = [
    # NamesrvConfig, 4.9 and 5.x
    Str("rocketmqHome", "", "RocketMQ installation directory (empty: $ROCKETMQ_HOME); base of a relative aclFile", path=True),
    InstanceFile("kvConfigPath", _home("namesrv", "kvConfig.json"), "KV config store file (default on a port other than 9876: kvConfig-<port>.json)"),
    InstanceFile("configStorePath", _home("namesrv", "namesrv.properties"), "where UPDATE_NAMESRV_CONFIG persists; the -c file when given (default on a port other than 9876: namesrv-<port>.properties)"),
    Str("productEnvName", "center", "cluster-test product environment name"),
    Bool("clusterTest", False, "cluster-test mode (not implemented; kept for compatibility)"),
    Bool("orderMessageEnable", False, "add orderTopicConf from the ORDER_TOPIC_CONFIG KV namespace to routes"),
    Str("configBlackList", DEFAULT_BLACK_LIST, "keys UPDATE_NAMESRV_CONFIG refuses (rocketmqHome always); Java's default plus our security keys"),
    # NamesrvConfig, 5.x only
    Bool("returnOrderTopicConfigToBroker", True, "send the ORDER_TOPIC_CONFIG KV table in REGISTER_BROKER answers (5.x)"),
    Int("clientRequestThreadPoolNums", 8, "Java 5.x route-query pool size (informational here)"),
    Int("defaultThreadPoolNums", 16, "Java 5.x default pool size (informational here)"),
    Int("clientRequestThreadPoolQueueCapacity", 50000, "Java 5.x route-query queue capacity (informational here)"),
    Int("defaultThreadPoolQueueCapacity", 10000, "Java 5.x default queue capacity (informational here)"),
    Long("scanNotActiveBrokerInterval", 10000, "ms between dead-broker scans (as 4.9's fixed 10 s; Java 5.x default 5000)"),
    Int("unRegisterBrokerQueueCapacity", 3000, "Java 5.x unregister queue capacity (unregistration is immediate here)"),
    Bool("supportActingMaster", False, "show the smallest slave as read-only master when a master is gone (5.x)"),
    Bool("enableAllTopicList", True, "allow GET_ALL_TOPIC_LIST_FROM_NAMESERVER (5.x)"),
    Bool("enableTopicList", True, "allow GET_TOPICS_BY_CLUSTER and the unit topic lists (5.x)"),
    Bool("notifyMinBrokerIdChanged", False, "notify brokers of min broker id changes (5.x; not sent here)"),
    Bool("enableControllerInNamesrv", False, "run the controller (RIP-44) inside this name server, on its address in controllerDLegerPeers (5.x)"),
    Bool("needWaitForService", False, "refuse route queries during the start-up grace (5.x)"),
    Int("waitSecondsForService", 45, "length of the start-up grace in seconds (5.x)"),
    Bool("deleteTopicWithBrokerRegistration", False, "a master registration removes topics it no longer reports (5.x)"),
    # ControllerConfig (5.x): the embedded controller (enableControllerInNamesrv) and `twistd controller`
    Str("controllerType", "DLedger", "DLedger: controllers listed in controllerDLegerPeers, replicated by Raft (pysyncobj, on the controller port); jRaft is refused"),
    Str("controllerDLegerGroup", "", "name of the controllers' group, as 1005 answers it"),
    Str("controllerDLegerPeers", "", "every controller as id-host:port;... (brokers' controllerAddr lists the same addresses)"),
    Str("controllerDLegerSelfId", "", "this controller's id in controllerDLegerPeers"),
    Str("controllerStorePath", "", "directory of the controller's state (empty: ~/DLedgerController, ~/DLedgerController-<port> on a port other than 9876); one controller keeps a JSON file, several a Raft journal", path=True),
    Long("scanInactiveMasterInterval", 5000, "ms between the leader's scans for groups whose master is gone"),
    Bool("enableElectUncleanMaster", False, "elect from every replica when no in-sync one is alive (may lose messages)"),
    Bool("notifyBrokerRoleChanged", True, "send NOTIFY_BROKER_ROLE_CHANGED to the group's live members after an election"),
    Int("electMasterMaxRetryCount", 3, "Java's retries of a controller-made election (informational here: an election commits or is refused)"),
    Bool("isProcessReadEvent", False, "reads (1004, 1006) commit an empty entry first, as Java's; off, the leader answers them under its lease, never from a state a newer leader may have changed"),
    Int("controllerThreadPoolNums", 16, "Java controller request pool size (informational here)"),
    Int("controllerRequestThreadPoolQueueCapacity", 50000, "Java controller request queue capacity (informational here)"),
    Int("mappedFileSize", 1073741824, "Java DLedger file size (informational here)"),
    Str("controllerPeerSecretFile", "", "file holding the controllers' shared secret (at least 16 bytes, the same on every member): members prove it to each other before any Raft message is read; required with several controllers", path=True),
    Bool("controllerPeerAuthDisabled", False, "let controllers join without the shared secret (a closed network only: anyone reaching a controller port could join); warned at every start"),
    Int("controllerRaftPortOffset", 1, "no longer used: controllers talk Raft on the controller port itself (kept so that older files load)"),
    # NettyServerConfig
    Str("bindAddress", "127.0.0.1", "address to listen on (Java 5.x: 0.0.0.0; 4.9 always every interface)"),
    Port("listenPort", 9876, "TCP port (0: any free port)"),
    Int("serverWorkerThreads", 8, "Java worker threads (informational here)"),
    Int("serverCallbackExecutorThreads", 0, "Java callback threads (informational here)"),
    Int("serverSelectorThreads", 3, "Java selector threads (informational here)"),
    Int("serverOnewaySemaphoreValue", 256, "Java oneway semaphore (informational here)"),
    Int("serverAsyncSemaphoreValue", 64, "Java async semaphore (informational here)"),
    Int("serverChannelMaxIdleTimeSeconds", 120, "close connections idle this long"),
    Int("serverSocketSndBufSize", 0, "socket send buffer (0 = OS default)"),
    Int("serverSocketRcvBufSize", 0, "socket receive buffer (0 = OS default)"),
    Int("writeBufferHighWaterMark", 0, "Java write buffer high water mark (informational here)"),
    Int("writeBufferLowWaterMark", 0, "Java write buffer low water mark (informational here)"),
    Int("serverSocketBacklog", 1024, "listen backlog"),
    Bool("serverNettyWorkerGroupEnable", True, "Java 5.x separate Netty worker group (informational here)"),
    Bool("serverPooledByteBufAllocatorEnable", True, "Java buffer pooling (informational here)"),
    Bool("enableShutdownGracefully", False, "Java 5.x graceful Netty shutdown (informational here)"),
    Int("shutdownWaitTimeSeconds", 30, "Java 5.x graceful shutdown wait (informational here)"),
    Bool("useEpollNativeSelector", False, "Java epoll selector (informational here)"),
    # ours
    Long("brokerChannelExpiredTime", 120000, "ms without heartbeat before a broker expires (when it sends no heartbeatTimeoutMillis)"),
    Int("maxFrameLength", 16777216, "largest frame accepted, length field included (Java frameMaxLength)"),
    Int("maxHeaderLength", 1048576, "largest frame header accepted (JSON or ROCKETMQ)"),
    Int("maxExtFields", 128, "most extFields one request may carry"),
    Int("maxRequestBodyLength", 1048576, "largest body of any request but REGISTER_BROKER (checked as soon as the header is in)"),
    Int("maxInflatedBodyLength", 67108864, "largest inflated size of a compressed REGISTER_BROKER body"),
    Int("serverReadFrameTimeoutSeconds", 60, "close a connection whose started frame is not complete after this long"),
    Int("serverMaxConnections", 10000, "connections above this are closed at once (0 = no limit)"),
    Int("serverSlowReaderTimeoutSeconds", 30, "disconnect a peer that has not read its answers for this long"),
    Bool("routeSnapshotEnable", True, "save and restore the route tables (warm restart)"),
    InstanceFile("routeSnapshotPath", _home("namesrv", "routeSnapshot.msgpack"), "route snapshot file (default on a port other than 9876: routeSnapshot-<port>.msgpack); restored only by the instance that wrote it"),
    Int("routeSnapshotInterval", 30, "seconds between route snapshots"),
    Bool("eventLogEnable", True, "write the structured event log"),
    Str("logDir", _home("logs", "rocketmqlogs"), "directory of the event log", path=True),
    Str("eventLogPath", "", "event log file (empty: <logDir>/namesrv-events.log, namesrv-events-<port>.log on a port other than 9876)", path=True),
    Long("eventLogMaxBytes", 104857600, "rotate the event log at this size"),
    Int("eventLogBackups", 10, "rotated event log files kept"),
    Int("kvConfigPrintInterval", 600, "seconds between KV table prints to the log"),
    Bool("answerCacheEnable", True, "replay whole answers to repeated route reads (off when ACL is on)"),
    Int("answerCacheMaxEntries", 262144, "most cached request frames; past it the oldest quarter goes"),
    Long("answerCacheMaxBytes", 67108864, "bytes the answer cache may hold (request keys, answer headers, each distinct body once); past it the oldest quarter goes"),
    Long("routeBodyCacheMaxBytes", 33554432, "bytes of whole route bodies kept per topic (only routes not joined from their brokers' pieces: acting master, static topics, filter servers)"),
    AutoInt("routeReadWorkers", "auto", "processes answering route reads beside the main one, on the same port (read at start); auto = one fewer than the CPUs this process may run on (0 on one CPU: one process)", default_read_workers),
    Bool("routeReadWorkersExclusive", True, "with read workers: only the workers accept connections, so no route read waits behind registration work (read at start)"),
    # security and operations (namesrv/security, namesrv/dispatch/isolation.py, namesrv/observe/metrics.py)
    Bool("aclEnable", False, "require signed requests (RocketMQ ACL 1.0) for aclSignedClasses"),
    Str("aclFile", "conf/plain_acl.yml", "credentials (Java plain_acl.yml format), relative to rocketmqHome; reloaded on change"),
    Str("aclSignedClasses", "adminWrite", "classes that must be signed: routeRead, brokerControl, adminRead, adminWrite or all"),
    Str("brokerAllowedAddresses", "", "IPs/CIDRs allowed to send broker-control requests (empty: anyone)"),
    Int("routeReadMaxInFlight", 50000, "route reads in flight before SYSTEM_BUSY (0 = unlimited)"),
    Int("brokerControlMaxInFlight", 10000, "broker-control requests in flight before SYSTEM_BUSY"),
    Long("brokerControlMaxInFlightBytes", 268435456, "broker-control request bodies held before SYSTEM_BUSY"),
    Int("adminReadMaxInFlight", 1000, "admin reads in flight before SYSTEM_BUSY"),
    Int("adminWriteMaxInFlight", 1000, "admin writes in flight before SYSTEM_BUSY"),
    Bool("isolationSchedulerEnable", True, "answer route reads first; run other classes in bounded turns"),
    Int("schedulerTurnBudgetMillis", 1, "ms of sliced work per reactor turn (queued broker and admin requests, a read worker's queued reads, whole-table answers, status searches, replica publication), before the sockets are read again; was isolationTurnBudgetMillis"),
    Str("tlsMode", "disabled", "disabled, permissive (TLS and plain on one port) or enforcing"),
    Str("tlsServerCertPath", "", "PEM certificate chain (watched for changes)"),
    Str("tlsServerKeyPath", "", "PEM private key (watched for changes)"),
    Str("tlsServerKeyPasswordFile", "", "file holding the key's password"),
    Str("tlsServerNeedClientAuth", "none", "client certificates: none, optional or require"),
    Str("tlsServerTrustCertPath", "", "CA bundle for client certificates"),
    Bool("tlsTestModeEnable", False, "self-signed certificate when no paths are set (tests only)"),
    Port("prometheusListenPort", 0, "Prometheus metrics HTTP port (0 = off), bound to bindAddress"),
    Port("statusListenPort", 0, "read-only status page HTTP port (0 = off), bound to bindAddress; asks for ACL credentials when admin reads must be signed"),
    Int("fileWatchIntervalMillis", 500, "how often the ACL and TLS files are checked for changes"),
    # the address service (namesrv/addressing): GET /rocketmq/{subgroup} on the Prometheus port
    Str("addressServiceNamesrvAddr", "", "name servers the address service lists, host:port;host:port as namesrvAddr (empty at start: off; needs prometheusListenPort)"),
    Str("addressServiceSubgroups", "nsaddr", "subgroups answered with that list, ;-separated (Java's rocketmq.namesrv.domain.subgroup; a client with a unitName asks for <subgroup>-<unitName>)"),
    Long("addressServiceProbeIntervalMillis", 2000, "how often each listed name server is probed with a real remoting request (read at start)"),
    Long("addressServiceProbeTimeoutMillis", 1500, "a probe not answered within this long fails (read at start)"),
    Long("addressServiceDownAfterMillis", 5000, "a listed name server silent this long leaves the served list (all silent: the whole list is served; read at start)"),
    Int("addressServiceUpAfterAnswers", 2, "probes answered in a row that bring a removed name server back (read at start)"),
    Int("addressServiceMaxRequestsPerSecond", 500, "address requests answered per second; more get 429 (0 = no limit; read at start)"),
]

_BY_NAME = {p.name: p for p in PROPERTIES}

#: what GET_CONTROLLER_CONFIG answers: Java's ControllerConfig and NettyServerConfig keys we have
CONTROLLER_CONFIG_KEYS = (
    "rocketmqHome", "configStorePath", "controllerType", "scanNotActiveBrokerInterval", "controllerThreadPoolNums",
    "controllerRequestThreadPoolQueueCapacity", "controllerDLegerGroup", "controllerDLegerPeers",
    "controllerDLegerSelfId", "mappedFileSize", "controllerStorePath", "electMasterMaxRetryCount",
    "enableElectUncleanMaster", "isProcessReadEvent", "notifyBrokerRoleChanged", "scanInactiveMasterInterval",
    "configBlackList", "controllerPeerAuthDisabled",
    "bindAddress", "listenPort", "serverWorkerThreads", "serverCallbackExecutorThreads", "serverSelectorThreads",
    "serverOnewaySemaphoreValue", "serverAsyncSemaphoreValue", "serverChannelMaxIdleTimeSeconds",
    "serverSocketSndBufSize", "serverSocketRcvBufSize", "serverSocketBacklog", "serverPooledByteBufAllocatorEnable",
    "useEpollNativeSelector")
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_RANGES = {"int": (-2 ** 31, 2 ** 31 - 1), "long": (-2 ** 63, 2 ** 63 - 1)}


def property_named(name):
    """The Property called ``name``, or None for a key we do not know."""
    return _BY_NAME.get(name)


def parse_value(prop, text):
    """``text`` as a value of ``prop``; ValueError says what is wrong with it.

    Blanks around the value are ignored for every type (Java 5.x trims only Strings, so
    ``listenPort=9876 `` silently keeps Java's default: here it means 9876).
    """
    text = str(text).strip()
    if prop.auto is not None and text.lower() == "auto":
        return prop.auto()
    if prop.kind == "boolean":
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise ValueError("not a boolean (true or false)")
        return lowered == "true"
    if prop.kind in _RANGES:
        if not _INTEGER.match(text):
            raise ValueError("not an integer or auto" if prop.auto is not None else "not an integer")
        value = int(text)
        low, high = _RANGES[prop.kind]
        if not low <= value <= high:
            raise ValueError("out of range for a Java %s" % prop.kind)
        if prop.port and not 0 <= value <= 65535:
            raise ValueError("not a TCP port (0-65535)")
        return value
    if prop.path:
        if prop.name == "rocketmqHome" and not text:
            text = os.environ.get("ROCKETMQ_HOME", "")
        return os.path.expanduser(text) if text else text
    return text


def java_text(value):
    """A value as Java prints it (``true``/``false`` for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


class NamesrvConfig:
    """The live configuration: read by attribute (``cfg.listenPort``), changed only by update().

    Keys that are not properties (a ``-c`` file may hold NettyClientConfig keys or others)
    are kept as extras and reported by GET_NAMESRV_CONFIG, as Java does.
    """

    def __init__(self):
        values = {p.name: parse_value(p, java_text(p.default)) for p in PROPERTIES}
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_extras", {})
        object.__setattr__(self, "_listeners", [])
        object.__setattr__(self, "_explicit", set())   # per-instance paths someone set
        object.__setattr__(self, "_texts", None)       # texts(), until the next change
        # Every property is also a plain instance attribute: handlers read several per request,
        # and a __getattr__ hook would cost each of them (bench/results/design-figures.md#config-attributes).
        self.__dict__.update(values)
        self._derive_instance_paths()

    def texts(self):
        """{name: its value as Java prints it} of every property and extra key: the copy each publication to
        the read workers carries, built once per change (do not change it)."""
        texts = self._texts
        if texts is None:
            texts = {name: java_text(self.get(name)) for name in self.names()}
            object.__setattr__(self, "_texts", texts)
        return texts

    def _derive_instance_paths(self):
        """Per-instance defaults follow ``listenPort`` until set (``-c``, command line) or pinned."""
        for prop in PROPERTIES:
            if prop.per_instance and prop.name not in self._explicit:
                value = instance_path(parse_value(prop, java_text(prop.default)), self.listenPort)
                self._values[prop.name] = self.__dict__[prop.name] = value

    def pin_instance_paths(self):
        """At start: the files this instance uses stay where they are whatever listenPort becomes."""
        self._explicit.update(p.name for p in PROPERTIES if p.per_instance)

    def instance_id_path(self):
        """The file holding this instance's id: next to its KV file, so each KV file has its own."""
        return self.kvConfigPath + ".instance"

    def __getattr__(self, name):
        raise AttributeError(name)

    def __setattr__(self, name, value):
        raise AttributeError("use update() to change %s" % name)

    def __contains__(self, name):
        """True for a property or an extra key already present (Java's "the property must exist")."""
        return name in self._values or name in self._extras

    def names(self):
        return sorted(set(self._values) | set(self._extras))

    def get(self, name, default=None):
        if name in self._values:
            return self._values[name]
        return self._extras.get(name, default)

    def extras(self):
        return dict(self._extras)

    def add_listener(self, callback):
        """``callback(name, old, new)`` after every change that update() applies."""
        self._listeners.append(callback)

    def remove_listener(self, callback):
        self._listeners.remove(callback)

    def black_list(self):
        """Keys UPDATE_NAMESRV_CONFIG refuses: the configBlackList entries and the hard-coded four."""
        listed = {k.strip() for k in self.configBlackList.split(";") if k.strip()}
        return listed | ALWAYS_BLACK_LISTED

    def update(self, mapping, source="update", announce=True):
        """Apply ``mapping`` (name → text) all or nothing; returns {name: (old, new)} of what changed.

        Raises ConfigError, before changing anything, when a value does not parse. With
        ``announce`` false nothing is logged and no listener is called (a read worker's copy).
        """
        parsed, extras = {}, {}
        for key, text in mapping.items():
            prop = _BY_NAME.get(key)
            if prop is None:
                extras[key] = java_text(text)
                continue
            try:
                parsed[key] = parse_value(prop, text)
            except ValueError as e:
                raise ConfigError("%s: bad value %r for %s (%s): %s" % (source, text, key, prop.kind, e))
        self._explicit.update(key for key in parsed if _BY_NAME[key].per_instance)
        object.__setattr__(self, "_texts", None)
        changes = {}
        for table, updates in ((self._values, parsed), (self._extras, extras)):
            for key, value in updates.items():
                old = table.get(key)
                table[key] = value
                if table is self._values:
                    self.__dict__[key] = value
                if old != value:
                    changes[key] = (old, value)
        if "listenPort" in changes:
            self._derive_instance_paths()
        if not announce:
            return changes
        for key, (old, new) in changes.items():
            log.info("config {key} changed from {old!r} to {new!r} ({source})", key=key, old=old, new=new,
                     source=source)
            for listener in list(self._listeners):
                try:
                    listener(key, old, new)
                except Exception:
                    log.failure("config listener {listener} failed on {key}", listener=listener, key=key)
        return changes

    def load_file(self, path):
        """Apply the properties file ``path`` (the ``-c`` file); returns the keys that are not properties.

        As Java's NamesrvStartup, configStorePath becomes this file (made absolute: twistd
        may change directory), so UPDATE_NAMESRV_CONFIG persists into it. Keys that are not
        properties are kept as extras, unannounced (they change nothing): unknown_keys says
        what each one probably is. A value that ends in a ``# comment`` is refused: the file
        format keeps it as part of the value, in Java too.
        """
        try:
            mapping = load_properties_file(path)
        except OSError as e:
            raise ConfigError("cannot read config file %s: %s: give the path of a readable properties file "
                              "(conf/namesrv.properties is a template)" % (path, e.strerror or e))
        except PropertiesError as e:
            raise ConfigError("%s: %s" % (path, e))
        known = {key: text for key, text in mapping.items() if key in _BY_NAME}
        unknown = [key for key in mapping if key not in _BY_NAME]
        for key, text in known.items():
            if inline_comment(text):
                raise ConfigError("%s: %s=%s: the text after the value is part of it (a properties file, Java's "
                                  "too, has comment lines only): put the comment on a line of its own"
                                  % (path, key, text.strip()))
        known["configStorePath"] = os.path.abspath(os.path.expanduser(path))
        self.update(known, source=path)
        self._extras.update((key, java_text(mapping[key])) for key in unknown)
        object.__setattr__(self, "_texts", None)
        return unknown

    def unknown_keys(self, keys, source):
        """``(refusals, notes)``: one line per key of ``keys`` (from ``source``) that is not a property.

        A misspelt property (or Java key) is a refusal saying which one was meant; a key
        only Java reads, or one unknown to both, is a note."""
        refusals, notes = [], []
        for key in keys:
            if key in JAVA_ONLY_KEYS:
                notes.append("%s: %s is read by the Java NameServer only: kept, unused here" % (source, key))
                continue
            if key in RENAMED:
                refusals.append("%s: %s is now called %s: use that name" % (source, key, RENAMED[key]))
                continue
            meant = suggestion(key, _BY_NAME)
            if meant is not None:
                case = " (names are case-sensitive, as in Java)" if meant.lower() == key.lower() else ""
                refusals.append("%s: unknown property %s: did you mean %s?%s" % (source, key, meant, case))
            else:
                notes.append("%s: unknown property %s: kept (GET_NAMESRV_CONFIG lists it, as Java's does), "
                             "unused" % (source, key))
        return refusals, notes

    def to_properties_text(self, extras=True):
        """Every property (and extra, unless ``extras`` is false), sorted by key, one ``key=value``
        line each (Java 5.x order)."""
        names = self.names() if extras else sorted(self._values)
        return format_properties((name, java_text(self.get(name))) for name in names)

    def event_log_path(self):
        if self.eventLogPath:
            return self.eventLogPath
        return instance_path(os.path.join(self.logDir, "namesrv-events.log"), self.listenPort)
