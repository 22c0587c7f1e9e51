"""A value prepared in this process handed to one flow run as a parameter, with the config it
was prepared for.

Prefect stores a flow run's parameters and walks them for futures. A plan holds every trial of
the grid and a config before concealing holds keys, so neither may be a parameter as such:
``Handed`` is a pydantic model whose one field is the run id (what Prefect stores and shows)
and whose value and config are private attributes, which Prefect neither stores nor walks.
The flow takes the value only for the config it was prepared for, and prepares when handed
nothing (a deployment's flow run).
"""

from __future__ import annotations

from typing import Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr

from pipeline.sweep.config import SweepConfig

T = TypeVar("T")


class Handed(BaseModel, Generic[T]):
    """``value``, prepared for ``config``; Prefect sees ``run_id`` alone."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    _config: SweepConfig | None = PrivateAttr(default=None)
    _value: T | None = PrivateAttr(default=None)

    @classmethod
    def of(cls, config: SweepConfig, value: T) -> Self:
        handed = cls(run_id=config.run_id)
        handed._config = config
        handed._value = value
        return handed

    def for_config(self, config: SweepConfig) -> T | None:
        """The value when it was prepared for exactly ``config``, else None."""
        return self._value if self._config is not None and self._config == config else None
