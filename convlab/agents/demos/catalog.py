"""Demo agent `catalog`: searches a product catalogue and records the product the user picks.

A demo, not a product: rules instead of a model, so it runs offline and answers the same
way every time. It is the agent the product-selection example of intention-kernel's
"Writing scenarios" page describes: a search answers with a
choice interaction (`{"id": "product-choice-1", "kind": "choice", "options": [{"id",
"label"}, ...]}`, status
"completed"); a pick - a structured selection (`ctx.input.selection`: option index, label
or id) or words ("the first one", "the office chair") - calls `select_product`, records the
fact `{"type": "product.selected", "productId": ...}` and closes the interaction.

Selections are resolved against the interaction of the previous turn. Every interaction has
an `id`, as intention-kernel's `interactionSchema` requires of a choice that can be answered.
A selection with no open interaction raises `SelectionError` (an AgentError) whose message
starts with intention-kernel's code `EVALUATION_SELECTION_UNAVAILABLE`; one that matches no option
or several, `EVALUATION_SELECTION_AMBIGUOUS`. When the
engine has already resolved the selection it passes the option as
`ctx.metadata["selected_option"]` and the agent uses it. It takes step inputs as the kernel's
direct adapter does (`strict_input`): `{text, selection?}` only.
"""

from __future__ import annotations

import re
from typing import Any

from convlab.agents.demos._base import Answer, Chat, DemoAgent, DemoSession, Turn
from convlab.errors import SelectionError
from convlab.model.suite import Selection

__all__ = ["DEFAULT_PRODUCTS", "CatalogAgent", "SelectionError", "resolve_selection"]

DEFAULT_PRODUCTS: list[dict[str, Any]] = [
    {"id": "lamp-01", "name": "Desk lamp", "category": "lighting", "price": 39.0, "stock": 12},
    {"id": "chair-01", "name": "Office chair", "category": "furniture", "price": 149.0, "stock": 4},
    {"id": "lamp-02", "name": "Floor lamp", "category": "lighting", "price": 89.0, "stock": 0},
    {
        "id": "cable-1m",
        "name": "USB-C cable",
        "category": "cables",
        "price": 9.0,
        "stock": 40,
        "detail": "1 m",
    },
    {
        "id": "cable-2m",
        "name": "USB-C cable",
        "category": "cables",
        "price": 12.0,
        "stock": 25,
        "detail": "2 m",
    },
    {"id": "mug-01", "name": "Coffee mug", "category": "kitchen", "price": 7.5, "stock": 0},
]
"""The catalogue used when the case's world has no `catalog.products`; stock 0 = unavailable."""

_STOP_WORDS = """show me available products product please the a an some any find search for i
want need looking list all your what do you have items item can see catalog catalogue in stock
would like to buy browse give let lets s sorted sort by order ordered price cheapest first
lowest highest"""
_STOP = frozenset(_STOP_WORDS.split())
_SEARCH = re.compile(
    r"\b(show|find|search|looking|list|browse|have|products?|catalog(ue)?)\b", re.I
)
_CHOOSE = re.compile(r"\b(choose|pick|take|select|i'?ll have|go with)\b", re.I)
_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "1st": 0, "2nd": 1}
_ORDINAL = re.compile(
    r"\b(first|second|third|fourth|fifth|1st|2nd|last)\b|(?:#|number |option )(\d)"
)


def resolve_selection(selection: Selection, interaction: dict[str, Any] | None) -> dict[str, Any]:
    """The option a selection picks from an open interaction; SelectionError with
    intention-kernel's code otherwise."""
    return selection.pick(interaction)


def _line(product: dict[str, Any]) -> str:
    detail = f" ({product['detail']})" if product.get("detail") else ""
    return f"{product['name']}{detail} - ${product['price']:.2f}"


def _option(product: dict[str, Any]) -> dict[str, Any]:
    return {"id": product["id"], "label": product["name"]}


def _terms(product: dict[str, Any]) -> set[str]:
    words = f"{product['name']} {product['category']} {product['id']}".lower()
    return set(re.findall(r"[a-z0-9-]+", words))


def _keywords(text: str) -> list[str]:
    words = re.findall(r"[a-z0-9-]+", text.lower())
    return [w.removesuffix("s") if len(w) > 3 else w for w in words if w not in _STOP]


