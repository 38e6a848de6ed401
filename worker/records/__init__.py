"""A record's way between Kafka and a connector: converters, `transform.sql` and error handling."""
