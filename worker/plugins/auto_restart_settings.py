"""A connector's own `auto.restart.*` keys, as a type: the framework reads them when it
admits a config (`worker.admission.registry.FrameworkSettings`), the herder when a task
fails (`herder.tasks.auto_restart`), so they live apart from the plugin registry.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from worker.plugins.api import JAVA_INT_MAX

MIN_BACKOFF_MS: Final = 100
"""The shortest automatic-restart back-off: a task that keeps failing must not spin."""


class AutoRestartSettings(BaseModel):
    """A connector's own automatic-restart settings (`herder.tasks.auto_restart`): the worker's
    keys of the same names, for this connector only; an unset one takes the worker's."""

    model_config = ConfigDict(frozen=True)

    auto_restart_enabled: bool | None = Field(
        default=None,
        alias="auto.restart.enabled",
        description="Restart this connector and its tasks automatically when they fail "
        "(default: the worker's auto.restart.enabled)",
    )
    auto_restart_max_attempts: int | None = Field(
        default=None,
        alias="auto.restart.max.attempts",
        ge=1,
        le=JAVA_INT_MAX,
        description="Automatic restarts in a row before a failure stays FAILED "
        "(default: the worker's)",
    )
    auto_restart_initial_backoff_ms: int | None = Field(
        default=None,
        alias="auto.restart.initial.backoff.ms",
        ge=MIN_BACKOFF_MS,
        le=JAVA_INT_MAX,
        description="Wait before the first automatic restart; doubles with each one "
        "(default: the worker's)",
    )
    auto_restart_max_backoff_ms: int | None = Field(
        default=None,
        alias="auto.restart.max.backoff.ms",
        ge=MIN_BACKOFF_MS,
        le=JAVA_INT_MAX,
        description="The longest wait between automatic restarts, and how long a run must "
        "last to count as a success (default: the worker's)",
    )
