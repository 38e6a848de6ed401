"""The scenario traces of KIP-415, written in the scenario language.

Connector A has two tasks and B one, as in the KIP (AC0, AT1, AT2, BC0, BT1); task
numbers start at 0 here. Shared by the trace tests, the eager comparison and the bench.
"""

from __future__ import annotations

CONFIG = """
connector A 2
connector B 1
"""

THREE_WORKERS = """
join W1 W2 W3
connector A 2
connector B 1
settle
"""

TRACES = {
    "first member joins": CONFIG + "join W1\nsettle\n",
    "non-first members join": CONFIG + "join W1\nsettle\njoin W2 W3\nsettle\n",
    "worker leaves": THREE_WORKERS + "leave W2\nsettle\n",
    "worker bounces": THREE_WORKERS + "leave W2\nadvance 10s\njoin W2\nsettle\n",
    "leader leaves": THREE_WORKERS + "leave W1\nsettle\n",
    "leader bounces": THREE_WORKERS
    + "leave W2\nadvance 5s\njoin W2\nadvance 5s\nleave W1\nadvance 5s\njoin W1\nsettle\n",
}