class _CatalogSession(DemoSession):
    def __init__(self) -> None:
        self.options: list[dict[str, Any]] | None = None
        """The choice the last answer left open (None: no open choice)."""
        self.answered = False
        """Whether this session answered before (else a history came in one call)."""
        self.published = 0
        """How many choice interactions this session opened (their ids count up)."""

    def prepare(self, world: dict[str, Any]) -> None:
        world.setdefault("catalog", {}).setdefault("selected", [])

    def answer(self, chat: Chat, turn: Turn) -> Answer:
        text = chat[-1][1]
        if not self.answered and len(chat) > 1:
            self._recall(chat, turn)
        self.answered = True
        picked = self._picked(text, turn)
        if picked is not None:
            return self._select(picked, turn)
        if self.options and (_ORDINAL.search(text) or _CHOOSE.search(text)):
            return self._reask("I couldn't tell which one you mean.")
        if _CHOOSE.search(text) and not self.options:
            return Answer("There is no open choice yet. Ask me to show available products first.")
        if _SEARCH.search(text):
            return self._search(text, turn)
        if self.options:
            return self._reask("Please choose one of the products.")
        return Answer(
            "Hello! I'm the catalogue assistant (a convlab demo). Ask me to show available "
            "products, or search for something like 'lamps'."
        )

    # -- choosing ----------------------------------------------------------------------------
    def _picked(self, text: str, turn: Turn) -> dict[str, Any] | None:
        ctx = turn.ctx
        chosen = ctx.metadata.get("selected_option")
        if isinstance(chosen, dict) and chosen.get("id") is not None:
            return chosen
        if ctx.input is not None and ctx.input.selection is not None:
            return resolve_selection(ctx.input.selection, self._interaction(new=False))
        if not self.options:
            return None
        details = {p["id"]: str(p.get("detail", "")).lower() for p in self._products(turn)}
        return self._from_words(text, self.options, details)

    @staticmethod
    def _from_words(
        text: str, options: list[dict[str, Any]], details: dict[str, str]
    ) -> dict[str, Any] | None:
        m = _ORDINAL.search(text.lower())
        if m:
            index = len(options) - 1 if m.group(1) == "last" else None
            if m.group(1) and index is None:
                index = _ORDINALS[m.group(1)]
            if m.group(2):
                index = int(m.group(2)) - 1
            return options[index] if index is not None and 0 <= index < len(options) else None
        lowered = text.lower()
        named = [o for o in options if str(o["label"]).lower() in lowered]
        if len(named) != 1:  # the product detail ("the 2 m one") may tell them apart
            pool = named or options
            named = [o for o in pool if details.get(o["id"]) and details[o["id"]] in lowered]
        return named[0] if len(named) == 1 else None

    def _select(self, option: dict[str, Any], turn: Turn) -> Answer:
        product_id = str(option["id"])
        turn.world["catalog"]["selected"].append(product_id)
        turn.tool(
            "select_product", {"status": "selected", "productId": product_id}, product_id=product_id
        )
        self.options = None
        product = next((p for p in self._products(turn) if p["id"] == product_id), None)
        label = option.get("label") or (product["name"] if product else product_id)
        price = f" (${product['price']:.2f})" if product else ""
        return Answer(
            f"Great choice! I've recorded {label}{price} as your selection.",
            facts=[{"type": "product.selected", "productId": product_id}],
        )

    def _reask(self, why: str) -> Answer:
        options = self.options or []
        listing = ", ".join(f"{i + 1}. {o['label']}" for i, o in enumerate(options))
        return Answer(
            f"{why} Which one would you like? {listing}",
            interaction=self._interaction(new=True),
        )

    def _interaction(self, *, new: bool) -> dict[str, Any] | None:
        """The open choice as an interaction with an id (None when no choice is open)."""
        if self.options is None:
            return None
        if new:
            self.published += 1
        return {
            "id": f"product-choice-{self.published}",
            "kind": "choice",
            "options": list(self.options),
        }

    # -- searching ---------------------------------------------------------------------------
    @staticmethod
    def _products(turn: Turn) -> list[dict[str, Any]]:
        products = turn.world["catalog"].get("products")
        return list(products) if isinstance(products, list) else DEFAULT_PRODUCTS

    def _find(self, text: str, turn: Turn) -> tuple[str, list[dict[str, Any]]]:
        keywords = _keywords(text)
        query = " ".join(keywords)
        hits = [
            p
            for p in self._products(turn)
            if p.get("stock", 1) > 0
            and all(any(t.startswith(k) for t in _terms(p)) for k in keywords)
        ]
        return query, hits

    def _search(self, text: str, turn: Turn) -> Answer:
        query, hits = self._find(text, turn)
        turn.tool("search_products", [p["id"] for p in hits], query=query)
        if not hits:
            self.options = None
            return Answer(
                f"Sorry, no available products match '{query}'.",
                data={"count": 0, "reason": "no_results"},
            )
        self.options = [_option(p) for p in hits]
        lines = "\n".join(f"{i + 1}. {_line(p)}" for i, p in enumerate(hits))
        return Answer(
            f"Here are the available products:\n{lines}\nWhich one would you like?",
            data={"count": len(hits), "products": [p["id"] for p in hits]},
            interaction=self._interaction(new=True),
        )

    def _recall(self, chat: Chat, turn: Turn) -> None:
        """Rebuild the open choice from a history sent in one call (its last search)."""
        for role, text in reversed(chat[:-1]):
            if role == "user" and _SEARCH.search(text) and not _CHOOSE.search(text):
                hits = self._find(text, turn)[1]
                self.options = [_option(p) for p in hits] or None
                return


class CatalogAgent(DemoAgent):
    """Demo agent for a product catalogue: search -> choice interaction -> selection fact.

    Tools: `search_products(query)`, `select_product(product_id)`; selections are appended
    to `world["catalog"]["selected"]`; products come from `world["catalog"]["products"]`
    when the case gives them (items `{id, name, category, price, stock}`).
    """

    name = "catalog"
    session_class = _CatalogSession
    strict_input = True  # a compiled kernel agent behind the kernel's direct adapter
