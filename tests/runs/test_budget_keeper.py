"""The cluster budget frees what a dead worker process held (no Ray needed: the keeper's
body is a plain class; the Ray tests drive it through a real cluster)."""

from __future__ import annotations

import pytest

from tradebench.llm.budget import BudgetConfig, BudgetExceeded
from tradebench.llm.types import ModelConfig, Usage
from tradebench.runs.ray.services import BudgetKeeper, Holder

MODEL = ModelConfig(provider="openai", model="m")
WORST = Usage(input_tokens=10, output_tokens=90)  # 100 tokens held per call in flight
USED = Usage(input_tokens=10, output_tokens=20)


def test_a_restarted_workers_first_call_frees_its_dead_process_holds() -> None:
    keeper = BudgetKeeper(BudgetConfig(max_tokens=250), None)
    dead = Holder(slot=0, process="first")
    keeper.reserve(MODEL, WORST, dead)
    keeper.reserve(MODEL, WORST, dead)  # both in flight when the process is killed
    with pytest.raises(BudgetExceeded):
        keeper.reserve(MODEL, WORST, Holder(slot=1, process="other"))  # 300 > 250
    assert keeper.in_flight() == {0: (2, 200), 1: (0, 0)}  # a refused call holds nothing
    # Ray restarts slot 0: the new process's first call frees the two dead holds
    keeper.reserve(MODEL, WORST, Holder(slot=0, process="second"))
    assert keeper.freed == [(0, 2, 200)]
    assert keeper.in_flight() == {0: (1, 100), 1: (0, 0)}
    keeper.reserve(MODEL, WORST, Holder(slot=1, process="other"))  # 200 <= 250 now fits


def test_a_late_settle_from_a_replaced_process_charges_and_frees_nothing_twice() -> None:
    keeper = BudgetKeeper(BudgetConfig(max_tokens=1000), None)
    old, new = Holder(0, "old"), Holder(0, "new")
    held = keeper.reserve(MODEL, WORST, old)
    keeper.reserve(MODEL, WORST, new)  # frees old's hold
    keeper.settle(MODEL, held, USED, old)  # the old process was alive after all
    assert keeper.in_flight() == {0: (1, 100)}  # new's hold is intact
    spent = keeper.budget.snapshot()
    assert spent.calls == 1 and spent.input_tokens + spent.output_tokens == 30
    # the cap sees 30 spent + 100 held: 8 more holds of 100 fit, a ninth does not
    for _ in range(8):
        keeper.reserve(MODEL, WORST, new)
    with pytest.raises(BudgetExceeded):
        keeper.reserve(MODEL, WORST, new)


def test_release_all_frees_holds_of_slots_that_never_called_again() -> None:
    keeper = BudgetKeeper(BudgetConfig(max_tokens=1000), None)
    keeper.reserve(MODEL, WORST, Holder(3, "dead"))
    held = keeper.reserve(MODEL, WORST, Holder(4, "alive"))
    keeper.settle(MODEL, held, USED, Holder(4, "alive"))
    assert keeper.release_all() == [(3, 1, 100)]
    assert keeper.in_flight() == {}
    keeper.reserve(MODEL, Usage(input_tokens=0, output_tokens=970), None)  # all but 30 free
