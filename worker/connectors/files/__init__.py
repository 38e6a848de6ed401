"""Kafka into parquet, JSON or CSV files, and files into Kafka."""
