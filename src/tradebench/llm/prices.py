"""Model prices: a spec's own table first, else the dated prices of the `genai-prices` package.

`quote_price(config, table, on)` resolves the price of one model and says where it came
from (`PriceQuote`): the spec's table (`budget.prices`, or `--price` on the command line)
by `provider:model` or bare model name; otherwise `genai-prices` (a maintained, versioned
table of provider prices with the dates they took effect), looked up by the endpoint's URL
when it names a provider the package knows, else by the spec's provider, at the date `on`.
A model neither source knows has no price: its cost is unknown (None), never 0.

genai-prices states prices per million tokens, some of them tiered by a request's input
tokens (the "cliff" model: past a threshold every token of that request pays the tier's
rate). `Price.request_cost` applies those tiers per request; `Price.cost` prices a total at
the base rate, which equals the sum of the requests' costs unless one request crossed a
tier's threshold. Input tokens read from the provider's prompt cache pay the table's
cache-read rate (the input rate where it has none); reasoning tokens are output tokens.
"""

from __future__ import annotations

import functools
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tradebench.llm.types import ModelConfig, Usage

GENAI_PRICES = "genai-prices"
"""Name of the default price source."""
PriceSource = Literal["spec", "genai-prices", "unknown"]

__all__ = ["GENAI_PRICES", "Price", "PriceQuote", "PriceTier", "genai_quote", "quote_price"]


class PriceTier(BaseModel):
    """Rates for every token of a request whose input tokens exceed `above_input_tokens`."""

    model_config = ConfigDict(frozen=True)

    above_input_tokens: int = Field(ge=0)
    """Threshold on the request's input tokens (strictly above it the tier applies)."""
    input_per_mtok: float = Field(ge=0)
    """USD per million input tokens in this tier."""
    output_per_mtok: float = Field(ge=0)
    """USD per million output tokens in this tier."""


class Price(BaseModel):
    """USD per million tokens for one model (and, from genai-prices, its request tiers)."""

    model_config = ConfigDict(frozen=True)

    input_per_mtok: float = Field(ge=0)
    """Price of one million input (prompt) tokens (the base rate)."""
    output_per_mtok: float = Field(ge=0)
    """Price of one million output (completion) tokens (the base rate)."""
    tiers: tuple[PriceTier, ...] = ()
    """Higher rates for large requests, ascending by threshold (empty: one flat rate)."""

    cache_read_per_mtok: float | None = Field(default=None, ge=0)
    """Price of one million input tokens read from the provider's prompt cache (None: the
    table has no such rate, and cached tokens pay the input rate)."""

    def cost(self, usage: Usage) -> float:
        """USD for `usage` at the base rate (use for totals over many requests)."""
        return self._at(self.input_per_mtok, self.output_per_mtok, usage)

    def request_cost(self, usage: Usage) -> float:
        """USD for one request's `usage`: the rate of the highest tier its input tokens
        exceed, applied to all its tokens (the base rate below every tier)."""
        rate: Price | PriceTier = self
        for tier in self.tiers:
            if usage.input_tokens > tier.above_input_tokens:
                rate = tier
        return self._at(rate.input_per_mtok, rate.output_per_mtok, usage)

    def _at(self, input_rate: float, output_rate: float, usage: Usage) -> float:
        """USD at these input and output rates; cached input tokens at the cache-read rate.
        Reasoning tokens are output tokens (providers bill them so) and pay the output
        rate."""
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        cached_rate = input_rate if self.cache_read_per_mtok is None else self.cache_read_per_mtok
        fresh = usage.input_tokens - cached
        return (fresh * input_rate + cached * cached_rate + usage.output_tokens * output_rate) / 1e6


class PriceQuote(BaseModel):
    """The price used for one model, and where and when it came from."""

    model_config = ConfigDict(frozen=True)

    label: str
    """`provider:model` of the model priced."""
    source: PriceSource
    """`spec` (the spec's table or `--price`), `genai-prices`, or `unknown` (no price)."""
    price: Price | None = None
    """The price; None when unknown."""
    priced_on: date | None = None
    """genai-prices: the date whose prices were read (None for spec prices)."""
    effective_from: date | None = None
    """genai-prices: the date this price took effect in the source; None when the source
    lists one undated price for the model."""
    source_version: str | None = None
    """genai-prices: the package version (its data is versioned with it)."""
    matched: str | None = None
    """genai-prices: the `provider:model` ids the model was matched to."""

    @property
    def known(self) -> bool:
        """True when a price was found."""
        return self.price is not None

    def describe(self) -> str:
        """One line: the rates and where they came from (what reports show)."""
        if self.price is None:
            return f"{self.label}: price unknown (cost unknown)"
        rates = f"${self.price.input_per_mtok:g} in / ${self.price.output_per_mtok:g} out per MTok"
        if self.price.cache_read_per_mtok is not None:
            rates += f", ${self.price.cache_read_per_mtok:g} cached in"
        if self.price.tiers:
            rates += " (higher for large requests)"
        if self.source == "spec":
            return f"{self.label}: {rates}, from the spec's price table"
        since = f", effective {self.effective_from}" if self.effective_from else ""
        return (
            f"{self.label}: {rates}, {self.source_version} as {self.matched} "
            f"on {self.priced_on}{since}"
        )


