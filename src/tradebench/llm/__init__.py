"""The model layer: one `ChatModel` protocol over OpenAI-compatible and Anthropic endpoints,
with a content-addressed cache (readwrite / replay / off), token and cost budgets,
per-endpoint rate limits, retries with backoff, and redaction of credentials.

Provider SDKs are imported only when a provider is used.
"""

from tradebench.llm.base import ChatModel, get_model, provider, registered_providers
from tradebench.llm.budget import Budget, BudgetConfig, BudgetState, Price
from tradebench.llm.cache import CacheMode, ResponseCache
from tradebench.llm.limits import Limits, RateLimiter
from tradebench.llm.retry import FaultStats, RetryPolicy
from tradebench.llm.types import (
    CallFaults,
    ChatResponse,
    Message,
    ModelConfig,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
)

__all__ = [
    "Budget",
    "BudgetConfig",
    "BudgetState",
    "CacheMode",
    "CallFaults",
    "ChatModel",
    "ChatResponse",
    "FaultStats",
    "Limits",
    "Message",
    "ModelConfig",
    "Price",
    "RateLimiter",
    "ResponseCache",
    "RetryPolicy",
    "ToolCall",
    "ToolChoice",
    "ToolSpec",
    "Usage",
    "get_model",
    "provider",
    "registered_providers",
]
