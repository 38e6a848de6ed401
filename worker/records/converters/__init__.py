"""Kafka Connect's converters for every connector that reads or writes Kafka.

A converter says what a record's key or value bytes are. The keys, class names and
precedence are Connect's (`key.converter`, `value.converter` and their prefixed settings;
a worker's own are the default of every connector that names none), so a Connect user's
config means the same here. `spec` decides (pure), `connect_schema` maps Connect's JSON
envelope schemas to and from Spark types (pure), `avro_schema` reads what an Avro
schema promises (pure), `columns` and `records` build the Spark expressions that decode
and encode, and `payload_types` finds the Spark type of a payload before a query runs.
"""
