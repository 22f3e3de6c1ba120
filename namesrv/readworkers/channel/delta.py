"""What replica messages carry of the route tables: every topic once, then only changed ones.

The main process's tables change topic by topic (a broker's registration touches its
own topics), so after a worker's first, full copy, each publication carries the current
QueueData (by shape, rows.topic_shapes) and static-topic mappings of the topics changed since the previous one
(``None``: the topic is gone), in parts of ``PART_TOPICS`` topics, then one final message
with the broker-level tables whole (one entry per broker or cluster, not per topic). A
part states values, not differences, so applying one twice, or one that overlaps a full
copy, is harmless. Parts are small so that neither process holds its reactor for long:
the main process encodes one part per reactor turn, a worker decodes and applies one
part per message.
"""

from namesrv.routes import rows

#: topics per part: ~1 ms to encode, decode or apply
PART_TOPICS = 500


def encode_topics(routes, topics):
    """The current QueueData of ``topics`` by shape (rows.topic_shapes; None for a topic that is gone)
    and their mappings."""
    mappings = routes.topic_queue_mapping_info_table
    return {"shapes": rows.topic_shapes(routes, topics, grouped=True),
            "mappings": {topic: mappings.get(topic) for topic in topics}}


def encode_brokers(routes):
    """The broker-level tables, whole."""
    return rows.broker_level_rows(routes)


def apply_topics(routes, part, reset=False):
    """Apply one part to a worker's RouteInfoManager (``reset``: it replaces every topic).

    The data comes from our own main process over a private pipe, so it is trusted as
    to shape; a malformed part raises (KeyError, TypeError, ValueError).
    """
    if reset:
        mappings = {topic: info for topic, info in part["mappings"].items() if info is not None}
        routes.replace_from_rows(shapes=part["shapes"], mappings=mappings)
    else:
        routes.apply_topic_shapes(part["shapes"], part["mappings"])


def apply_brokers(routes, tables):
    """Bring the broker-level tables to the main process's (the bodies of unchanged brokers' topics stay)."""
    routes.update_broker_rows(tables["brokers"], tables["clusters"], tables["filters"])
