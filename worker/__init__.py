"""Execution: worker configuration, the Spark task runtime, the connectors and their records."""
