"""The cross-sectional factor model behind return attribution.

Per evaluation window: style exposures from data strictly before each day
(`features.style`), a variance-inflation screen on a calibration window that ends
before the evaluation window, then one weighted least-squares regression per day

    r_i,t = f0_t + sum_k x_i,k,t-1 * lambda_k,t + e_i,t

across the investable universe (index members that trade that day), weighted by the
square root of the 20-day average traded amount. Definitions: `docs/attribution.md`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tradebench.data.panel import Panel
from tradebench.errors import ConfigError
from tradebench.features.rolling import rolling_mean
from tradebench.features.style import (
    LOOKBACK,
    STYLE_FACTORS,
    WEIGHT_DAYS,
    inputs_from_panel,
    member_masks,
    style_exposures,
)
from tradebench.view import to_day

__all__ = [
    "CrossSectionFit",
    "FactorModel",
    "FactorModelConfig",
    "VifScreen",
    "build_factor_model",
    "cross_section_wls",
    "variance_inflation",
    "vif_screen",
]


@dataclass(frozen=True)
class FactorModelConfig:
    """Knobs of the attribution factor model (defaults in `docs/attribution.md`)."""

    factors: tuple[str, ...] = STYLE_FACTORS
    """Candidate style factors, before the VIF screen."""
    vif_threshold: float = 5.0
    """Drop the worst factor while its VIF exceeds this (iteratively)."""
    calibration_days: int = 252
    """Trading days of the VIF calibration window, ending the day before the evaluation."""
    min_coverage: float = 0.5
    """A factor defined for less than this share of calibration cells is dropped first."""
    weight_days: int = WEIGHT_DAYS
    """Days of traded amount in the regression weights."""
    winsor_q: float = 0.01
    """Cross-sectional winsorisation quantile (both tails)."""
    min_names: int = 20
    """Fewer names than this in a day's sample leaves the day unfitted."""


@dataclass(frozen=True)
class VifScreen:
    """Outcome of the iterative variance-inflation screen."""

    kept: tuple[str, ...]
    """Factors kept, in candidate order."""
    vif: dict[str, float]
    """Final VIF of each kept factor."""
    dropped: tuple[tuple[str, float | None, str], ...]
    """(factor, VIF at removal or None, reason), in removal order."""
    n_obs: int
    """Complete (day, name) rows the final VIFs were computed on."""
    threshold: float


@dataclass(frozen=True)
class CrossSectionFit:
    """Daily WLS results; a day without a fit has NaN coefficients and `n_names` < min."""

    intercept: np.ndarray
    lambdas: np.ndarray
    n_names: np.ndarray
    r2: np.ndarray


@dataclass(frozen=True)
class FactorModel:
    """The fitted model of one evaluation window, by day (D) and panel column (N).

    `exposures[k, d]` is the exposure used on day d (from data before d); `returns` is the
    adjusted close-to-close return of day d; `residuals` = returns - intercept - x.lambda
    with a missing exposure or return counted as 0, so it is defined for every cell.
    `mark_returns` is the return of the raw, forward-filled close the engine marks with.
    """

    dates: np.ndarray
    symbols: np.ndarray
    factors: tuple[str, ...]
    exposures: np.ndarray
    returns: np.ndarray
    mark_returns: np.ndarray
    residuals: np.ndarray
    fit: CrossSectionFit
    screen: VifScreen
    calibration: tuple[str | None, str | None]
    amount_source: str
    config: FactorModelConfig = field(default_factory=FactorModelConfig)

    def factor_returns(self) -> pd.DataFrame:
        """Daily intercept, factor returns, sample size and R², indexed by `date`."""
        frame = pd.DataFrame(self.fit.lambdas, columns=list(self.factors))
        frame.insert(0, "intercept", self.fit.intercept)
        frame["n_names"] = self.fit.n_names
        frame["r2"] = self.fit.r2
        frame.index = pd.DatetimeIndex(self.dates, name="date")
        return frame


def variance_inflation(matrix: np.ndarray) -> np.ndarray:
    """VIF of each column: 1 / (1 - R²) of the column on all others plus an intercept.

    Equal to the diagonal of the inverse correlation matrix; inf for an exact linear
    combination. `matrix` is (rows, K) without NaN.
    """
    if matrix.shape[1] == 1:
        return np.ones(1)
    corr = np.corrcoef(matrix, rowvar=False)
    try:
        return np.diag(np.linalg.inv(corr)).copy()
    except np.linalg.LinAlgError:
        return np.full(matrix.shape[1], np.inf)


