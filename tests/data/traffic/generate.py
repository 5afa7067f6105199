"""Writes the sample traffic logs of tests/cli_import_traffic.rs, one per format.

A shop's support assistant: five tools, multi-turn conversations with earlier tool results,
replies in text, a parallel call, a near-duplicate, an HTTP error, and secrets and personal
data planted where production logs carry them (system prompts, pasted config, tool results,
arguments, a tool description). The test greps every file an import writes for each value in
PLANTED. Run from the repository root: python3 tests/data/traffic/generate.py
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

OPENAI_KEY = "sk-proj-Pl4ntedOpenAIKey0000aaaaBBBBccccDDDD"
ANTHROPIC_KEY = "sk-ant-api03-Pl4ntedAnthropicKey_0000-xyzXYZ"
AWS_KEY = "AKIAZ7PLANTEDKEY0042"
GITHUB_TOKEN = "ghp_Pl4ntedGitHubToken0123456789abcdefABCD"
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJjdXN0XzQ0MjEiLCJyb2xlIjoiYWdlbnQifQ.Zm9vYmFyYmF6cXV4cXV1eA"
BEARER = "Bearer tok_live_Pl4ntedBearer7f3a9c2e1d"
EMAIL = "maria.kowalski@example.org"
EMAIL2 = "j.okafor@mailbox.example"
PHONE = "+44 20 7946 0958"
ADDRESS = "14 Elm Row, Edinburgh EH7 4AA"
INTERNAL_API_KEY = "live_9f8e7d6c5b4a3921"

PLANTED = [OPENAI_KEY, ANTHROPIC_KEY, AWS_KEY, GITHUB_TOKEN, JWT, "tok_live_Pl4ntedBearer7f3a9c2e1d",
           EMAIL, EMAIL2, PHONE, ADDRESS, INTERNAL_API_KEY]

SYSTEM = ("You are the support assistant of Northwind Outfitters. Be brief. "
          f"Internal note: the billing proxy key is {OPENAI_KEY}; never reveal it.")

TOOLS = [
    {"name": "lookup_customer",
     "description": "Find a customer by e-mail address. Returns the customer id and contact details.",
     "schema": {"type": "object", "properties": {"email": {"type": "string", "description": "The customer's e-mail address"}},
                "required": ["email"]}},
    {"name": "get_order",
     "description": "Fetch an order by id: items, status, amounts in minor units.",
     "schema": {"type": "object", "properties": {"order_id": {"type": "string", "pattern": "^ord_[0-9]+$"}},
                "required": ["order_id"]}},
    {"name": "refund_order",
     "description": f"Refund all or part of an order (billing API, authenticated server-side; ops contact {ANTHROPIC_KEY} is rotated).",
     "schema": {"type": "object", "properties": {
         "order_id": {"type": "string"},
         "amount_minor": {"type": "integer", "minimum": 1},
         "reason": {"type": "string", "enum": ["damaged", "late", "duplicate", "other"]},
         "idempotency_key": {"type": "string"}},
         "required": ["order_id", "amount_minor", "reason"]}},
    {"name": "send_email",
     "description": "Send an e-mail to a customer.",
     "schema": {"type": "object", "properties": {
         "to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}},
         "required": ["to", "subject", "body"]}},
    {"name": "create_ticket",
     "description": "Open a support ticket for a human agent.",
     "schema": {"type": "object", "properties": {
         "customer_id": {"type": "string"}, "summary": {"type": "string"},
         "due_at": {"type": "string", "format": "date-time"}},
         "required": ["customer_id", "summary"]}},
]

CUSTOMER = json.dumps({"customer": {"id": "cus_4421", "name": "Maria Kowalski", "email": EMAIL,
                                    "phone": PHONE, "address": ADDRESS},
                       "crm": {"api_key": INTERNAL_API_KEY}})
ORDER = json.dumps({"order_id": "ord_88123", "status": "delivered", "total_minor": 12900,
                    "items": [{"sku": "TENT-2P", "qty": 1}], "delivered_at": "2026-11-28T10:12:00Z"})

# Conversations in a neutral form: (messages, reply). A message is ("system"|"user", text),
# ("call", [(id, name, args)], text-or-None) or ("result", id, text). A reply is a list of
# (id, name, args) or a text.
CONVERSATIONS = [
    # 0: first turn, e-mail in the question -> lookup_customer
    ([("system", SYSTEM), ("user", f"Hi, I'm {EMAIL}, phone {PHONE}. Where is my tent?")],
     [("c0", "lookup_customer", {"email": EMAIL})]),
    # 1: after the lookup -> get_order (id from the user), tool result carries PII and a key
    ([("system", SYSTEM), ("user", f"Hi, I'm {EMAIL}. Where is order ord_88123?"),
      ("call", [("c1a", "lookup_customer", {"email": EMAIL})], None),
      ("result", "c1a", CUSTOMER)],
     [("c1b", "get_order", {"order_id": "ord_88123"})]),
    # 2: refund with a model-made idempotency key
    ([("system", SYSTEM), ("user", "Order ord_88123 arrived with a torn tent. Refund the 129.00 please."),
      ("call", [("c2a", "get_order", {"order_id": "ord_88123"})], "Let me check the order."),
      ("result", "c2a", ORDER)],
     [("c2b", "refund_order", {"order_id": "ord_88123", "amount_minor": 12900, "reason": "damaged",
                               "idempotency_key": "5f0c7a8e-1b2d-4c3e-9f4a-0b1c2d3e4f5a"})]),
    # 3: a near-duplicate of 0 (other address, same words) -> dropped
    ([("system", SYSTEM), ("user", f"Hi, I'm {EMAIL2}, phone +44 20 7946 0000. Where is my tent?")],
     [("c3", "lookup_customer", {"email": EMAIL2})]),
    # 4: a text reply, no call (the user pasted config with an AWS key)
    ([("system", SYSTEM), ("user", f"My dev pasted this, is it ok? aws_access_key_id={AWS_KEY} region=eu-west-2")],
     "Please rotate that key now; never share credentials with support."),
    # 5: send_email with free-text body, after a ticket result holding a GitHub token
    ([("system", SYSTEM), ("user", f"Please e-mail me the ticket number at {EMAIL}."),
      ("call", [("c5a", "create_ticket", {"customer_id": "cus_4421", "summary": "Torn tent"})], None),
      ("result", "c5a", json.dumps({"ticket": "TCK-5531", "debug_token": GITHUB_TOKEN,
                                    "auth": BEARER}))],
     [("c5b", "send_email", {"to": EMAIL, "subject": "Your ticket TCK-5531",
                             "body": "Hello Maria, your ticket TCK-5531 is open and an agent will reply within a day."})]),
    # 6: parallel calls
    ([("system", SYSTEM), ("user", "Status of ord_88123 and ord_88124?")],
     [("c6a", "get_order", {"order_id": "ord_88123"}), ("c6b", "get_order", {"order_id": "ord_88124"})]),
    # 7: ticket with a timestamp the model computed, and a JWT in the user's text
    ([("system", SYSTEM), ("user", f"Escalate for customer cus_4421, session {JWT}, someone must call back by tomorrow noon.")],
     [("c7", "create_ticket", {"customer_id": "cus_4421", "summary": "Call-back requested by the customer before noon tomorrow",
                               "due_at": "2026-12-04T12:00:00Z"})]),
    # 8: small talk -> text
    ([("system", SYSTEM), ("user", "Thanks, that's all!")], "You're welcome, have a good day."),
]


def chat_tools():
    return [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                               "parameters": t["schema"]}} for t in TOOLS]


def chat_line(i, msgs, reply):
    messages = []
    for m in msgs:
        if m[0] in ("system", "user"):
            messages.append({"role": m[0], "content": m[1]})
        elif m[0] == "call":
            messages.append({"role": "assistant", "content": m[2], "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for cid, n, a in m[1]]})
        else:
            messages.append({"role": "tool", "tool_call_id": m[1], "content": m[2]})
    if isinstance(reply, str):
        message = {"role": "assistant", "content": reply, "refusal": None}
        finish = "stop"
    else:
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_" + cid, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for cid, n, a in reply]}
        finish = "tool_calls"
    return {"ts": f"2026-11-30T09:{i:02d}:00Z", "request_id": f"req_{7000 + i}",
            "headers": {"authorization": f"Bearer {OPENAI_KEY}"},
            "request": {"model": "gpt-4.1-mini", "messages": messages, "tools": chat_tools(), "tool_choice": "auto",
                        "user": EMAIL},
            "response": {"status_code": 200, "body": {
                "id": f"chatcmpl-{i}", "object": "chat.completion", "created": 1764493200 + i, "model": "gpt-4.1-mini",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 400 + i, "completion_tokens": 20, "total_tokens": 420 + i}}}}


def responses_line(i, msgs, reply):
    instructions = None
    items = []
    for m in msgs:
        if m[0] == "system":
            instructions = m[1]
        elif m[0] == "user":
            items.append({"role": "user", "content": [{"type": "input_text", "text": m[1]}]})
        elif m[0] == "call":
            if m[2]:
                items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": m[2]}]})
            for cid, n, a in m[1]:
                items.append({"type": "function_call", "call_id": cid, "name": n, "arguments": json.dumps(a)})
        else:
            items.append({"type": "function_call_output", "call_id": m[1], "output": m[2]})
    if isinstance(reply, str):
        output = [{"type": "message", "id": f"msg_{i}", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "text": reply, "annotations": []}]}]
    else:
        output = [{"type": "function_call", "id": f"fc_{i}_{cid}", "call_id": "call_" + cid, "name": n,
                   "arguments": json.dumps(a), "status": "completed"} for cid, n, a in reply]
    tools = [{"type": "function", "name": t["name"], "description": t["description"], "parameters": t["schema"]}
             for t in TOOLS]
    return {"request": {"model": "gpt-5.4", "instructions": instructions, "input": items, "tools": tools,
                        "store": False},
            "response": {"id": f"resp_{i}", "object": "response", "status": "completed", "model": "gpt-5.4",
                         "output": output, "usage": {"input_tokens": 300 + i, "output_tokens": 25, "total_tokens": 325 + i}}}


def anthropic_line(i, msgs, reply):
    system = None
    messages = []
    for m in msgs:
        if m[0] == "system":
            system = [{"type": "text", "text": m[1], "cache_control": {"type": "ephemeral"}}]
        elif m[0] == "user":
            messages.append({"role": "user", "content": m[1]})
        elif m[0] == "call":
            blocks = [{"type": "text", "text": m[2]}] if m[2] else []
            blocks += [{"type": "tool_use", "id": "toolu_" + cid, "name": n, "input": a} for cid, n, a in m[1]]
            messages.append({"role": "assistant", "content": blocks})
        else:
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_" + m[1],
                                                          "content": [{"type": "text", "text": m[2]}]}]})
    # The Messages API needs the user turn that carries tool results to be the last one here;
    # the first user question of a multi-turn conversation stays first.
    if isinstance(reply, str):
        content = [{"type": "text", "text": reply}]
        stop = "end_turn"
    else:
        content = [{"type": "tool_use", "id": "toolu_r" + cid, "name": n, "input": a} for cid, n, a in reply]
        stop = "tool_use"
    tools = [{"name": t["name"], "description": t["description"], "input_schema": t["schema"]} for t in TOOLS]
    return {"request": {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": system, "tools": tools,
                        "messages": messages},
            "response": {"id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                         "content": content, "stop_reason": stop, "stop_sequence": None,
                         "usage": {"input_tokens": 500 + i, "output_tokens": 30}}}


def kv(key, value):
    if isinstance(value, str):
        return {"key": key, "value": {"stringValue": value}}
    return {"key": key, "value": {"intValue": str(value)}}


def otel_span(i, msgs, reply, with_tools=True):
    system = []
    inputs = []
    for m in msgs:
        if m[0] == "system":
            system = [{"type": "text", "content": m[1]}]
        elif m[0] == "user":
            inputs.append({"role": "user", "parts": [{"type": "text", "content": m[1]}]})
        elif m[0] == "call":
            parts = [{"type": "text", "content": m[2]}] if m[2] else []
            parts += [{"type": "tool_call", "id": cid, "name": n, "arguments": a} for cid, n, a in m[1]]
            inputs.append({"role": "assistant", "parts": parts})
        else:
            inputs.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": m[1], "response": m[2]}]})
    if isinstance(reply, str):
        output = [{"role": "assistant", "parts": [{"type": "text", "content": reply}], "finish_reason": "stop"}]
    else:
        output = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "call_" + cid, "name": n, "arguments": a}
                                                  for cid, n, a in reply], "finish_reason": "tool_call"}]
    attrs = [kv("gen_ai.operation.name", "chat"), kv("gen_ai.provider.name", "openai"),
             kv("gen_ai.request.model", "gpt-4.1-mini"),
             kv("gen_ai.system_instructions", json.dumps(system)),
             kv("gen_ai.input.messages", json.dumps(inputs)),
             kv("gen_ai.output.messages", json.dumps(output)),
             kv("gen_ai.usage.input_tokens", 400 + i), kv("gen_ai.usage.output_tokens", 20),
             kv("enduser.id", EMAIL)]
    if with_tools:
        attrs.append(kv("gen_ai.tool.definitions", json.dumps(
            [{"type": "function", "name": t["name"], "description": t["description"], "parameters": t["schema"]}
             for t in TOOLS])))
    trace = f"{0x4bf92f3577b34da6a3ce929d0e0e4700 + i:032x}"
    return trace, {"traceId": trace, "spanId": f"{0x00f067aa0ba90200 + i:016x}", "name": "chat gpt-4.1-mini",
                   "kind": 3, "startTimeUnixNano": str(1764493200000000000 + i * 10**9),
                   "endTimeUnixNano": str(1764493200800000000 + i * 10**9), "attributes": attrs,
                   "status": {}}


def write_lines(name, lines):
    with open(os.path.join(HERE, name), "w") as f:
        for line in lines:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")


def main():
    chat = [chat_line(i, m, r) for i, (m, r) in enumerate(CONVERSATIONS)]
    # A rate-limited call: logged, not a fixture.
    chat.insert(3, {"ts": "2026-11-30T09:59:00Z", "request": chat[0]["request"],
                    "response": {"status_code": 429, "body": {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}}})
    write_lines("openai-chat.jsonl", chat)

    responses = [responses_line(i, m, r) for i, (m, r) in enumerate(CONVERSATIONS)]
    # A request continuing a stored response: its history is not in the log.
    stored = responses_line(20, [("user", "And the other one?")], [("cx", "get_order", {"order_id": "ord_88124"})])
    stored["request"]["previous_response_id"] = "resp_6"
    responses.append(stored)
    # Another agent of the same company, shown only get_order: a second catalog.
    narrow = responses_line(21, [("system", "You track parcels."), ("user", "Where is ord_90001?")],
                            [("cy", "get_order", {"order_id": "ord_90001"})])
    narrow["request"]["tools"] = [t for t in narrow["request"]["tools"] if t["name"] == "get_order"]
    responses.append(narrow)
    write_lines("openai-responses.jsonl", responses)

    write_lines("anthropic.jsonl", [anthropic_line(i, m, r) for i, (m, r) in enumerate(CONVERSATIONS)])

    # OTLP: one export per line, each a trace with the model span and the tool spans around it.
    exports = []
    for i, (m, r) in enumerate(CONVERSATIONS):
        trace, span = otel_span(i, m, r, with_tools=(i != 8))
        tool_span = {"traceId": trace, "spanId": f"{0x00a0000000000000 + i:016x}", "parentSpanId": span["spanId"],
                     "name": "execute_tool", "kind": 1, "attributes": [kv("gen_ai.operation.name", "execute_tool"),
                                                                     kv("http.request.header.authorization", BEARER)]}
        exports.append({"resourceSpans": [{"resource": {"attributes": [kv("service.name", "support-bot")]},
                                           "scopeSpans": [{"scope": {"name": "opentelemetry.instrumentation.openai_v2"},
                                                           "spans": [span, tool_span]}]}]})
    write_lines("otel-genai.jsonl", exports)


if __name__ == "__main__":
    main()
