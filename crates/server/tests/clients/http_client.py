"""An MCP client over Streamable HTTP written with the official Python SDK (`mcp` on PyPI),
driven line by line: each stdin line is a JSON command, each stdout line a JSON answer. It
holds one session (one ClientSession, one httpx client carrying the bearer token) for its
whole life, so the test can interleave it with another client and act between its calls.

Commands: {"op": "list"}, {"op": "call", "tool": T, "arguments": {...}},
{"op": "sleep", "seconds": S}. Exit code 3: the SDK is not importable.
"""

import asyncio
import json
import os
import sys

try:
    try:  # mcp 2.x ships its HTTP client as httpx2
        import httpx2 as httpx
    except ImportError:
        import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
except ImportError as e:  # pragma: no cover - reported by the test
    print(f"mcp SDK not importable: {e}", file=sys.stderr)
    sys.exit(3)

# A request the server refused at the HTTP level must not hang the test.
STEP_TIMEOUT = float(os.environ.get("CARE_TEST_STEP_TIMEOUT", "20"))


def out(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


async def step(session, cmd):
    if cmd["op"] == "list":
        tools = await session.list_tools()
        return {"tools": [t.name for t in tools.tools]}
    if cmd["op"] == "call":
        result = await session.call_tool(cmd["tool"], cmd.get("arguments") or {})
        return {"is_error": bool(result.is_error), "structured": result.structured_content}
    if cmd["op"] == "sleep":
        await asyncio.sleep(float(cmd["seconds"]))
        return {"slept": cmd["seconds"]}
    raise ValueError(f"unknown op {cmd['op']!r}")


async def main():
    url = sys.argv[1]
    token = os.environ["CARE_TEST_TOKEN"]
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, timeout=STEP_TIMEOUT) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                out({"ready": True, "protocol": str(getattr(init, "protocol_version", ""))})
                loop = asyncio.get_running_loop()
                while True:
                    line = await loop.run_in_executor(None, sys.stdin.readline)
                    if not line.strip():
                        break
                    cmd = json.loads(line)
                    timeout = STEP_TIMEOUT + float(cmd.get("seconds", 0))
                    try:
                        out(await asyncio.wait_for(step(session, cmd), timeout))
                    except asyncio.TimeoutError:
                        out({"exception": "Timeout"})
                    except Exception as e:  # noqa: BLE001 - the test reads what happened
                        out({"exception": type(e).__name__, "detail": str(e)[:300]})


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except BaseException as e:  # noqa: BLE001 - the session ending is reported, not raised
        if isinstance(e, SystemExit):
            raise
        while isinstance(e, BaseExceptionGroup) and e.exceptions:
            e = e.exceptions[0]
        out({"ended": type(e).__name__, "detail": str(e)[:300]})
