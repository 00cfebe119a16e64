"""The cross-sectional factor model behind return attribution.

Per evaluation window: style exposures from data strictly before each day
(`features.style`), a variance-inflation screen on a calibration window that ends
before the evaluation window, then one weighted least-squares regression per day

    r_i,t = f0_t + sum_k x_i,k,t-1 * lambda_k,t + e_i,t

across the investable universe (index members that trade that day), weighted by the
square root of the 20-day average traded amount. Definitions: `docs/attribution.md`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tradebench.data.panel import Panel
from tradebench.errors import ConfigError
from tradebench.features.rolling import rolling_mean
from tradebench.features.style import LOOKBACK, inputs_from_panel, member_masks, style_exposures
from tradebench.metrics.factor_model import (
    FactorModel,
    FactorModelConfig,
    VifScreen,
    cross_section_wls,
    vif_screen,
)
from tradebench.view import to_day

__all__ = ["build_factor_model"]


def _day_rows(panel: Panel, start: str, end: str) -> np.ndarray:
    days = np.flatnonzero((panel.dates >= to_day(start)) & (panel.dates <= to_day(end)))
    if days.size == 0:
        raise ConfigError(f"no trading days between {start} and {end} in this dataset")
    if days[0] == 0:
        first = str(panel.dates[0])
        when = "on" if to_day(start) == panel.dates[0] else "before"
        raise ConfigError(
            f"the window {start} .. {end} starts {when} the dataset's first day {first}: "
            f"attribution needs a day of history before the window; start it after {first}"
        )
    return days


def _close_returns(panel: Panel, days: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Adjusted close-to-close returns and raw forward-filled mark returns of `days`."""
    adj = panel.adjusted["adj_close"]
    marks = pd.DataFrame(panel.fields["close"][: days[-1] + 1]).ffill().to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        ret = adj[days] / adj[days - 1] - 1.0
        mark = marks[days] / marks[days - 1] - 1.0
    return ret, np.where(np.isfinite(mark), mark, 0.0)


def _regression_weights(amount: np.ndarray, tradable: np.ndarray, days: int) -> np.ndarray:
    """sqrt of the mean traded amount over the `days` rows up to each row (tradable rows)."""
    traded = np.where(tradable & (amount > 0), amount, np.nan)
    return np.sqrt(rolling_mean(traded, days, max(days // 2, 1)))


def _screen(
    exposures: np.ndarray, universe: np.ndarray, rows: np.ndarray, config: FactorModelConfig
) -> VifScreen:
    """VIF screen on the pooled universe cells of the calibration rows."""
    cells = universe[rows]
    matrix = exposures[:, rows][:, cells].T
    return vif_screen(matrix, config.factors, config.vif_threshold, config.min_coverage)


def build_factor_model(
    panel: Panel, start: str, end: str, config: FactorModelConfig | None = None
) -> FactorModel:
    """Screen on the calibration window, then regress every trading day of [start, end].

    Raises:
        ConfigError: the window has no trading days or starts on the dataset's first day.
    """
    config = config or FactorModelConfig()
    days = _day_rows(panel, start, end)
    calib = np.arange(max(int(days[0]) - config.calibration_days, 1), int(days[0]))
    needed = np.concatenate([calib, days])
    lo = max(int(needed[0]) - 1 - LOOKBACK - config.weight_days, 0)
    inputs = inputs_from_panel(panel, lo, int(days[-1]))
    row = needed - 1 - lo  # input row holding the data through the day before each day
    universe = np.zeros(inputs.adj_close.shape, dtype=bool)
    universe[row] = member_masks(panel, needed) & inputs.tradable[row]
    exposures = style_exposures(inputs, universe, config.factors, config.winsor_q).values
    screen = _screen(exposures, universe, row[: calib.size], config)
    kept = [config.factors.index(f) for f in screen.kept]
    x = exposures[kept][:, row[calib.size :]]
    weights = _regression_weights(inputs.amount, inputs.tradable, config.weight_days)
    ret, mark = _close_returns(panel, days)
    sample = member_masks(panel, days) & panel.listed[days] & ~panel.suspended[days]
    fit = cross_section_wls(ret, x, weights[row[calib.size :]], sample, config.min_names)
    explained = np.einsum("kdn,dk->dn", np.nan_to_num(x), np.nan_to_num(fit.lambdas))
    resid = np.nan_to_num(ret) - np.nan_to_num(fit.intercept)[:, None] - explained
    calibration = (
        (str(panel.dates[calib[0]]), str(panel.dates[calib[-1]])) if calib.size else (None, None)
    )
    return FactorModel(
        dates=panel.dates[days],
        symbols=panel.symbols,
        factors=screen.kept,
        exposures=x,
        returns=ret,
        mark_returns=mark,
        residuals=resid,
        fit=fit,
        screen=screen,
        calibration=calibration,
        amount_source=inputs.amount_source,
        config=config,
    )
