"""Connect's error handling for connectors that read Kafka records (KIP-298): which
records failed, where they go (the dead letter queue), and what is counted."""
