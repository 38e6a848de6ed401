"""Requests the herder refuses. REST maps each class to an HTTP status and Connect's error
body, so the message is what a REST caller reads."""

from __future__ import annotations

from protocol.messages import ConnectorTaskId


class HerderError(Exception):
    """A request the herder refuses; REST maps each subclass to an HTTP status."""


class ConnectorNotFound(HerderError):
    def __init__(self, name: str) -> None:
        super().__init__(f"Connector {name} not found")


class ConnectorExists(HerderError):
    def __init__(self, name: str) -> None:
        super().__init__(f"Connector {name} already exists")


class TaskNotFound(HerderError):
    def __init__(self, task: ConnectorTaskId) -> None:
        super().__init__(f"Task {task} not found")


class InvalidConnectorConfig(HerderError):
    pass


class ConnectorNotStopped(HerderError):
    def __init__(self, name: str) -> None:
        super().__init__(
            "Connectors must be in the STOPPED state before their offsets can be modified. "
            "This can be done for the specified connector by issuing a 'PUT' request to the "
            f"'/connectors/{name}/stop' endpoint"
        )


class InvalidOffsets(HerderError):
    pass


class TasksStillRunning(HerderError):
    def __init__(self, name: str, tasks: list[int]) -> None:
        super().__init__(
            f"Connector {name} is STOPPED but task(s) {tasks} still report RUNNING; "
            "try again once they have stopped"
        )


class NoHandOff(HerderError):
    """A departure that could hand nothing over: the message says why."""


class NotLeader(HerderError):
    """Only the leader writes configs; the caller forwards to `leader_url` (None: unknown)."""

    def __init__(self, leader_url: str | None) -> None:
        self.leader_url = leader_url
        super().__init__(
            "Cannot complete request because of a conflicting operation "
            "(e.g. worker rebalance): the leader is not known yet"
            if leader_url is None
            else f"this worker is not the leader; the leader is {leader_url}"
        )
