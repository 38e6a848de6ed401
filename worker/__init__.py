"""Execution: worker configuration, the Spark task runtime, connectors and the CLI."""
