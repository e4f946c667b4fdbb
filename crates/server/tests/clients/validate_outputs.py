"""care-mcp through the official MCP Python SDK: every result must pass the SDK's own check of
`structuredContent` against the tool's `outputSchema`.

Usage: validate_outputs.py CARE_MCP_BINARY ROLE (the `reviews` calls below need that role).
The server gets this process's CARE_*, DATABASE_URL, HOME and RUST_LOG explicitly: the SDK's
stdio client passes only PATH and a few others through. Exits 0 when every check passed,
1 on a failed check, 3 when the `mcp` package cannot be imported.
"""

import asyncio
import os
import sys

try:
    from mcp import Client, StdioServerParameters
    from mcp_types import CallToolResult
except ImportError as error:
    print(f"cannot import the MCP Python SDK (`pip install mcp`): {error}", file=sys.stderr)
    sys.exit(3)

PASSED_THROUGH = ("DATABASE_URL", "HOME", "RUST_LOG")


def server_env():
    return {k: v for k, v in os.environ.items() if k.startswith("CARE_") or k in PASSED_THROUGH}


def leaves(error):
    """The failures inside anyio's task-group wrappers, to report them readably."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from leaves(inner)
    else:
        yield error


def check(condition, message):
    if not condition:
        raise AssertionError(message)


async def call(client, name, arguments, ok, code=None):
    """Calls `name`; expects `ok` (and the error `code`). The SDK validates successful results
    itself; it skips error results, so those are passed to the same validator explicitly."""
    result = await client.call_tool(name, arguments)
    envelope = result.structured_content
    check(isinstance(envelope, dict), f"{name}: no structured content: {result}")
    check(envelope.get("ok") is ok, f"{name}: expected ok={ok}: {envelope}")
    check(bool(result.is_error) is not ok, f"{name}: isError disagrees with ok: {result}")
    if not ok:
        check(envelope["error"]["code"] == code, f"{name}: expected {code}: {envelope}")
        await client.session.validate_tool_result(name, result)
    print(f"{name}: ok={ok} {code or ''} validated")


async def refused(client, name, envelope):
    """A hand-made envelope the declared schema must refuse: proves the schema is exact."""
    fake = CallToolResult(content=[], structured_content=envelope, is_error=not envelope.get("ok"))
    try:
        await client.session.validate_tool_result(name, fake)
    except RuntimeError as error:
        check("Invalid structured content" in str(error), f"{name}: unexpected failure: {error}")
        return
    raise AssertionError(f"{name}: the outputSchema accepted {envelope}")


async def main(binary, role):
    params = StdioServerParameters(command=binary, args=["--role", role], env=server_env())
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
        check(tools, "tools/list answered no tools")
        schemas = {tool.name: tool.output_schema for tool in tools}
        for name, schema in schemas.items():
            # Without an outputSchema the SDK validates nothing: every tool must declare one.
            check(isinstance(schema, dict) and schema.get("type") == "object", f"{name}: {schema}")
        print(f"{role}: {len(tools)} tools, each with an outputSchema ({client.protocol_version})")

        await call(client, "kpi_record", {"metric": "csat.app_store", "value": 4.2, "target": 4.5}, True)
        await call(client, "kpi_report", {}, True)
        await call(client, "asc_apps_list", {}, True)
        await call(client, "sla_status", {"channel": "app_store"}, True)
        await call(client, "csat_record", {"channel": "mail", "ticket_ref": "t-1", "score": 5, "bogus": 1}, False, "INVALID_INPUT")
        await call(client, "kpi_record", {"metric": "x", "value": 1, "at": "yesterday"}, False, "INVALID_INPUT")
        await call(client, "approval_status", {"approval_id": "apr_missing"}, False, "NOT_FOUND")

        error = {"code": "NOT_FOUND", "message": "The requested object does not exist."}
        await refused(client, "kpi_report", {"ok": True})
        await refused(client, "kpi_report", {"ok": True, "data": {}, "error": error})
        await refused(client, "kpi_report", {"ok": False, "error": dict(error, code="TEAPOT")})
        await refused(client, "kpi_report", {"ok": False, "error": dict(error, detail="SELECT 1")})
        await refused(client, "kpi_report", {"ok": True, "data": []})
        await refused(client, "kpi_report", {"ok": True, "data": {}, "extra": 1})
        print("hand-made wrong envelopes refused")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    try:
        asyncio.run(main(sys.argv[1], sys.argv[2]))
    except Exception as failure:  # noqa: BLE001 - any failure is the test's failure
        for leaf in leaves(failure):
            print(f"FAILED: {leaf!r}", file=sys.stderr)
        sys.exit(1)
