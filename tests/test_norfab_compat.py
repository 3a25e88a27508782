"""
Contract tests: the NorFab internals norfab_hermes.norfab_compat relies on
exist in the installed, pinned norfab with the shapes used. Run when bumping
the pin: an upgrade fails here, by name, instead of in a feature.
"""

import inspect
from importlib.metadata import version


def test_pinned_version():
    assert version("norfab") == "0.25.0"


def test_a_worker_looks_its_tasks_up_in_the_registry_by_name():
    import norfab.core.worker as worker

    assert 'NORFAB_WORKER_TASKS[task]["function"]' in inspect.getsource(worker.NFPWorker.run_next_job)
    assert isinstance(worker.NORFAB_WORKER_TASKS, dict)


def test_a_client_keeps_jobs_in_memory_and_in_a_sqlite_store():
    from norfab.core.client import NFPClient

    init = inspect.getsource(NFPClient.__init__)
    assert "self.job_futures" in init
    assert "self.job_db" in init
    from norfab.core import client as client_module

    store = next(
        v
        for k, v in vars(client_module).items()
        if inspect.isclass(v) and hasattr(v, "fetch_jobs") and hasattr(v, "_transaction")
    )
    assert "write" in inspect.signature(store._transaction).parameters
    assert {"service", "task", "last"} <= set(inspect.signature(store.fetch_jobs).parameters)
    assert "errors" in inspect.getsource(store.get_job)  # a failed job's errors, read by client_job_errors


def test_an_unknown_task_answers_one_line():
    from norfab_hermes import norfab_compat

    norfab_compat.answer_unknown_tasks("hermes")
    entry = norfab_compat.worker_tasks()["no_such_task"]
    result = entry["function"](None, job=None)
    assert result.failed
    assert result.errors == [result.messages[0]]
    assert "task 'no_such_task' is not a task of service 'hermes'" in result.errors[0]
    assert "no_such_task" not in norfab_compat.worker_tasks(), "a lookup registered the unknown task"
