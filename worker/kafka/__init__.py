"""Kafka I/O for connector tasks that works with pip alone: a blocking client over
aiokafka and a Spark 4 Python data source (`sparkherd-kafka`) built on it."""
