"""What every agent that talks through one `HTTPClient` shares: closing its pools, the
adaptive-concurrency switch and the limit it reports, written once for the OpenAI and the
generic HTTP agent."""

from __future__ import annotations

from typing import Any

from convlab.agents._transport import HTTPClient
from convlab.agents.protocol import Agent, Concurrency

__all__ = ["HTTPBackedAgent"]


class HTTPBackedAgent(Agent):
    """An agent whose calls all go through `self._http`."""

    _http: HTTPClient

    async def aclose(self) -> None:
        """Close the connection pools."""
        await self._http.aclose()

    @property
    def adaptive(self) -> bool:
        """Whether 429/503 answers cut the requests in flight (AIMD; on by default)."""
        return self._http.adaptive

    @adaptive.setter
    def adaptive(self, on: bool) -> None:
        self._http.adaptive = bool(on)

    def concurrency(self) -> Concurrency | None:
        """The tightest adaptive limit of this agent's endpoints on the running loop."""
        return self._http.concurrency()

    def masked_settings(self, settings: dict[str, Any]) -> dict[str, Any]:
        """`settings` with the agent's key, header values and URL secrets replaced by `***` in
        every string (nested values too), as `Agent.settings()` returns them."""
        return {key: self.masked(value) for key, value in settings.items()}

    def masked(self, value: Any) -> Any:
        """`value` (builtins, nested) with every secret of the agent's replaced by `***`."""
        if isinstance(value, str):
            return self._http.secret.redact(value)
        if isinstance(value, dict):
            return {str(k): self.masked(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.masked(v) for v in value]
        if value is None or isinstance(value, bool | int | float):
            return value
        return self._http.secret.redact(repr(value))
