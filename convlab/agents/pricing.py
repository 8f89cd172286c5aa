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

__all__ = ["Price", "Pricer", "Rate", "prices_from"]


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
    does not): the run's own `prices` first, then genai-prices' bundled database.

    A model's price is looked up once (`rate`), and a call is then priced in two
    multiplications: looking up and pricing through genai-prices costs about 250 us a call,
    as much CPU as the rest of an HTTP case. The figure is genai-prices' own to the last
    digit (see `Rate`)."""

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self.prices = dict(prices or {})
        self._rates: dict[tuple[str, str | None], Rate | None] = {}

    def cost(
        self, model: str | None, endpoint: str | None, prompt: int, completion: int
    ) -> float | None:
        """The calls' cost in US dollars, or None when the model has no known price."""
        if model is None:
            return None
        rate = self.rate(model, endpoint)
        return None if rate is None else rate.cost(prompt, completion)

    def knows(self, model: str, endpoint: str | None) -> bool:
        """Whether `rate` has looked `model` at `endpoint` up already."""
        return (model, endpoint) in self._rates

    def rate(self, model: str, endpoint: str | None) -> Rate | None:
        """How `model` at `endpoint` is priced (looked up once); None when it has no price."""
        key = (model, endpoint)
        if key in self._rates:
            return self._rates[key]
        own = self.prices.get(model)
        if own is not None:
            found: Rate | None = Rate.per_token(own)
        else:
            price = _known_price(model, endpoint)
            found = None if price is None else Rate.of(price)
        self._rates[key] = found
        return found


class Rate:
    """One model's price as a function of a call's prompt and completion tokens.

    A price without tiers is affine in the two counts: genai-prices adds, per unit it
    prices, `price x count / per` (a per-request fee included), every step exact in
    `Decimal`. So its figure for a call is `base + prompt x input + completion x output`,
    with `base`, `input` and `output` its own figures for (0, 0), (1, 0) and (0, 1) tokens,
    taken once: the same exact Decimal, hence the same float. A price with tiers (the rate
    of every token depends on the prompt's size) is priced by genai-prices for each call.
    """

    __slots__ = ("_base", "_input", "_output", "_tiered")

    def __init__(
        self,
        base: Decimal,
        input_: Decimal,
        output: Decimal,
        tiered: ModelPrice | None = None,
    ) -> None:
        self._base, self._input, self._output, self._tiered = base, input_, output, tiered

    @classmethod
    def per_token(cls, price: Price) -> Rate:
        """A run's own `Price` (dollars per million tokens)."""
        million = Decimal(1_000_000)
        given_in, given_out = Decimal(str(price.input_mtok)), Decimal(str(price.output_mtok))
        return cls(Decimal(0), given_in / million, given_out / million)

    @classmethod
    def of(cls, price: ModelPrice) -> Rate:
        """genai-prices' `price`."""
        from genai_prices.types import TieredPrices

        if any(isinstance(v, TieredPrices) for v in vars(price).values()):
            return cls(Decimal(0), Decimal(0), Decimal(0), tiered=price)
        base = _calc(price, 0, 0)
        return cls(base, _calc(price, 1, 0) - base, _calc(price, 0, 1) - base)

    def cost(self, prompt: int, completion: int) -> float:
        """One call's cost in US dollars."""
        if self._tiered is not None:
            return float(_calc(self._tiered, prompt, completion))
        return float(self._base + prompt * self._input + completion * self._output)


def _calc(price: ModelPrice, prompt: int, completion: int) -> Decimal:
    """genai-prices' own figure for one call."""
    from genai_prices import Usage

    total: Decimal = price.calc_price(Usage(input_tokens=prompt, output_tokens=completion))[
        "total_price"
    ]
    return total


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
