"""Numbers of the RocketMQ remoting protocol, as the Java enums define them."""

from enum import IntEnum


class RequestCode(IntEnum):
    """Request codes a NameServer answers (4.9.8 and 5.x)."""

    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_TOPIC_IN_NAMESRV = 216
    REGISTER_TOPIC_IN_NAMESRV = 217
    GET_KVLIST_BY_NAMESPACE = 219
    GET_TOPICS_BY_CLUSTER = 224
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    QUERY_DATA_VERSION = 322
    ADD_WRITE_PERM_OF_BROKER = 327
    GET_BROKER_MEMBER_GROUP = 901
    BROKER_HEARTBEAT = 904
    NOTIFY_MIN_BROKER_ID_CHANGE = 905
    # the controller (RIP-44, 5.x): served on the controller's own port (namesrv/controller)
    CONTROLLER_ALTER_SYNC_STATE_SET = 1001
    CONTROLLER_ELECT_MASTER = 1002
    CONTROLLER_REGISTER_BROKER = 1003
    CONTROLLER_GET_REPLICA_INFO = 1004
    CONTROLLER_GET_METADATA_INFO = 1005
    CONTROLLER_GET_SYNC_STATE_DATA = 1006
    GET_BROKER_EPOCH_CACHE = 1007
    NOTIFY_BROKER_ROLE_CHANGED = 1008
    UPDATE_CONTROLLER_CONFIG = 1009
    GET_CONTROLLER_CONFIG = 1010
    CLEAN_BROKER_DATA = 1011
    CONTROLLER_GET_NEXT_BROKER_ID = 1012
    CONTROLLER_APPLY_BROKER_ID = 1013
    # ours: the controller group's membership and leadership (namesrv/controller/membership.py), in a range
    # Java's RequestCode leaves unused
    CONTROLLER_ADD_MEMBER = 1101
    CONTROLLER_PROMOTE_MEMBER = 1102
    CONTROLLER_REMOVE_MEMBER = 1103
    CONTROLLER_LIST_MEMBERS = 1104
    CONTROLLER_TRANSFER_LEADER = 1105


class ResponseCode(IntEnum):
    """Response codes the NameServer produces."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    QUERY_NOT_FOUND = 22
    GO_AWAY = 1500
    # the controller's (5.x ResponseCode)
    CONTROLLER_FENCED_MASTER_EPOCH = 2000
    CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH = 2001
    CONTROLLER_INVALID_MASTER = 2002
    CONTROLLER_INVALID_REPLICAS = 2003
    CONTROLLER_MASTER_NOT_AVAILABLE = 2004
    CONTROLLER_INVALID_REQUEST = 2005
    CONTROLLER_BROKER_NOT_ALIVE = 2006
    CONTROLLER_NOT_LEADER = 2007
    CONTROLLER_BROKER_METADATA_NOT_EXIST = 2008
    CONTROLLER_INVALID_CLEAN_BROKER_METADATA = 2009
    CONTROLLER_BROKER_NEED_TO_BE_REGISTERED = 2010
    CONTROLLER_MASTER_STILL_EXIST = 2011
    CONTROLLER_ELECT_MASTER_FAILED = 2012
    CONTROLLER_ALTER_SYNC_STATE_SET_FAILED = 2013
    CONTROLLER_BROKER_ID_INVALID = 2014


class LanguageCode(IntEnum):
    """The sender's language; JSON headers carry the name, ROCKETMQ headers the byte."""

    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12
    NODE_JS = 13


class SerializeType(IntEnum):
    """Header serialization, the high byte of the frame's header-length word."""

    JSON = 0
    ROCKETMQ = 1


class Version:
    """`MQVersion.Version` ordinals that change the server's behaviour."""

    V3_0_11 = 37
    V4_9_4 = 401
    V4_9_8 = 409
    V5_0_0 = 413
    V5_3_1 = 475
    V5_3_3 = 479


#: The version our answers carry (Java servers write their own; clients ignore it).
SERVER_VERSION = Version.V5_3_3

FLAG_RESPONSE = 1
FLAG_ONEWAY = 2

#: Java's frame limit (`com.rocketmq.remoting.frameMaxLength`), counting the length field itself.
DEFAULT_MAX_FRAME_LENGTH = 16 * 1024 * 1024


def request_name(code: int) -> str:
    """The Java name of a request code, or ``"UNKNOWN_<code>"``."""
    try:
        return RequestCode(code).name
    except ValueError:
        return "UNKNOWN_%d" % code
