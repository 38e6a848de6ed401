"""Kafka into Delta Lake tables."""
