"""The cross-sectional factor model's maths: VIF screen, daily WLS, the fitted record.

Pure functions and records over arrays; `attribution.model.build_factor_model` reads the
panel and features and calls these. Definitions: `docs/attribution.md`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tradebench.features.style import STYLE_FACTORS, WEIGHT_DAYS

__all__ = [
    "CrossSectionFit",
    "FactorModel",
    "FactorModelConfig",
    "VifScreen",
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
