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


def test_a_job_uuid_is_the_clients_choice_kept_verbatim_and_the_only_field_beside_the_tasks_arguments():
    """Why a tool job's UUID names its run, agent and operator (norfab_compat.tool_job_uuid)."""
    import norfab.core.worker as worker
    from norfab.core.client import NFPClient

    assert "uuid = uuid or uuid4().hex" in inspect.getsource(NFPClient.submit_job)
    post = inspect.getsource(worker._post)
    assert 'uuid=suuid.decode("utf-8")' in post
    # the request's fields a worker keeps: task, args, kwargs, timeout (args and kwargs reach the task)
    assert {f for f in ("task", "args", "kwargs", "timeout") if f'data.get("{f}"' in post} == {
        "task",
        "args",
        "kwargs",
        "timeout",
    }
    assert post.count("data.get(") == 4
    assert "Processing job request {uuid}" in inspect.getsource(worker.NFPWorker.run_next_job)


def test_a_tool_job_uuid_names_run_agent_and_operator_in_safe_characters():
    from norfab_hermes.norfab_compat import tool_job_uuid

    first, second = tool_job_uuid("7c0a52f1d9e3", "fixer", "alice"), tool_job_uuid("7c0a52f1d9e3", "fixer", "alice")
    assert first.startswith("7c0a52f1d9e3.fixer.alice.") and first != second
    assert tool_job_uuid("r1", "a", "nfcli 1/x.y").split(".")[2] == "nfcli_1_x_y"
    assert tool_job_uuid("r1", "a", None).split(".")[2] == "none"


def test_job_list_with_a_uuid_lists_that_job_whatever_its_state_and_names_an_ended_one_completed():
    """What norfab_compat.job_pending reads: a change job a killed hermes worker left on nornir."""
    import norfab.core.worker as worker

    listing = inspect.getsource(worker.NFPWorker.job_list)
    assert "uuid=uuid" in listing and {"pending", "completed", "uuid"} <= set(
        inspect.signature(worker.NFPWorker.job_list).parameters
    )
    assert 'if job["status"] in ("COMPLETED", "FAILED"):' in listing.replace("elif", "if")
    assert 'job["status"] = "COMPLETED"' in listing
    store = next(v for v in vars(worker).values() if inspect.isclass(v) and hasattr(v, "list_jobs"))
    selecting = inspect.getsource(store.list_jobs)
    assert selecting.index("if uuid:") < selecting.index("else:") < selecting.index("if pending:")
