"""What model calls cost: genai-prices' bundled price database (never fetched during a run),
or the prices a run is given for models it does not know."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from convlab.errors import ConvlabError

if TYPE_CHECKING:
    from genai_prices.types import ModelPrice

__all__ = ["Price", "Pricer", "prices_from"]


class Price(BaseModel):
    """A model's price in US dollars per million tokens, as `prices={"my-model": {...}}`
    gives it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_mtok: float = Field(ge=0)
    """Dollars per million prompt (input) tokens."""
    output_mtok: float = Field(0.0, ge=0)
    """Dollars per million completion (output) tokens."""


_SHAPE = "{'input_mtok': dollars per million input tokens, 'output_mtok': ...}"


def prices_from(given: Mapping[str, Any] | None) -> dict[str, Price]:
    """The `prices` option checked: model name -> Price; anything else (not a mapping, a bad
    entry) is a ConvlabError naming the model and the field."""
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise ConvlabError(
            f"prices: expected a mapping of model names to {_SHAPE}, "
            f"got a {type(given).__name__}: {given!r:.200}"
        )
    found: dict[str, Price] = {}
    for model, price in given.items():
        try:
            found[str(model)] = price if isinstance(price, Price) else Price.model_validate(price)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "price"
            raise ConvlabError(
                f"prices[{model!r}].{where}: {first['msg']} (a price is {_SHAPE})"
            ) from None
    return found


class Pricer:
    """Prices calls by model (and endpoint, which names the provider when the model alone
    does not): the run's own `prices` first, then genai-prices' bundled database."""

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self.prices = dict(prices or {})

    def cost(
        self, model: str | None, endpoint: str | None, prompt: int, completion: int
    ) -> float | None:
        """The calls' cost in US dollars, or None when the model has no known price."""
        if model is None:
            return None
        own = self.prices.get(model)
        if own is not None:
            total = Decimal(prompt) * Decimal(str(own.input_mtok)) + Decimal(completion) * Decimal(
                str(own.output_mtok)
            )
            return float(total / 1_000_000)
        price = _known_price(model, endpoint)
        if price is None:
            return None
        from genai_prices import Usage

        used = Usage(input_tokens=prompt, output_tokens=completion)
        return float(price.calc_price(used)["total_price"])


@functools.lru_cache(maxsize=256)
def _known_price(model: str, endpoint: str | None) -> ModelPrice | None:
    """genai-prices' current price of `model` at the provider `endpoint` names (else the
    provider its name matches); None when the database has no such model."""
    from genai_prices import Usage, calc_price

    for url in (endpoint, None) if endpoint else (None,):
        try:
            found = calc_price(Usage(input_tokens=0), model, provider_api_url=url)
        except LookupError:
            continue
        price: ModelPrice = found.model_price
        return price
    return None
