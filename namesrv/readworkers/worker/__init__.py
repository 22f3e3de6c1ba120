"""A read worker process: its replica, its client connections, and the hand-off of brokers' connections."""
