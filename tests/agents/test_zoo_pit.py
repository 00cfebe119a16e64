"""The factor-model zoo trains point-in-time: rows before the evaluation window, members only.

One model per family trains with a tiny config on the real CSI300 window before
2024-07-01. Each check reads the membership file itself (the oracle) and compares it with
the exact rows the model was fitted on (`training_data`, tied to the cached model by the
digest of its training index). Tests needing a model library skip when it is absent.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tradebench.agents.factor.agent import build_ml_agent
from tradebench.agents.factor.data import TrainingConfig, index_digest
from tradebench.agents.factor.models import MODELS
from tradebench.agents.factor.training import retrain_anchor, train_or_load, training_data
from tradebench.data import load_dataset
from tradebench.data.panel import Panel
from tradebench.features.alpha import LABEL_HORIZON
from tradebench.view import MarketView

ANCHOR = "2024-07-01"
WINDOWS = TrainingConfig(train_days=40, valid_days=10)
DEEP_TINY = {"n_epochs": 1, "n_seeds": 3, "rows_per_epoch": 2000, "batch_size": 500}
FAMILIES = {
    "linear": ("ridge", "sklearn", {}),
    "boosting": ("xgboost", "xgboost", {"num_boost_round": 5, "max_depth": 3}),
    "ensemble": (
        "double_ensemble",
        "lightgbm",
        {"epochs": 4, "num_leaves": 8, "bins_fs": 2, "sample_ratios": [0.8, 0.5]}
        | {"fs_rows": 500, "lambda_l1": 0.0, "lambda_l2": 0.0},
    ),
    "sequence": ("lstm", "torch", DEEP_TINY | {"hidden_size": 8, "num_layers": 1}),
    "attention": ("alstm", "torch", DEEP_TINY | {"hidden_size": 8, "num_layers": 1}),
    "graph": (
        "gats",
        "torch",
        DEEP_TINY | {"hidden_size": 8, "num_layers": 1, "graph_days": 30},
    ),
}


def _needs(module: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        importlib.util.find_spec(module) is None,
        reason=f"needs {module}, from the zoo extra: pip install 'tradebench[zoo]'",
    )


@pytest.fixture(scope="module")
def panel(cn_dataset_dir: Path) -> Panel:
    return load_dataset(cn_dataset_dir).panel


@pytest.fixture(scope="module")
def members(shared_data: Path) -> pd.DataFrame:
    """The membership file, read here without the project's importer."""
    raw = pd.read_csv(shared_data / "universe" / "csi300_membership.csv", dtype=str)
    return pd.DataFrame(
        {
            "symbol": raw["symbol"],
            "start": pd.to_datetime(raw["opt-in"]),
            "end": pd.to_datetime(raw["opt-out"]).fillna(pd.Timestamp("2262-01-01")),
        }
    )


def _is_member(index: pd.MultiIndex, members: pd.DataFrame) -> np.ndarray:
    rows = pd.DataFrame(
        {"date": index.get_level_values("date"), "symbol": index.get_level_values("symbol")}
    ).reset_index()
    both = rows.merge(members, on="symbol", how="left")
    inside = (both["start"] <= both["date"]) & (both["date"] < both["end"])
    return inside.groupby(both["index"]).any().reindex(rows["index"], fill_value=False).to_numpy()


def test_the_data_has_bars_of_non_members_before_the_window(
    panel: Panel, members: pd.DataFrame
) -> None:
    """Precondition of the checks below: training on every tradable bar would include
    non-members (about 45% of the bars before the window)."""
    t = int(np.searchsorted(panel.dates, np.datetime64(ANCHOR)))
    r, c = np.nonzero(panel.listed[t - 60 : t] & ~panel.suspended[t - 60 : t])
    index = pd.MultiIndex.from_arrays(
        [pd.DatetimeIndex(panel.dates[t - 60 + r]), panel.symbols[c].astype(str)],
        names=["date", "symbol"],
    )
    assert (~_is_member(index, members)).mean() > 0.2


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "family",
    [pytest.param(f, marks=_needs(FAMILIES[f][1])) for f in FAMILIES],
)
def test_each_family_trains_before_the_window_on_point_in_time_members(
    family: str, panel: Panel, members: pd.DataFrame, tmp_path: Path
) -> None:
    name, _, params = FAMILIES[family]
    spec, _ = MODELS.build(name, **params)
    assert spec.family == family
    view = MarketView(panel, "2024-07-15")  # two weeks into the evaluation window
    fitted = train_or_load(view, ANCHOR, spec, WINDOWS, seed=0, cache_dir=tmp_path)
    data = training_data(view, ANCHOR, spec, WINDOWS, seed=0)
    assert fitted.meta["train_index_sha256"] == index_digest(data.train_index)
    assert fitted.meta["n_train"] == len(data.y_train) > 1000
    first = int(np.searchsorted(panel.dates, np.datetime64(ANCHOR)))
    for index in (data.train_index, data.valid_index):
        assert len(index) > 0
        days = index.get_level_values("date").to_numpy().astype("datetime64[D]")
        rows = np.searchsorted(panel.dates, days)
        assert rows.max() + LABEL_HORIZON < first  # every label's last close is before T
        assert _is_member(index, members).all()
    assert fitted.meta["windows"]["label_end"] < ANCHOR
    if spec.inputs == "sequence":
        seeds = fitted.meta["valid"]["seeds"]
        assert len(seeds) == 3 and fitted.meta["valid"]["seed_ic_std"] >= 0
        assert len(fitted.model.nets) == 3


def test_retraining_anchors_follow_the_months() -> None:
    cal = np.array(
        ["2024-07-01", "2024-07-02", "2024-07-31", "2024-08-02", "2024-08-05", "2024-09-02"],
        dtype="datetime64[D]",
    )
    first = "2024-07-01"
    assert retrain_anchor(cal[:1], "2024-07-02", first, None) == np.datetime64(first)
    assert retrain_anchor(cal[:2], "2024-07-31", first, 1) == np.datetime64(first)
    assert retrain_anchor(cal[:3], "2024-08-02", first, 1) == np.datetime64("2024-08-02")
    assert retrain_anchor(cal[:4], "2024-08-05", first, 1) == np.datetime64("2024-08-02")
    assert retrain_anchor(cal[:5], "2024-09-02", first, 1) == np.datetime64("2024-09-02")
    assert retrain_anchor(cal[:5], "2024-09-02", first, 3) == np.datetime64(first)


@_needs("sklearn")
def test_rolling_retraining_trains_before_each_retraining_day(panel: Panel, tmp_path: Path) -> None:
    agent = build_ml_agent(
        "ridge", train_days=40, valid_days=10, retrain_every=1, cache_dir=str(tmp_path)
    )
    july = agent.model_for(MarketView(panel, "2024-07-22"), ANCHOR)
    august = agent.model_for(MarketView(panel, "2024-08-12"), ANCHOR)
    due = panel.dates[np.searchsorted(panel.dates, np.datetime64("2024-08-01"))]
    assert july.meta["windows"]["first_decision_day"] == ANCHOR
    assert august.meta["windows"]["first_decision_day"] == str(due)
    assert august.key != july.key
    assert july.meta["windows"]["label_end"] < ANCHOR
    assert august.meta["windows"]["label_end"] < str(due)
    assert august.meta["windows"]["label_end"] > july.meta["windows"]["label_end"]
