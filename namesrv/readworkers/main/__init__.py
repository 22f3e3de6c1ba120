"""The read workers as the main process sees them: processes, publications, forwarded and handed-off connections."""
