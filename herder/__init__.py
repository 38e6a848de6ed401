"""Coordination: group membership, assignors, rebalance handling and the Kafka-backed stores."""
