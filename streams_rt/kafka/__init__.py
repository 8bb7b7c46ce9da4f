"""Broker-facing helpers: the development broker launcher, locating Java and the Kafka jars, a
changelog watermark lookup that retries while a new topic's leadership settles, and a consumed
message's topic, partition and offset read as the values they are (`records`)."""
