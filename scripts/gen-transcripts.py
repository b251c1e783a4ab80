#!/usr/bin/env python3
"""Writes N synthetic agent conversations (OpenAI chat format, JSON Lines) to stdout, for timing
`outcomes import`. Each has 3 turns of 2 write calls (create_issue, add_label) and one read call; results
mix completed, failed, timed out, 503 and lost replies. Deterministic for a given N.

    scripts/gen-transcripts.py 300 > /tmp/transcripts.jsonl
"""
import json
import sys

RESULTS = [
    lambda n: json.dumps({"number": n, "title": f"Issue {n}"}),
    lambda n: "labelled",
    lambda n: "Error: permission denied",
    lambda n: "Error: request timed out",
    lambda n: [{"type": "text", "text": "HTTP 503 Service Unavailable"}],
    None,  # the reply was lost
]


def conversation(i):
    messages = [{"role": "system", "content": "You are a triage agent."}]
    k = 0
    for turn in range(3):
        messages.append({"role": "user", "content": f"conversation {i}, turn {turn}"})
        calls = [
            {"id": "call_0", "type": "function", "function": {"name": "create_issue", "arguments": "{}"}},
            {"id": "call_1", "type": "function", "function": {"name": "add_label", "arguments": "{}"}},
            {"id": "call_2", "type": "function", "function": {"name": "list_issues", "arguments": "{}"}},
        ]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        for c in calls:
            result = RESULTS[(i + k) % len(RESULTS)]
            k += 1
            if result is None:
                continue
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": result(i * 10 + k)})
    return {"id": f"gen-{i}", "messages": messages}


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    for i in range(n):
        print(json.dumps(conversation(i)))


if __name__ == "__main__":
    main()
