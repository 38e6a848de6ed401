"""A deterministic simulator of a sparkherd group: no broker, a virtual clock.

Members, a coordinator with Kafka's join/sync/heartbeat semantics, workers that start and
stop items, and a small scenario language; invariants are checked as the history runs.
"""
