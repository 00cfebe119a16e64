"""A-share codes in the spellings of each library and ours (`SH600519`)."""

from __future__ import annotations

import re

from tradebench.errors import ConfigError

_SPELLINGS = (
    re.compile(r"^(?P<ex>sh|sz|bj)\.?(?P<code>\d{6})$", re.IGNORECASE),  # sh.600519, SH600519
    re.compile(r"^(?P<code>\d{6})\.(?P<ex>sh|sz|bj|ss)$", re.IGNORECASE),  # 600519.SH
    re.compile(r"^(?P<code>\d{6})$"),  # 600519
)


def exchange_of(code: str) -> str:
    """Exchange of a bare 6-digit A-share code: 6xxxxx SH, 0/3xxxxx SZ, 4/8/92xxxx BJ."""
    if code.startswith("6"):
        return "SH"
    if code.startswith(("0", "3")):
        return "SZ"
    if code.startswith(("4", "8", "92")):
        return "BJ"
    raise ConfigError(
        f"cannot tell the exchange of A-share code {code!r}; write it as SH/SZ/BJ+code"
    )


def cn_symbol(text: str) -> str:
    """Our symbol (`SH600519`) from `600519`, `sh.600519`, `SH600519` or `600519.SH`."""
    value = str(text).strip()
    for pattern in _SPELLINGS:
        match = pattern.match(value)
        if match:
            code = match["code"]
            ex = match.groupdict().get("ex")
            ex = "SH" if ex and ex.lower() == "ss" else (ex.upper() if ex else exchange_of(code))
            return f"{ex}{code}"
    raise ConfigError(f"{text!r} is not an A-share code (e.g. 600519, sh.600519, SH600519)")


def baostock_code(symbol: str) -> str:
    """baostock's spelling (`sh.600519`); baostock serves Shanghai and Shenzhen only."""
    ours = cn_symbol(symbol)
    if ours.startswith("BJ"):
        raise ConfigError(f"baostock has no Beijing exchange data ({ours}); use --source akshare")
    return f"{ours[:2].lower()}.{ours[2:]}"


def bare_code(symbol: str) -> str:
    """akshare's spelling of a stock or index: the 6 digits (`600519`, `000300`)."""
    return cn_symbol(symbol)[2:]
