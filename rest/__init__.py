"""The Kafka-Connect-compatible REST API served by every worker."""
