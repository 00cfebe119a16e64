"""Exposures never read the day they explain; the VIF screen drops a collinear factor."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.features.tamper import tampered
from tradebench.attribution.model import build_factor_model
from tradebench.data import load_dataset
from tradebench.data.panel import Panel
from tradebench.features.style import (
    STYLE_FACTORS,
    inputs_from_panel,
    member_masks,
    style_exposures,
    view_style_exposures,
)
from tradebench.metrics.factor_model import FactorModelConfig, variance_inflation, vif_screen
from tradebench.view import MarketView

DAY = "2024-08-01"
ALL = FactorModelConfig(vif_threshold=np.inf, calibration_days=60)


@pytest.fixture(scope="module")
def panel(cn_dataset_dir: Path) -> Panel:
    return load_dataset(cn_dataset_dir).panel


def test_exposures_at_t_ignore_data_from_t_on(panel: Panel) -> None:
    row = int(np.searchsorted(panel.dates, np.datetime64(DAY)))
    fake = tampered(panel, row)
    clean = build_factor_model(panel, DAY, "2024-08-15", ALL)
    dirty = build_factor_model(fake, DAY, "2024-08-15", ALL)
    assert clean.factors == dirty.factors == STYLE_FACTORS
    np.testing.assert_array_equal(clean.exposures[:, 0], dirty.exposures[:, 0])
    assert np.isfinite(clean.exposures[:, 0]).mean() > 0.5
    # the tampering did reach the model: returns and later exposures change
    assert not np.allclose(np.nan_to_num(clean.returns[0]), np.nan_to_num(dirty.returns[0]))
    assert not np.allclose(
        np.nan_to_num(clean.exposures[:, 1]), np.nan_to_num(dirty.exposures[:, 1])
    )


def test_view_exposures_match_the_panel_path(panel: Panel) -> None:
    row = int(np.searchsorted(panel.dates, np.datetime64(DAY)))
    fake = tampered(panel, row)
    model = build_factor_model(panel, DAY, DAY, ALL)
    members = member_masks(panel, np.array([row]))[0]
    from_view = view_style_exposures(MarketView(fake, DAY))
    for k, name in enumerate(STYLE_FACTORS):
        expected = model.exposures[k, 0]
        ok = members & np.isfinite(expected)
        np.testing.assert_allclose(from_view[name][ok], expected[ok], rtol=1e-9, atol=1e-9)


def test_standardised_exposures_have_unit_scale_on_the_universe(panel: Panel) -> None:
    inputs = inputs_from_panel(panel, 0, 400)
    universe = inputs.tradable
    values = style_exposures(inputs, universe).values[:, -1]
    for k in range(values.shape[0]):
        v = values[k][universe[-1] & np.isfinite(values[k])]
        assert abs(v.mean()) < 1e-9
        assert v.std() == pytest.approx(1.0, abs=1e-9)


def test_vif_equals_one_over_one_minus_r2() -> None:
    rng = np.random.RandomState(1337)
    x = rng.normal(size=(5000, 3))
    x[:, 2] = 0.6 * x[:, 0] + 0.8 * rng.normal(size=5000)
    design = np.column_stack([np.ones(5000), x[:, :2]])
    beta = np.linalg.lstsq(design, x[:, 2], rcond=None)[0]
    resid = x[:, 2] - design @ beta
    r2 = 1 - resid.var() / x[:, 2].var()
    assert variance_inflation(x)[2] == pytest.approx(1 / (1 - r2), rel=1e-9)


def test_vif_screen_drops_a_deliberately_collinear_factor(panel: Panel) -> None:
    """Real calibration exposures plus a clone of momentum: the screen removes one of the
    pair and keeps every other factor under the threshold."""
    inputs = inputs_from_panel(panel, 0, 400)
    universe = np.zeros(inputs.tradable.shape, dtype=bool)
    universe[300:] = member_masks(panel, np.arange(301, 401)) & inputs.tradable[300:]
    exposures = style_exposures(inputs, universe).values
    cells = exposures[:, universe].T
    rng = np.random.RandomState(1337)
    clone = cells[:, 0] + 0.1 * rng.normal(size=cells.shape[0])
    names = (*STYLE_FACTORS, "momentum_clone")
    screen = vif_screen(np.column_stack([cells, clone]), names, threshold=5.0)
    dropped = [d[0] for d in screen.dropped]
    assert dropped[0] in {"momentum", "momentum_clone"}
    assert dropped[0] not in screen.kept
    assert {"momentum", "momentum_clone"} & set(screen.kept)
    assert all(v <= 5.0 for v in screen.vif.values())
    assert screen.dropped[0][1] > 50


def test_vif_screen_drops_factors_without_data() -> None:
    rng = np.random.RandomState(1337)
    x = rng.normal(size=(500, 3))
    x[:, 1] = np.nan
    screen = vif_screen(x, ("a", "b", "c"))
    assert screen.kept == ("a", "c")
    assert screen.dropped == (("b", None, "no data"),)
