"""Broker-facing helpers: the development broker launcher, locating Java and the Kafka jars, and a
changelog watermark lookup that retries while a new topic's leadership settles."""
