"""Namespaced key/value configuration, persisted like Java's KVConfigManager."""

from namesrv.kvconfig.filewriter import SerialFileWriter
from namesrv.kvconfig.store import KVConfigError, KVConfigManager

__all__ = ["KVConfigError", "KVConfigManager", "SerialFileWriter"]
