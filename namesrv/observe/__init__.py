"""What operators watch: the event log, Prometheus metrics, the health check."""
