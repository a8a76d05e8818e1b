"""The one ordered thread map of the package (fill, simulator, dense solve)."""

import threading

import pytest

from dynosed_sym.kernels.threads import map_ordered


@pytest.mark.parametrize("workers", [0, 1, 2, 3, 8])
def test_results_in_item_order_whatever_the_workers(workers):
    items = list(range(23))
    assert list(map_ordered(lambda x: x * x, items, workers)) == [x * x for x in items]


def test_one_worker_runs_on_the_calling_thread():
    caller = threading.get_ident()
    assert set(map_ordered(lambda _: threading.get_ident(), range(5), 1)) == {caller}


def test_an_exception_in_a_part_reaches_the_caller():
    def fn(x):
        if x == 3:
            raise ValueError("part 3")
        return x

    with pytest.raises(ValueError, match="part 3"):
        list(map_ordered(fn, range(6), 2))
