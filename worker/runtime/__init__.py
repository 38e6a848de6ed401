"""Connector tasks as Spark streaming queries: the session, task runs, claims and checkpoints."""
