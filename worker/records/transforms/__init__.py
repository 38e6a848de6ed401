"""Kafka Connect's single message transforms and predicates (and Debezium's
`ExtractNewRecordState`), by their class names, run as Spark expressions inside a task's
query: `catalog` lists the classes and their settings, `config` reads a connector's
`transforms`/`predicates` keys into a chain, and `chain` applies it to a DataFrame of
records."""