def _per_mtok(value: object) -> tuple[float, dict[int, float]]:
    """A genai-prices rate (a Decimal or tiered prices) as a base and {threshold: rate}."""
    if value is None:
        return 0.0, {}
    if isinstance(value, Decimal | int | float):
        return float(value), {}
    base = float(value.base)  # TieredPrices
    return base, {int(t.start): float(t.price) for t in value.tiers}


def _price(model_price: object) -> Price:
    """Our `Price` from a genai-prices `ModelPrice` (input and output token rates)."""
    base_in, tiers_in = _per_mtok(getattr(model_price, "input_mtok", None))
    base_out, tiers_out = _per_mtok(getattr(model_price, "output_mtok", None))
    tiers = []
    for start in sorted(set(tiers_in) | set(tiers_out)):
        rate_in = next((tiers_in[s] for s in sorted(tiers_in, reverse=True) if s <= start), base_in)
        rate_out = next(
            (tiers_out[s] for s in sorted(tiers_out, reverse=True) if s <= start), base_out
        )
        tiers.append(
            PriceTier(above_input_tokens=start, input_per_mtok=rate_in, output_per_mtok=rate_out)
        )
    cache_read = getattr(model_price, "cache_read_mtok", None)
    return Price(
        input_per_mtok=base_in,
        output_per_mtok=base_out,
        tiers=tuple(tiers),
        cache_read_per_mtok=None if cache_read is None else _per_mtok(cache_read)[0],
    )


def _effective_from(model: object, when: datetime) -> date | None:
    """The start date of the model's price active at `when` (None when undated)."""
    prices = getattr(model, "prices", None)
    if not isinstance(prices, list):
        return None
    for conditional in reversed(prices):
        constraint = conditional.constraint
        if constraint is None or constraint.active(when):
            return getattr(constraint, "start_date", None)
    return None


def _provider(provider: str, base_url: str | None) -> dict[str, str]:
    """How genai-prices should find the provider: by the endpoint's URL when the package
    knows it (a model it lacks there stays unknown), else by the spec's provider name."""
    from genai_prices.data_snapshot import get_snapshot

    if base_url:
        try:
            get_snapshot().find_provider(None, None, base_url)
            return {"provider_api_url": base_url}
        except LookupError:
            pass
    return {"provider_id": provider}


@functools.lru_cache(maxsize=256)
def genai_quote(provider: str, model: str, base_url: str | None, on: date) -> PriceQuote:
    """The genai-prices quote of `provider:model` on day `on` (source `unknown` when the
    package has no price): the endpoint's URL picks the provider when genai-prices knows
    it, else the spec's provider does."""
    import genai_prices

    label = f"{provider}:{model}"
    when = datetime.combine(on, time(12), tzinfo=UTC)
    none = genai_prices.Usage(input_tokens=0, output_tokens=0)
    try:
        calc = genai_prices.calc_price(
            none, model, genai_request_timestamp=when, **_provider(provider, base_url)
        )
    except LookupError:
        calc = None
    if calc is None:
        return PriceQuote(
            label=label,
            source="unknown",
            priced_on=on,
            source_version=f"{GENAI_PRICES} {genai_prices.__version__}",
        )
    return PriceQuote(
        label=label,
        source=GENAI_PRICES,
        price=_price(calc.model_price),
        priced_on=on,
        effective_from=_effective_from(calc.model, when),
        source_version=f"{GENAI_PRICES} {genai_prices.__version__}",
        matched=f"{calc.provider.id}:{calc.model.id}",
    )


def quote_price(config: ModelConfig, table: dict[str, Price], on: date | None = None) -> PriceQuote:
    """The price of `config`'s model: the spec's `table` (by `provider:model`, then bare
    model name) overrides genai-prices, read at day `on` (default: today, UTC)."""
    own = table.get(config.label) or table.get(config.model or "")
    if own is not None:
        return PriceQuote(label=config.label, source="spec", price=own)
    day = on or datetime.now(tz=UTC).date()
    return genai_quote(str(config.provider), str(config.model), config.base_url, day)
