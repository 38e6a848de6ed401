"""Kafka into Apache Iceberg tables."""
