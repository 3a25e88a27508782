"""
Contract tests: the Hermes internals norfab_hermes.worker.hermes.compat relies on exist in
the installed, pinned hermes-agent with the shapes we use. Run when bumping
the pin. Each check runs in a fresh interpreter: Hermes freezes HERMES_HOME
at import and must never be imported into the pytest process that forks
NorFab workers.
"""

import sqlite3
import subprocess
import sys
import textwrap

import pytest


def in_fresh_hermes(tmp_path, code: str) -> str:
    script = (
        textwrap.dedent(
            f"""
        import os, sys
        os.environ["HERMES_HOME"] = {str(tmp_path)!r}
        sys.stdout = sys.stderr  # Hermes may print; keep stdout for the answer
        from norfab_hermes.worker.hermes import compat, metering, patches
        patches.import_hermes()
        out = []
        """
        )
        + textwrap.dedent(code)
        + "\nprint('\\n'.join(map(str, out)), file=sys.__stdout__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_pinned_version():
    from importlib.metadata import version

    from norfab_hermes.worker.hermes.compat import HERMES_VERSION

    assert version("hermes-agent") == HERMES_VERSION


@pytest.mark.parametrize(
    "check",
    [
        # the runner subclass wraps _run_agent, called with keyword session_key
        "import inspect, gateway.run as g; out.append('session_key' in inspect.signature(g.GatewayRunner._run_agent).parameters)",
        # per-profile adapters, running agents, session DB, turn executor
        "from gateway.run import GatewayRunner; src = open(GatewayRunner.__init__.__code__.co_filename).read(); "
        "out.append(all(a in src for a in ('self._profile_adapters', 'self._running_agents', 'self._session_db', '_executor_lock')))",
        "import gateway.run as g; out.append(callable(g._profile_runtime_scope) and callable(g.arm_shutdown_watchdog))",
        "from agent.ssl_guard import verify_ca_bundle; out.append(callable(verify_ca_bundle))",
        "import run_agent, inspect; src = inspect.getsource(run_agent.AIAgent._vprint); out.append('suppress_status_output' in src)",
        "from agent.agent_init import init_agent; import inspect; out.append('tool_delay' in inspect.signature(init_agent).parameters)",
        "import toolsets; out.append(callable(toolsets.create_custom_toolset))",
        "from tools.registry import registry; import inspect; out.append('dynamic_schema_overrides' in inspect.signature(registry.register).parameters)",
        # the adapter's hooks: the gateway calls send_exec_approval when an adapter defines it
        "import inspect, gateway.run as g; from gateway.platforms.base import BasePlatformAdapter as B; "
        "out.append(hasattr(B, 'send_clarify') and hasattr(B, 'on_processing_complete') "
        "and 'self._active_sessions' in inspect.getsource(B.__init__) and 'send_exec_approval' in inspect.getsource(g))",
        "from tools.clarify_gateway import resolve_gateway_clarify; from tools.approval import resolve_gateway_approval; out.append(True)",
        "from gateway.session import SessionStore; out.append(all(hasattr(SessionStore, m) for m in ('switch_session', 'peek_session_id')))",
        # cut turns: the clean-shutdown marker stops the resume marking; pending flags can be cleared
        "import inspect, gateway.run as g; src = inspect.getsource(g.GatewayRunner.start); "
        "out.append('.clean_shutdown' in src and 'suspend_recently_active' in src and '_schedule_resume_pending_sessions' in src)",
        "from gateway.session import SessionStore as S; "
        "out.append(all(hasattr(S, m) for m in ('clear_resume_pending', 'list_sessions', 'append_to_transcript')))",
        # provider keys served from memory; request dumps switched off; provider errors reported to plugins
        "import inspect, agent.secret_scope as s, cron.scheduler as c; "
        "out.append(callable(s.build_profile_secret_scope) and 'build_profile_secret_scope' in inspect.getsource(c))",
        "import run_agent; out.append(callable(run_agent.AIAgent._dump_api_request_debug))",
        "from hermes_cli.plugins import VALID_HOOKS; out.append('api_request_error' in VALID_HOOKS)",
        # per-profile iteration budgets: the gateway reads the budget through one module function
        "import inspect, gateway.run as g; out.append(callable(g._current_max_iterations) "
        "and 'max_iterations = _current_max_iterations()' in inspect.getsource(g.GatewayRunner._run_agent_inner))",
        # interrupt aborts the request's sockets through _iter_pool_sockets; clients send through mounts
        "import inspect, run_agent, agent.agent_runtime_helpers as h; "
        "out.append('_iter_pool_sockets(client)' in inspect.getsource(h.force_close_tcp_sockets) "
        "and 'mounts=' in inspect.getsource(run_agent.AIAgent._build_keepalive_http_client))",
        # cron: scheduled jobs run through the host; grace, clock, prompt and silence are Hermes'
        "import inspect, cron.scheduler as s; src = inspect.getsource(s.run_one_job); "
        "out.append('run_job(' in src and 'defer_agent_teardown=' in src and callable(s._build_job_prompt) "
        "and callable(s._is_cron_silence_response) and 'sync' in inspect.signature(s.tick).parameters)",
        # the cron pool's size comes from HERMES_CRON_MAX_PARALLEL, read at each tick (cron.size_pool)
        "import inspect, cron.scheduler as s; out.append('os.getenv(\"HERMES_CRON_MAX_PARALLEL\"' in inspect.getsource(s.tick))",
        "import cron.jobs as j; out.append(all(callable(getattr(j, f)) for f in ('_compute_grace_seconds', '_hermes_now', "
        "'use_cron_store', 'resolve_job_ref', 'compute_next_run', 'trigger_job', 'pause_job', 'resume_job')))",
        # a sixth cron field counts seconds (tests and the demo schedule every few seconds)
        "import cron.jobs as j; s = j.parse_schedule('* * * * * */5'); out.append(s['kind'] == 'cron')",
        # delegations run inside the turn where the channel declares it takes nothing afterwards
        "import inspect, gateway.run as g, tools.delegate_tool as d; "
        "out.append('async_delivery=' in inspect.getsource(g.GatewayRunner._set_session_env) "
        "and 'async_delivery_supported()' in inspect.getsource(d.delegate_task))",
        # subagents run on Hermes' daemon pool
        "import inspect, tools.delegate_tool as d; out.append('DaemonThreadPoolExecutor(' in inspect.getsource(d))",
        # TLS contexts are shared: callers look the resolver up in its module at call time
        "import inspect, agent.ssl_verify as v, agent.agent_runtime_helpers as h; "
        "out.append(list(inspect.signature(v.resolve_httpx_verify).parameters) == ['ca_bundle', 'ssl_verify', 'base_url'] "
        "and 'from agent.ssl_verify import resolve_httpx_verify' in inspect.getsource(h))",
        # the config's private copies: load_config is the read-only cache, deep-copied
        "import inspect, hermes_cli.config as c; out.append(callable(c.load_config_readonly) "
        "and 'copy.deepcopy(cached[4]) if want_deepcopy' in inspect.getsource(c._load_config_impl))",
        # the per-turn status write goes through one method, which only writes active_agents
        "import inspect, gateway.run as g; src = inspect.getsource(g.GatewayRunner._persist_active_agents); "
        "out.append('write_runtime_status(active_agents=' in src and inspect.getsource(g).count('write_runtime_status(active_agents=') == 1)",
        # replies leave when the agent finishes: the two 50 ms polls, found by their function names
        "import inspect, gateway.run as g, gateway.stream_consumer as s; "
        "inner = inspect.getsource(g.GatewayRunner._run_agent_inner); run = inspect.getsource(s.GatewayStreamConsumer.run); "
        "out.append('async def _start_stream_consumer' in inner and 'for _ in range(200)' in inner "
        "and inner.count('await asyncio.sleep(0.05)') >= 1 and run.count('await asyncio.sleep(0.05)') == 1 "
        "and 'self._queue.put(_DONE)' in inspect.getsource(inspect.unwrap(s.GatewayStreamConsumer.finish)))",
        # session commits wait for the OS, not the disk: the session database's connections pass
        # through apply_wal_with_fallback, which this module calls by its global name
        "import inspect, hermes_state as h; out.append(callable(h.apply_wal_with_fallback) "
        "and 'apply_wal_with_fallback(self._conn' in inspect.getsource(h.SessionDB.__init__))",
        # a served profile's budget is read from the turn's Hermes home
        "import hermes_constants as c; out.append(callable(c.get_hermes_home))",
        # the log split finds Hermes' queue handler by its marker
        "import logging, hermes_logging; hermes_logging.setup_logging(mode='gateway'); "
        "out.append(any(getattr(h, '_hermes_queue', False) for h in logging.getLogger().handlers))",
    ],
)
def test_hermes_internals_used_by_compat(tmp_path, check):
    assert in_fresh_hermes(tmp_path, f"{check}\n") == "True"


def test_shutdown_watchdog_is_disarmed(tmp_path):
    out = in_fresh_hermes(
        tmp_path,
        """
        import threading, gateway.run as g
        done = threading.Event()
        g.arm_shutdown_watchdog(0.01, done_event=done, exit_code=1)
        import time; time.sleep(0.2)
        out.append("alive")
        """,
    )
    assert out == "alive"


def test_a_provider_key_reaches_the_secret_scope_from_memory(tmp_path):
    out = in_fresh_hermes(
        tmp_path,
        """
        from pathlib import Path
        import agent.secret_scope as s
        patches.serve_profile_secrets(lambda home: {"NF_KEY": "from-memory"})
        out.append(s.build_profile_secret_scope(Path(os.environ["HERMES_HOME"]))["NF_KEY"])
        """,
    )
    assert out == "from-memory"


def test_work_on_hermes_pools_keeps_the_submitters_context(tmp_path):
    out = in_fresh_hermes(
        tmp_path,
        """
        from gateway.session_context import async_delivery_supported, declare_stateless_channel, get_session_env, set_session_vars
        from tools.daemon_pool import DaemonThreadPoolExecutor
        set_session_vars(session_key="agent:norfab:dm:chat-1")
        declare_stateless_channel()
        with DaemonThreadPoolExecutor(max_workers=1) as pool:
            out.append(pool.submit(get_session_env, "HERMES_SESSION_KEY").result())
            out.append(pool.submit(async_delivery_supported).result())
        """,
    )
    assert out.splitlines() == ["agent:norfab:dm:chat-1", "False"]


def test_one_tls_context_serves_every_client_and_config_copies_stay_private(tmp_path):
    out = in_fresh_hermes(
        tmp_path,
        """
        import agent.ssl_verify as v, hermes_cli.config as c, hermes_cli.runtime_provider as r
        first, second = v.resolve_httpx_verify(), v.resolve_httpx_verify(ca_bundle=None)
        out.append(first is second and first.__class__.__name__ == "SSLContext")
        out.append(v.resolve_httpx_verify(ssl_verify=False) is False)
        copy = r.load_config()
        copy["model"] = "changed"
        out.append(r.load_config is c.load_config and c.load_config() == c.load_config_readonly() != copy)
        """,
    )
    assert out.splitlines() == ["True", "True", "True"]


def test_a_session_commit_waits_for_the_os_and_survives_kill_9(tmp_path):
    """Hermes' session database drops the per-commit fsync (WAL, synchronous=NORMAL): a process killed
    right after a commit loses nothing of it."""
    script = textwrap.dedent(
        f"""
        import os, sys, time
        os.environ["HERMES_HOME"] = {str(tmp_path)!r}
        sys.stdout = sys.stderr
        from norfab_hermes.worker.hermes import patches
        patches.import_hermes()
        import hermes_state
        db = hermes_state.SessionDB()
        mode = db._conn.execute("PRAGMA synchronous").fetchone()[0]
        db.create_session("s1", "norfab")
        for i in range(50):
            db.append_message("s1", "user", f"message {{i}}")
        print(mode, flush=True, file=sys.__stdout__)
        time.sleep(60)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        synchronous = process.stdout.readline().strip()
    finally:
        process.kill()  # SIGKILL: no close, no checkpoint
        process.wait()
    assert synchronous == "1", "synchronous=NORMAL on the session database"
    with sqlite3.connect(tmp_path / "state.db") as db:
        kept = db.execute("SELECT count(*) FROM messages WHERE session_id = 's1'").fetchone()[0]
    assert kept == 50


def test_a_finishing_agent_wakes_its_stream_consumer(tmp_path):
    # on a loop whose clock never moves no sleep ever ends by itself: the reply
    # can only leave because the agent's finish woke the consumer
    out = in_fresh_hermes(
        tmp_path,
        """
        import asyncio, threading
        from gateway.platforms.base import SendResult
        from gateway.stream_consumer import GatewayStreamConsumer

        class Chat:
            MAX_MESSAGE_LENGTH = 4096
            sent = []
            async def send(self, chat_id, content, *args, **kwargs):
                self.sent.append(content)
                return SendResult(success=True, message_id="m1")
            async def edit_message(self, chat_id, message_id, content, *args, **kwargs):
                self.sent.append(content)
                return SendResult(success=True, message_id=message_id)

        class FrozenClock(asyncio.SelectorEventLoop):
            def time(self):
                return 0.0

        consumer = GatewayStreamConsumer(Chat(), "chat-1")
        def agent():
            while "_norfab_wake" not in consumer.__dict__:  # the consumer is waiting
                pass
            consumer.on_delta("the answer")
            consumer.finish()
        threading.Thread(target=agent, daemon=True).start()
        loop = FrozenClock()
        loop.run_until_complete(consumer.run())  # without the wake-up this never returns
        out.append(Chat.sent)
        """,
    )
    assert out == "['the answer']"


@pytest.mark.parametrize(
    "check",
    [
        # context files: the agent's constructor takes the switches the patch sets, the prompt honours them
        "import inspect, agent.agent_init as a, agent.system_prompt as p; params = inspect.signature(a.init_agent).parameters; "
        "src = inspect.getsource(p); out.append('skip_context_files' in params and 'load_soul_identity' in params "
        "and 'if not agent.skip_context_files:' in src and 'agent.load_soul_identity or not agent.skip_context_files' in src)",
        "import inspect, run_agent; out.append('from agent.agent_init import init_agent' in inspect.getsource(run_agent.AIAgent.__init__))",
        # every model request leaves through httpx, from threads chat_completion_helpers starts with threading.Thread
        "import inspect, agent.chat_completion_helpers as h; out.append(inspect.getsource(h).count('threading.Thread(') >= 2)",
        # the gateway's session key is a ContextVar read through get_session_env
        "from gateway.session_context import get_session_env; out.append(callable(get_session_env))",
        # the per-call tool guard: a plugin's pre_tool_call block directive
        "import inspect, hermes_cli.plugins as p; out.append('\"block\"' in inspect.getsource(p._get_pre_tool_call_directive_details))",
        # Hermes' clone copies memories: the store removes them
        "import hermes_cli.profiles as p; out.append('memories/MEMORY.md' in p._CLONE_SUBDIR_FILES)",
        # session titles are an auxiliary task Hermes reads from config
        "import inspect, agent.title_generator as t; out.append('title_generation' in inspect.getsource(t._auto_title_enabled))",
    ],
)
def test_hermes_internals_used_by_the_hardening(tmp_path, check):
    assert in_fresh_hermes(tmp_path, f"{check}\n") == "True"


def test_a_model_request_is_metered_in_its_turns_context_and_refused_outside(tmp_path):
    out = in_fresh_hermes(
        tmp_path,
        """
        import threading, httpx
        import agent.chat_completion_helpers as h
        from gateway.session_context import set_session_vars
        seen = []
        metering.meter_model_requests(lambda key: seen.append(key) or (None if key else "no run"))
        set_session_vars(session_key="agent:norfab:dm:chat-1")

        def post():
            try:
                httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(200))).post("http://model/v1/chat/completions")
                seen.append("sent")
            except metering.ModelRequestRefused as error:
                seen.append(f"refused: {error}")

        thread = h.threading.Thread(target=post)  # as Hermes sends a request: its own thread
        thread.start(); thread.join()
        plain = threading.Thread(target=post)  # a thread without the turn's context
        plain.start(); plain.join()
        out.extend(seen)
        """,
    )
    assert out.splitlines() == ["agent:norfab:dm:chat-1", "sent", "", "refused: no run"]


@pytest.mark.parametrize(
    "check",
    [
        # memory and skills of one profile, read and forgotten through Hermes' own store and tools
        "import inspect, tools.memory_tool as m; out.append(callable(m.load_on_disk_store) "
        "and list(inspect.signature(m.MemoryStore.remove).parameters) == ['self', 'target', 'old_text'] "
        "and 'self.memory_entries' in inspect.getsource(m.MemoryStore.__init__))",
        "import inspect, tools.skills_tool as s, tools.skill_manager_tool as m; out.append(callable(s.skills_list) "
        "and 'absorbed_into' in inspect.signature(m.skill_manage).parameters)",
        # the switches a profile's memory and skills are rendered with, and no background review
        "import inspect, agent.agent_init as a; src = inspect.getsource(a.init_agent); "
        "out.append(all(k in src for k in ('\"memory_enabled\"', '\"user_profile_enabled\"', '\"nudge_interval\"', '\"creation_nudge_interval\"')))",
        # what is saved is redacted by a tool_request middleware that replaces the arguments
        "import inspect, hermes_cli.plugins as p, hermes_cli.middleware as m; "
        "out.append(hasattr(p.PluginContext, 'register_middleware') and 'tool_request' in m.VALID_MIDDLEWARE "
        "and 'result.get(\"args\")' in inspect.getsource(m.apply_tool_request_middleware))",
        # skills stay in their profile: the cross-profile lookup is replaced
        "import tools.skill_manager_tool as m; out.append(m._find_skill_in_other_profiles('x') == [])",
        # a schedule carries its previous finding: context_from naming the job's own output
        "import inspect, cron.scheduler as s; src = inspect.getsource(s._build_job_prompt); "
        "out.append('context_from' in src and 'Output from job' in src)",
    ],
)
def test_hermes_internals_used_by_work_that_carries_over(tmp_path, check):
    assert in_fresh_hermes(tmp_path, f"{check}\n") == "True"


def test_memory_entries_are_listed_and_forgotten_in_their_profile(tmp_path):
    out = in_fresh_hermes(
        tmp_path,
        """
        from pathlib import Path
        from norfab_hermes.worker.hermes import memory
        from tools.memory_tool import load_on_disk_store
        home = Path(os.environ["HERMES_HOME"]) / "profiles" / "keeper"
        (home / "memories").mkdir(parents=True)
        with compat.profile_scope(home):
            store = load_on_disk_store()
            store.add("memory", "PARTNER-X recovers with a clear")
            store.add("memory", "core2 optics degrade")
        out.append(memory.entries(home)[0])
        out.append(memory.forget(home, "memory", "PARTNER-X"))
        out.append(memory.entries(home)[0])
        out.append(memory.entries(Path(os.environ["HERMES_HOME"]))[0])
        """,
    )
    assert out.splitlines() == [
        "['PARTNER-X recovers with a clear', 'core2 optics degrade']",
        "['PARTNER-X recovers with a clear']",
        "['core2 optics degrade']",
        "[]",
    ]


def test_each_model_answer_reports_its_tokens_to_the_plugin(tmp_path):
    # token budgets: pre_api_request carries the model and Hermes' prompt estimate before the request
    # leaves; post_api_request the model and the provider's usage, summarised in canonical buckets
    out = in_fresh_hermes(
        tmp_path,
        """
        import inspect, types, agent.conversation_loop as loop, run_agent
        from hermes_cli.plugins import VALID_HOOKS
        src = inspect.getsource(loop)
        out.append({"pre_api_request", "post_api_request"} <= set(VALID_HOOKS))
        out.append("approx_input_tokens=approx_tokens" in src and "model=agent.model" in src)
        out.append("usage=agent._usage_summary_for_api_request_hook(response)" in src)
        agent = types.SimpleNamespace(provider="custom", api_mode="chat_completions")
        answer = types.SimpleNamespace(usage=types.SimpleNamespace(prompt_tokens=1200, completion_tokens=34))
        usage = run_agent.AIAgent._usage_summary_for_api_request_hook(agent, answer)
        out.append(compat.model_usage("m1", usage))
        """,
    )
    assert out.splitlines() == [
        "True",
        "True",
        "True",
        "ModelUsage(model='m1', prompt_tokens=1200, completion_tokens=34)",
    ]
