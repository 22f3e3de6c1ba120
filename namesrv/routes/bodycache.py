"""Encoded answer bodies kept between changes: per-topic routes, the topic list, the cluster info.

Clients poll GET_ROUTEINFO_BY_TOPIC every 30 s per topic; Java deep-copies and encodes each
answer under a lock (PITFALLS 8). Here a body is built once and dropped precisely when
something it was built from changes; the change tracker (changes.py) says what changed, this object
only forgets.
"""

#: a topic's route is asked in a few shapes at most (standard JSON?, acting master?, order conf)
MAX_VARIANTS_PER_TOPIC = 8


class RouteBodyCache:
    """``routes``: topic -> {(standard, acting, orderTopicConf): bytes}; ``topic_list`` and
    ``cluster_info``: the whole-table bodies, or None until asked again."""

    def __init__(self):
        self.routes = {}
        self.topic_list = None
        self.cluster_info = None

    def clear(self):
        """Forget every body (the tables were replaced)."""
        self.routes = {}
        self.topic_list = None
        self.cluster_info = None

    def route(self, topic, key):
        variants = self.routes.get(topic)
        return variants.get(key) if variants is not None else None

    def remember_route(self, topic, key, body):
        variants = self.routes.get(topic)
        if variants is None:
            variants = self.routes[topic] = {}
        elif len(variants) >= MAX_VARIANTS_PER_TOPIC:
            variants.clear()
        variants[key] = body

    def forget_routes(self, topics):
        routes = self.routes
        if routes:
            for topic in topics:
                routes.pop(topic, None)

    def topic_set_changed(self):
        self.topic_list = None

    def brokers_changed(self):
        self.cluster_info = None
