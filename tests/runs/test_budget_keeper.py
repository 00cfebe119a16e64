"""The cluster budget's leases: the caps hold over every lease, leases shrink near a cap,
and what a dead worker process held is freed (no Ray needed: the keeper's body is a plain
class; the Ray tests drive it through a real cluster)."""

from __future__ import annotations

import pytest

from tradebench.llm.budget import BudgetConfig, BudgetExceeded, Reservation
from tradebench.llm.types import ModelConfig, Usage
from tradebench.runs.ray.services import LEASE_CALLS, BudgetKeeper, Holder

MODEL = ModelConfig(provider="openai", model="m")
WORST = Usage(input_tokens=10, output_tokens=90)  # 100 tokens held per call in flight
USED = Usage(input_tokens=10, output_tokens=20)
NOTHING = Reservation(tokens=0, cost_usd=0.0)


def test_a_lease_covers_several_calls_while_the_cap_is_far() -> None:
    keeper = BudgetKeeper(BudgetConfig(max_tokens=1_000_000), None)
    lent = keeper.lease(Holder(0, "a"), MODEL, WORST, NOTHING)
    assert lent.tokens == LEASE_CALLS * WORST.total
    assert keeper.in_flight() == {0: (1, LEASE_CALLS * WORST.total)}


def test_leases_shrink_near_the_cap_and_never_cross_it() -> None:
    cap = 1000
    keeper = BudgetKeeper(BudgetConfig(max_tokens=cap), None)
    holders = [Holder(i, f"p{i}") for i in range(4)]
    lent = [keeper.lease(h, MODEL, WORST, NOTHING) for h in holders]
    assert all(WORST.total <= x.tokens < LEASE_CALLS * WORST.total for x in lent)
    assert sum(x.tokens for x in lent) <= cap  # every lease comes out of the one cap
    # each holder spends its lease call by call, reporting 30 tokens a call, renewing as
    # it runs short, until the keeper refuses: never more than the cap is spent
    local = {h: x.tokens for h, x in zip(holders, lent, strict=True)}
    refused: set[Holder] = set()
    while len(refused) < len(holders):
        for h in holders:
            if h in refused:
                continue
            if local[h] < WORST.total:
                try:
                    local[h] = keeper.lease(
                        h, MODEL, WORST, Reservation(tokens=local[h], cost_usd=0)
                    ).tokens
                except BudgetExceeded:
                    refused.add(h)
                    local[h] = 0
                    continue
            keeper.report(h, [(MODEL, USED)])
            local[h] -= USED.total
    spent = keeper.snapshot()
    assert spent.input_tokens + spent.output_tokens <= cap
    # the last refusal came once everyone else had given back: less than one worst case
    # (plus one call's leftover per holder) is left unspent
    assert spent.input_tokens + spent.output_tokens > cap - WORST.total - 4 * USED.total
    assert keeper.budget.headroom()[0] == cap - (spent.input_tokens + spent.output_tokens)


def test_a_restarted_workers_first_lease_frees_its_dead_process_lease() -> None:
    keeper = BudgetKeeper(BudgetConfig(max_tokens=10_000), None)
    dead = Holder(slot=0, process="first")
    held = keeper.lease(dead, MODEL, WORST, NOTHING).tokens
    keeper.report(dead, [(MODEL, USED)])  # one call done, the rest unspent when killed
    assert keeper.in_flight() == {0: (1, held - USED.total)}
    # Ray restarts slot 0: the new process's first lease frees what the dead one held
    keeper.lease(Holder(slot=0, process="second"), MODEL, WORST, NOTHING)
    assert keeper.freed == [(0, 1, held - USED.total)]
    spent = keeper.snapshot()
    assert spent.calls == 1 and spent.input_tokens + spent.output_tokens == USED.total


def test_a_late_report_from_a_replaced_process_charges_and_frees_nothing_twice() -> None:
    keeper = BudgetKeeper(BudgetConfig(max_tokens=1000), None)
    old, new = Holder(0, "old"), Holder(0, "new")
    keeper.lease(old, MODEL, WORST, NOTHING)
    lent = keeper.lease(new, MODEL, WORST, NOTHING)  # frees old's lease
    keeper.report(old, [(MODEL, USED)])  # the old process was alive after all
    assert keeper.in_flight() == {0: (1, lent.tokens)}  # new's lease is intact
    spent = keeper.snapshot()
    assert spent.calls == 1 and spent.input_tokens + spent.output_tokens == USED.total
    assert keeper.budget.headroom()[0] == 1000 - USED.total - lent.tokens


def test_release_all_frees_leases_of_processes_that_never_gave_back() -> None:
    keeper = BudgetKeeper(BudgetConfig(max_tokens=10_000), None)
    dead = keeper.lease(Holder(3, "dead"), MODEL, WORST, NOTHING)
    alive = Holder(4, "alive")
    lent = keeper.lease(alive, MODEL, WORST, NOTHING)
    keeper.report(alive, [(MODEL, USED)])
    keeper.give_back(alive, Reservation(tokens=lent.tokens - USED.total, cost_usd=0.0))
    assert keeper.release_all() == [(3, 1, dead.tokens)]
    assert keeper.in_flight() == {}
    assert keeper.budget.headroom()[0] == 10_000 - USED.total  # all but the spend is free


def test_a_cost_cap_is_leased_like_tokens() -> None:
    priced = BudgetConfig(
        max_cost_usd=1.0, prices={"openai:m": {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}}
    )
    keeper = BudgetKeeper(priced, None)
    keeper.require_price(MODEL)
    lent = keeper.lease(Holder(0, "a"), MODEL, WORST, NOTHING)  # a call: $0.10 at worst
    # the first call, then half of the $0.90 left: 4.5 more calls' worth
    assert lent.cost_usd == pytest.approx(0.55) and lent.tokens == 550
    assert keeper.budget.headroom()[1] == pytest.approx(0.45)
