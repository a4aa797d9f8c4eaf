"""Work done while the C compiler runs (nbgraph.linkers.meanwhile)."""

import pytest

from nbgraph.linkers import meanwhile


def test_tasks_run_once_in_order_when_the_block_ends_without_a_compiler():
    done = []
    with meanwhile.tasks(lambda: done.append(1), lambda: done.append(2)):
        assert done == []
    assert done == [1, 2]


def test_tasks_run_where_the_build_calls_run_and_not_again():
    done = []
    with meanwhile.tasks(lambda: done.append(1)):
        meanwhile.run()  # (what a build does once its compilers are started)
        assert done == [1]
        meanwhile.run()
    assert done == [1]


def test_an_error_of_a_task_is_raised_when_the_block_ends():
    def fail():
        raise ValueError("the task failed")

    after = []
    with pytest.raises(ValueError, match="the task failed"):
        with meanwhile.tasks(fail, lambda: after.append(1)):
            meanwhile.run()
            after.append(0)  # the block goes on (the compilers are waited for)
    assert after == [0]  # a task after a failed one does not run


def test_nothing_runs_when_the_block_raises():
    done = []
    with pytest.raises(KeyError):
        with meanwhile.tasks(lambda: done.append(1)):
            raise KeyError("x")
    assert done == []
    meanwhile.run()
    assert done == []
