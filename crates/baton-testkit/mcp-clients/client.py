"""The official Python MCP SDK (PyPI `mcp`) as a client of a stdio server.

usage: python client.py MODE CALLS_JSON -- COMMAND ARG...
  MODE: "auto" (server/discover first, the SDK's default) or "legacy"
        (the initialize handshake)
  CALLS_JSON: [{"tool": NAME, "args": {...}}, ...], called in order
Prints one JSON document: the negotiated protocol version, the server's
name and instructions, its tools (name, input and output schema, annotations) and each
call's result (isError, structuredContent, text). Exit 0, or 2 on failure.
"""

import asyncio
import json
import sys

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters


async def main() -> None:
    mode, calls = sys.argv[1], json.loads(sys.argv[2])
    cmd = sys.argv[sys.argv.index("--") + 1 :]
    params = StdioServerParameters(command=cmd[0], args=cmd[1:])
    out = {}
    async with Client(params, mode=mode) as c:
        out["protocol"] = str(c.protocol_version)
        info = c.server_info
        out["server"] = getattr(info, "name", None) if info else None
        out["instructions"] = getattr(c, "instructions", None) or getattr(
            getattr(c, "server_peer_info", None), "instructions", None
        )
        tools = await c.list_tools()
        out["tools"] = [
            {
                "name": t.name,
                "inputSchema": t.input_schema,
                "outputSchema": t.output_schema,
                "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True)
                if t.annotations
                else None,
            }
            for t in tools.tools
        ]
        results = []
        for call in calls:
            r = await c.call_tool(call["tool"], call.get("args", {}))
            results.append(
                {
                    "tool": call["tool"],
                    "isError": bool(r.is_error),
                    "structured": r.structured_content,
                    "text": "\n".join(getattr(b, "text", "") for b in r.content),
                }
            )
        out["results"] = results
    print(json.dumps(out))


try:
    asyncio.run(main())
except Exception as e:  # noqa: BLE001 - the test reads the message
    print(json.dumps({"failure": f"{type(e).__name__}: {e}"}))
    sys.exit(2)
