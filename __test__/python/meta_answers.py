"""A second MCP client, the official Python SDK, against a code-mode server.

Reads a plan as JSON on stdin:

    { "command", "args", "env"?,          the server to start over stdio, or
      "url"?,                             the Streamable HTTP endpoint of one already running
      "mode"?,                            "legacy" (the default: initialize), "auto" (probe with
                                          server/discover, fall back to initialize) or a pinned
                                          modern version ("2026-07-28")
      "elicit"?,                          how a person answers an elicitation: "accept",
                                          "accept_always" ({ always: true }) or "decline"; absent,
                                          the client declares no elicitation capability
      "calls": [{ "name", "arguments" }] }

connects, lists the tools, makes the calls in order and prints, as one JSON object on stdout, what
this client saw: the protocol version it settled on, the tools, each elicitation it was asked, and
each result as the SDK parsed it (`isError`, `structuredContent`, the text content) or the
`MCPError` it raised (`code`, `message`, `str()`) or any other exception (its type and `str()`: a
result the SDK could not validate, say). It judges nothing: the expectations are in
`__test__/python-interop.spec.ts`, beside those of the JavaScript client.
"""

import asyncio
import json
import os
import sys

from mcp import Client, MCPError, StdioServerParameters
from mcp_types import ElicitResult


def answer(policy, elicited):
    """The elicitation callback of a person who answers every request with `policy`."""

    async def callback(context, params):
        # `id`: the JSON-RPC id of an elicitation/create request (legacy), or the key of the
        # request in an input_required result (modern).
        elicited.append({"id": context.request_id, **params.model_dump(mode="json", by_alias=True, exclude_none=True)})
        if policy == "decline":
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content={"always": True} if policy == "accept_always" else {})

    return callback


async def run(plan):
    if plan.get("url"):
        server = plan["url"]
    else:
        server = StdioServerParameters(command=plan["command"], args=plan["args"], env={**os.environ, **plan.get("env", {})})
    elicited = []
    policy = plan.get("elicit")
    outcomes = []
    async with Client(
        server,
        mode=plan.get("mode", "legacy"),
        elicitation_callback=answer(policy, elicited) if policy else None,
    ) as client:
        listed = await client.list_tools()
        tools = [t.name for t in listed.tools]
        for call in plan["calls"]:
            try:
                r = await client.call_tool(call["name"], call.get("arguments"))
                outcomes.append({
                    "result": {
                        "isError": r.is_error,
                        "structuredContent": r.structured_content,
                        "text": [c.text for c in r.content if getattr(c, "type", None) == "text"],
                    }
                })
            except MCPError as e:
                outcomes.append({"error": {"code": e.code, "message": e.message, "str": str(e)}})
            except Exception as e:  # what the SDK raised instead (a result it refused as invalid, say)
                outcomes.append({"exception": {"type": type(e).__name__, "str": str(e)}})
        version = client.protocol_version
    return {"protocolVersion": version, "tools": tools, "elicited": elicited, "outcomes": outcomes}


def main():
    plan = json.load(sys.stdin)
    print(json.dumps(asyncio.run(run(plan))))


if __name__ == "__main__":
    main()
