"""`ConfigError`, the one error a worker config raises, and how a finished message travels
through pydantic's validators unchanged."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from pydantic_core import PydanticCustomError

CUSTOM_ERROR: Final = "sparkherd_config"
"""The pydantic error type that carries a finished `ConfigError` message."""


class ConfigError(ValueError):
    """A configuration problem, rendered as the single line printed at start-up."""

    def __init__(self, problem: str, key: str | None = None, hints: Sequence[str] = ()) -> None:
        self.problem = problem
        self.key = key
        self.hints = tuple(hints)
        suffix = f" ({'; '.join(self.hints)})" if self.hints else ""
        super().__init__(f"invalid config: {problem}{suffix}")

    def with_origin(self, origin: str) -> ConfigError:
        """The same problem, saying first where the offending value came from."""
        return ConfigError(self.problem, self.key, (f"from {origin}", *self.hints))


def invalid(problem: str, key: str, hints: Sequence[str] = ()) -> PydanticCustomError:
    """Carry a finished message through pydantic; `{message}` keeps braces in it literal."""
    return PydanticCustomError(
        CUSTOM_ERROR, "{message}", {"message": problem, "key": key, "hints": tuple(hints)}
    )


def with_origin(error: ConfigError, origins: Mapping[str, str]) -> ConfigError:
    """`error`, saying where its key's value came from when that is known."""
    origin = origins.get(error.key) if error.key is not None else None
    return error if origin is None else error.with_origin(origin)
