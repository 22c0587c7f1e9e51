"""A lean raylet we start runs agentsweep's stand-in for Ray's runtime-env agent
(pipeline/runtime/env_vars_agent.py): its messages read and written as Ray's protobuf classes
do, the context Ray's agent builds for variables alone, a refusal of anything more that says
why, its port file as Ray names it, and answers over HTTP. A node running it end to end, its
workers given the variables: tests/unit/runtime/test_lean_ray.py."""

from __future__ import annotations

import http.client
import signal
import subprocess
import sys
from pathlib import Path

import ray._raylet
from ray._private.runtime_env.context import RuntimeEnvContext
from ray.core.generated import runtime_env_agent_pb2 as pb
from ray.runtime_env import RuntimeEnv
from unit.runtime.test_idle_dashboard_agent import NODE_ID, _agent_command, _wait

from pipeline.runtime import env_vars_agent
from pipeline.runtime.local_ray import (
    AGENT_FLAG,
    ENV_AGENT_FLAG,
    ENV_VARS_AGENT,
    IDLE_AGENT,
    ray_env_agent,
    with_idle_agent,
)


def _request(runtime_env: str) -> bytes:
    return pb.GetOrCreateRuntimeEnvRequest(
        serialized_runtime_env=runtime_env, job_id=b"\x01\x00\x00\x00",
        source_process="raylet",
        runtime_env_config={"setup_timeout_seconds": 600, "eager_install": True},
    ).SerializeToString()


def test_the_port_file_and_the_status_values_are_rays() -> None:
    assert env_vars_agent.PORT_NAME == ray._raylet.RUNTIME_ENV_AGENT_PORT_NAME
    assert (env_vars_agent.STATUS_OK, env_vars_agent.STATUS_FAILED) == (
        pb.AGENT_RPC_STATUS_OK, pb.AGENT_RPC_STATUS_FAILED)


def test_variables_get_the_context_rays_agent_builds() -> None:
    runtime_env = RuntimeEnv(env_vars={"LITELLM_LOG": "ERROR", "HTTP_PROXY": "", "É": "ü"})
    field = env_vars_agent.decode_fields(_request(runtime_env.serialize()))[1]
    assert isinstance(field, bytes)
    context, why = env_vars_agent.context_for(field.decode())
    assert why == "" and context is not None
    reply = pb.GetOrCreateRuntimeEnvReply.FromString(
        env_vars_agent.encode_reply(env_vars_agent.STATUS_OK, context=context))
    assert reply.status == pb.AGENT_RPC_STATUS_OK and reply.error_message == ""
    built = RuntimeEnvContext.deserialize(reply.serialized_runtime_env_context)
    assert built.__dict__ == RuntimeEnvContext(env_vars=runtime_env.env_vars()).__dict__
    assert env_vars_agent.context_for("{}")[0] == '{"env_vars": {}}'


def test_anything_more_than_variables_is_refused_naming_it() -> None:
    context, why = env_vars_agent.context_for(
        RuntimeEnv(env_vars={"A": "1"}, pip=["requests"]).serialize())
    assert context is None and "not pip;" in why and "environment variables only" in why
    reply = pb.GetOrCreateRuntimeEnvReply.FromString(
        env_vars_agent.encode_reply(env_vars_agent.STATUS_FAILED, error=why))
    assert reply.status == pb.AGENT_RPC_STATUS_FAILED and reply.error_message == why
    assert env_vars_agent.context_for('{"env_vars": {"A": 1}}')[0] is None
    assert env_vars_agent.context_for("[")[0] is None


def test_a_lean_raylet_gets_the_stand_in_and_a_full_one_keeps_rays_agent() -> None:
    env_agent = subprocess.list2cmdline([sys.executable, "-u", ray_env_agent(),
                                         f"--node-id={NODE_ID}"])
    lean = ["/x/raylet", AGENT_FLAG + _agent_command("--minimal"), ENV_AGENT_FLAG + env_agent]
    after = with_idle_agent(lean)
    assert IDLE_AGENT in after[1] and ENV_VARS_AGENT in after[2]
    assert after[2] == ENV_AGENT_FLAG + env_agent.replace(ray_env_agent(), ENV_VARS_AGENT)
    full = ["/x/raylet", AGENT_FLAG + _agent_command(), ENV_AGENT_FLAG + env_agent]
    assert with_idle_agent(full) == full


def test_the_agent_answers_over_http_writes_its_port_and_stops_on_sigterm(
        tmp_path: Path) -> None:
    agent = subprocess.Popen([sys.executable, ENV_VARS_AGENT, f"--node-id={NODE_ID}",
                              f"--session-dir={tmp_path}", "--node-ip-address=127.0.0.1",
                              "--runtime-env-agent-port=0", "--log-dir=/tmp/unused"])
    try:
        port_file = tmp_path / f"{env_vars_agent.PORT_NAME}_{NODE_ID}"
        assert _wait(port_file.exists)
        connection = http.client.HTTPConnection("127.0.0.1", int(port_file.read_text()),
                                                timeout=10)

        def post(path: str, body: bytes) -> tuple[int, bytes]:
            connection.request("POST", path, body)
            answer = connection.getresponse()
            return answer.status, answer.read()

        status, body = post("/get_or_create_runtime_env",
                            _request('{"env_vars": {"A": "1"}}'))
        reply = pb.GetOrCreateRuntimeEnvReply.FromString(body)
        assert status == 200 and reply.serialized_runtime_env_context == (
            '{"env_vars": {"A": "1"}}')
        release = pb.DeleteRuntimeEnvIfPossibleRequest(
            serialized_runtime_env='{"env_vars": {"A": "1"}}').SerializeToString()
        status, body = post("/delete_runtime_env_if_possible", release)
        assert status == 200 and pb.DeleteRuntimeEnvIfPossibleReply.FromString(body).status == 0
        status, body = post("/get_runtime_envs_info", b"")
        assert status == 200 and pb.GetRuntimeEnvsInfoReply.FromString(body).total == 0
        assert post("/elsewhere", b"")[0] == 404
        connection.close()
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=10) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    refused = subprocess.run([sys.executable, ENV_VARS_AGENT, f"--node-id={NODE_ID}"],
                             capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and "--session-dir" in refused.stderr