def vif_screen(
    matrix: np.ndarray,
    names: tuple[str, ...],
    threshold: float = 5.0,
    min_coverage: float = 0.5,
) -> VifScreen:
    """Drop factors one at a time, highest VIF first, until every VIF <= `threshold`.

    `matrix` is (rows, K) pooled calibration exposures (NaN allowed). Factors defined for
    under `min_coverage` of the rows, or constant, go first with reason `no data`; VIFs
    use the rows complete in the remaining factors.
    """
    finite = np.isfinite(matrix)
    dropped: list[tuple[str, float | None, str]] = []
    keep = []
    for k, name in enumerate(names):
        col = matrix[finite[:, k], k]
        if finite[:, k].mean() < min_coverage or col.size < 2 or np.ptp(col) == 0:
            dropped.append((name, None, "no data"))
        else:
            keep.append(k)
    while True:
        rows = finite[:, keep].all(axis=1)
        if not keep or rows.sum() <= len(keep) + 1:
            vif = np.full(len(keep), np.nan)
            break
        vif = variance_inflation(matrix[np.ix_(rows, keep)])
        worst = int(np.argmax(np.where(np.isfinite(vif), vif, np.inf)))
        if len(keep) == 1 or vif[worst] <= threshold:
            break
        dropped.append((names[keep[worst]], float(vif[worst]), "vif"))
        keep.pop(worst)
    kept = tuple(names[k] for k in keep)
    n_obs = int(finite[:, keep].all(axis=1).sum()) if keep else 0
    return VifScreen(
        kept=kept,
        vif={n: float(v) for n, v in zip(kept, vif, strict=True)},
        dropped=tuple(dropped),
        n_obs=n_obs,
        threshold=threshold,
    )


def cross_section_wls(
    returns: np.ndarray,
    exposures: np.ndarray,
    weights: np.ndarray,
    sample: np.ndarray,
    min_names: int = 20,
) -> CrossSectionFit:
    """One weighted least-squares regression per day, all days at once.

    Args:
        returns: (D, N) returns; exposures: (K, D, N); weights: (D, N) regression weights;
        sample: (D, N) names eligible that day (complete rows are used).
        min_names: fewer complete rows than this (or than K + 2) leaves the day unfitted.
    """
    k, days, _ = exposures.shape
    design = np.concatenate([np.ones((1, *returns.shape)), exposures]).transpose(1, 2, 0)
    ok = sample & np.isfinite(returns) & np.isfinite(weights) & (weights > 0)
    ok &= np.isfinite(design).all(axis=2)
    w = np.where(ok, weights, 0.0)
    x = np.where(ok[..., None], design, 0.0)
    y = np.where(ok, returns, 0.0)
    xtw = (x * w[..., None]).transpose(0, 2, 1)
    gram, rhs = xtw @ x, (xtw @ y[..., None])[..., 0]
    n_names = ok.sum(axis=1)
    beta = np.full((days, k + 1), np.nan)
    fit_days = np.flatnonzero(n_names >= max(min_names, k + 2))
    for d in fit_days:  # tiny (K+1)-square systems; lstsq survives a singular day
        beta[d] = np.linalg.lstsq(gram[d], rhs[d], rcond=None)[0]
    fitted = np.einsum("dnk,dk->dn", x, np.nan_to_num(beta))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (w * y).sum(axis=1) / w.sum(axis=1)
        ss_res = (w * (y - fitted) ** 2).sum(axis=1)
        ss_tot = (w * (y - mean[:, None]) ** 2 * ok).sum(axis=1)
        r2 = np.where(np.isfinite(beta[:, 0]), 1.0 - ss_res / ss_tot, np.nan)
    return CrossSectionFit(intercept=beta[:, 0], lambdas=beta[:, 1:], n_names=n_names, r2=r2)


def _day_rows(panel: Panel, start: str, end: str) -> np.ndarray:
    days = np.flatnonzero((panel.dates >= to_day(start)) & (panel.dates <= to_day(end)))
    if days.size == 0:
        raise ConfigError(f"no trading days between {start} and {end} in this dataset")
    if days[0] == 0:
        raise ConfigError(f"{start} is the dataset's first day: attribution needs history")
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
