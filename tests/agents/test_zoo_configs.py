"""The LightGBM-based models carry Qlib's published CSI300 Alpha158 booster values.

The numbers below are copied from Qlib's benchmark configs (examples/benchmarks/LightGBM
and DoubleEnsemble, workflow_config_*_Alpha158.yaml), not from the registry, so a changed
or dropped value in either model's defaults fails here."""

from __future__ import annotations

from tradebench.agents.factor.models import MODELS

QLIB_BOOSTER = {
    "colsample_bytree": 0.8879,
    "learning_rate": 0.2,
    "subsample": 0.8789,
    "lambda_l1": 205.6999,
    "lambda_l2": 580.9768,
    "max_depth": 8,
    "num_leaves": 210,
}


def test_lightgbm_and_double_ensemble_use_qlibs_booster_values() -> None:
    for name in ("lightgbm", "double_ensemble"):
        spec, _ = MODELS.build(name)
        params = dict(spec.params)
        assert {k: params.get(k) for k in QLIB_BOOSTER} == QLIB_BOOSTER, name
    de = dict(MODELS.build("double_ensemble")[0].params)
    assert de["epochs"] == 28 and de["decay"] == 0.5 and de["bins_sr"] == 10
