"""What crosses between the main process and its read workers: the feed, the shared counter, UNIX sockets."""
