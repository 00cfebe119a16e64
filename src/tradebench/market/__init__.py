"""Market rules, orders and actions, the broker and the account ledger."""

from tradebench.market.orders import Action, Order, RejectCode
from tradebench.market.rules import MarketRules

__all__ = ["Action", "MarketRules", "Order", "RejectCode"]
