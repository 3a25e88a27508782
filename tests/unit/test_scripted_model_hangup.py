"""The scripted model stays quiet when a client hangs up mid-reply (an interrupted run), and keeps serving."""

import json
import socket
import time
import urllib.request

from norfab_hermes.testing.scripted_model import ScriptedModelServer


def hang_up_mid_stream(server: ScriptedModelServer) -> None:
    body = json.dumps(
        {"model": "scripted-model", "stream": True, "messages": [{"role": "user", "content": "STREAM 40 0.02"}]}
    )
    host, port = server.server_address[:2]
    with socket.create_connection((host, port)) as sock:
        sock.sendall(
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
        )
        assert b"200" in sock.recv(4096)  # the reply started streaming
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # close with a reset


def test_a_client_hanging_up_mid_reply_prints_nothing(capfd):
    with ScriptedModelServer() as server:
        for _ in range(3):
            hang_up_mid_stream(server)
        time.sleep(1.5)  # the server writes its remaining words into closed sockets meanwhile
        reply = urllib.request.urlopen(
            urllib.request.Request(
                server.base_url + "/chat/completions",
                data=json.dumps(
                    {"model": "scripted-model", "messages": [{"role": "user", "content": "ping"}]}
                ).encode(),
                headers={"Content-Type": "application/json"},
            ),
            timeout=10,
        )
        assert json.load(reply)["choices"][0]["message"]["content"] == "ECHO: ping"
    err = capfd.readouterr().err
    assert "Traceback" not in err, err
    assert "BrokenPipe" not in err, err
    assert "ConnectionReset" not in err, err
