"""One read-only brokerName -> QueueData map per distinct set of QueueData, shared by every topic that has it.

A topic's entry in ``topic_queue_table`` is a small dict of its brokers' QueueData. At a million
topics on four brokers each, those dicts are 184 bytes apiece: 176 MiB in every process that holds
the tables, for what is a thousand distinct maps (the QueueData themselves are already shared,
model.shared_queue_data). A read worker's replica never changes a map in place: its parts replace a
topic's map whole (tables.apply_topic_maps, built from shapes). So there a topic's map is the one
shared map with the same QueueData, interned here.

A shared map refuses in-place changes (TypeError): a code path that would change one map for a
million topics at once fails loudly instead. The main process, which changes maps in place as
brokers register, keeps a dict per topic.
"""

import weakref


class SharedQueueMap(dict):
    """A read-only brokerName -> QueueData map; reads cost what a dict's do."""

    __slots__ = ("__weakref__",)

    def _read_only(self, *args, **kwargs):
        raise TypeError("a shared queue map is read-only: replace the topic's map instead")

    __setitem__ = __delitem__ = pop = popitem = clear = update = setdefault = __ior__ = _read_only

    def copy(self):
        return dict(self)

    def __reduce__(self):
        return dict, (dict(self),)


class QueueMapInterner:
    """``share(qmap)``: the one SharedQueueMap with the same QueueData objects (made from ``qmap`` if none).

    Keyed by the identities of the QueueData, which are the shared, immutable ones: two maps of the
    same objects are the same map. A map no topic uses any more goes (weak values)."""

    def __init__(self):
        self._maps = weakref.WeakValueDictionary()

    def share(self, qmap):
        if type(qmap) is SharedQueueMap:
            return qmap
        key = tuple(sorted(map(id, qmap.values())))
        found = self._maps.get(key)
        if found is None:
            found = self._maps[key] = SharedQueueMap(qmap)
        return found

    def __len__(self):
        return len(self._maps)
