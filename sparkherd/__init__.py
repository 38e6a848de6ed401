"""The process: the `sparkherd` command and the wiring of one worker (herder, REST, Spark).

It sits on top of every other package and nothing imports it, so `worker/` stays the
execution layer only.
"""
