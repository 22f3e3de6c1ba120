"""Java's ``NamesrvConfig`` (org.apache.rocketmq.common.namesrv): the name server's own properties, 4.9 and 5.x.

Same names, types and defaults as Java's, so an existing ``namesrv.properties`` keeps working; where a
default differs on purpose the description says so. ``configBlackList`` keeps Java's meaning (keys
UPDATE_NAMESRV_CONFIG refuses); which keys the network may change at all is the ``runtime`` mark of
each property (namesrv/config/table.py).
"""

from namesrv.config.table import Bool, InstanceFile, Int, Long, Str, home

#: Java's default (configBlackList;configStorePath;kvConfigPath) plus the security switches:
#: with ACL on, an admin must not be able to turn it off remotely.
DEFAULT_BLACK_LIST = ("configBlackList;configStorePath;kvConfigPath;aclEnable;aclFile;aclSignedClasses;"
                      "brokerAllowedAddresses;tlsMode;prometheusListenPort;addressServiceNamesrvAddr;"
                      "addressServiceSubgroups;controllerPeerSecretFile;controllerPeerAuthDisabled;proxyProtocolEnable;"
                      "proxyProtocolTrustedAddresses;controllerMembersFile;controllerMemberKeyFile;controllerJoin")

#: Always refused by UPDATE_NAMESRV_CONFIG, whatever configBlackList says (Java hard-codes these).
ALWAYS_BLACK_LISTED = frozenset(["configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"])

NAMESRV_CONFIG = (
    Str("rocketmqHome", "", "RocketMQ installation directory (empty: $ROCKETMQ_HOME); base of a relative aclFile", path=True),
    InstanceFile("kvConfigPath", home("namesrv", "kvConfig.json"), "KV config store file (default on a port other than 9876: kvConfig-<port>.json)"),
    InstanceFile("configStorePath", home("namesrv", "namesrv.properties"), "the -c file when given (Java rewrites it with every UPDATE_NAMESRV_CONFIG; here it is never written: runtime changes go to runtimeConfigPath)"),
    Str("productEnvName", "center", "cluster-test product environment name"),
    Bool("clusterTest", False, "cluster-test mode (not implemented; kept for compatibility)", informational=True),
    Bool("orderMessageEnable", False, "add orderTopicConf from the ORDER_TOPIC_CONFIG KV namespace to routes", runtime=True),
    Str("configBlackList", DEFAULT_BLACK_LIST, "keys UPDATE_NAMESRV_CONFIG and UPDATE_CONTROLLER_CONFIG refuse even when runtime (rocketmqHome always); Java's default plus our security keys, which are not runtime anyway"),
    # NamesrvConfig, 5.x only
    Bool("returnOrderTopicConfigToBroker", True, "send the ORDER_TOPIC_CONFIG KV table in REGISTER_BROKER answers (5.x)", runtime=True),
    Int("clientRequestThreadPoolNums", 8, "Java 5.x route-query pool size (informational here)", informational=True),
    Int("defaultThreadPoolNums", 16, "Java 5.x default pool size (informational here)", informational=True),
    Int("clientRequestThreadPoolQueueCapacity", 50000, "Java 5.x route-query queue capacity (informational here)", informational=True),
    Int("defaultThreadPoolQueueCapacity", 10000, "Java 5.x default queue capacity (informational here)", informational=True),
    Long("scanNotActiveBrokerInterval", 10000, "ms between dead-broker scans (as 4.9's fixed 10 s; Java 5.x default 5000)", runtime=True, minimum=1),
    Int("unRegisterBrokerQueueCapacity", 3000, "Java 5.x unregister queue capacity (unregistration is immediate here)", informational=True),
    Bool("supportActingMaster", False, "show the smallest slave as read-only master when a master is gone (5.x)", runtime=True),
    Bool("enableAllTopicList", True, "allow GET_ALL_TOPIC_LIST_FROM_NAMESERVER (5.x)", runtime=True),
    Bool("enableTopicList", True, "allow GET_TOPICS_BY_CLUSTER and the unit topic lists (5.x)", runtime=True),
    Bool("notifyMinBrokerIdChanged", False, "send NOTIFY_MIN_BROKER_ID_CHANGE (905) to a group's brokers when its lowest registered id changes, for 5.x's slave-acting-master (enableSlaveActingMaster in the brokers)", runtime=True),
    Bool("enableControllerInNamesrv", False, "run the controller (RIP-44) inside this name server, on its address in controllerDLegerPeers (5.x)"),
    Bool("needWaitForService", False, "refuse route queries during the start-up grace (5.x)", runtime=True),
    Int("waitSecondsForService", 45, "length of the start-up grace in seconds (5.x)", runtime=True),
    Bool("deleteTopicWithBrokerRegistration", False, "a master registration removes topics it no longer reports (5.x)", runtime=True),
)
