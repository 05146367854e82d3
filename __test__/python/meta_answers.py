"""A second MCP client, the official Python SDK, against a code-mode server over stdio.

Reads a plan as JSON on stdin — `{ "command", "args", "env"?, "calls": [{ "name", "arguments" }] }` —
starts the server, lists its tools, makes the calls in order and prints, as one JSON object on
stdout, what this client saw: each result as the SDK parsed it (`isError`, `structuredContent`,
the text content) or the `MCPError` it raised (`code`, `message`, `str()`). It judges nothing:
the expectations are in `__test__/python-interop.spec.ts`, beside those of the JavaScript client.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client


async def run(plan):
    env = {**os.environ, **plan.get("env", {})}
    params = StdioServerParameters(command=plan["command"], args=plan["args"], env=env)
    outcomes = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            tools = [t.name for t in listed.tools]
            for call in plan["calls"]:
                try:
                    r = await session.call_tool(call["name"], call.get("arguments"))
                    outcomes.append({
                        "result": {
                            "isError": r.is_error,
                            "structuredContent": r.structured_content,
                            "text": [c.text for c in r.content if getattr(c, "type", None) == "text"],
                        }
                    })
                except MCPError as e:
                    outcomes.append({"error": {"code": e.code, "message": e.message, "str": str(e)}})
    return {"tools": tools, "outcomes": outcomes}


def main():
    plan = json.load(sys.stdin)
    print(json.dumps(asyncio.run(run(plan))))


if __name__ == "__main__":
    main()
