"""The suite's xdist groups take effect: under `-n N` every test carries its group in its node
id, which is what `--dist loadgroup` schedules by (tests/conftest.py gives each module a
group, and the local-model tests one group together, so two model servers never share the
cores). pytest 9.2 with pytest-xdist 3.8 drops the suffix silently (pytest-xdist issue
1386) and the tests scatter; the test extra pins pytest below 9.2 until that is fixed."""

from __future__ import annotations

import os

import pytest


def test_this_test_is_scheduled_with_its_module(request: pytest.FixtureRequest) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("the groups are pytest-xdist's: this runs only under `-n N`")
    if not request.config.getvalue("loadgroup"):
        pytest.skip("the groups are scheduled only by `--dist loadgroup` (set in pyproject)")
    nodeid = request.node.nodeid
    assert nodeid.endswith("@tests/test_xdist_groups.py"), (
        f"pytest-xdist did not group this test ({nodeid}, pytest {pytest.__version__}): "
        "with pytest 9.2 `--dist loadgroup` ignores every group"
    )
