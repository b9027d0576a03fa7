"""A small Buddy-style ads agent that remembers its user across sessions.

Each session:

1. at session start, asks entity-memory for the context of its task (`POST /context`) and puts
   the `<entity_memory>` block into its system prompt;
2. runs a conversation (scripted here, so no LLM key is needed: the "model" is a canned reply
   per user turn);
3. at session end, sends the conversation to `POST /sessions/{id}/extract`, which stores what
   the user taught as typed entities.

Running two sessions shows the second system prompt remembering what the first taught:

    scripts/serve &                       # the local host (see the top-level README)
    python examples/buddy_agent.py --url http://127.0.0.1:8787 --user buddy-demo --fresh
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from dataclasses import dataclass, field

from entity_memory_client import EntityMemory

BASE_PROMPT = (
    "You are Buddy, a Google Ads assistant. Be concrete; cite numbers; respect the user's "
    "stated preferences and avoid their known pain points."
)

#: Session 1: the user teaches Buddy about their account.
SESSION_1 = [
    (
        "Our main campaign is Campaign Alpha, a search campaign with a $150 daily budget. "
        "Its CPA is $42 right now.",
        "Got it: Campaign Alpha, search, $150/day, CPA $42.",
    ),
    (
        "Let's switch Campaign Alpha to target CPA bidding because manual CPC keeps "
        "overspending on weekends.",
        "Done: Campaign Alpha moves to target CPA. I'll watch weekend spend.",
    ),
    (
        "I'm frustrated that conversion tracking keeps breaking after every tag change, again.",
        "Understood, I'll check conversion tracking first whenever tags change.",
    ),
    (
        "I prefer short bullet-point reports with the numbers first.",
        "Noted: short bullets, numbers first.",
    ),
]

#: Session 2: a new task on the same account; the user says nothing about the past.
SESSION_2 = [
    (
        "How is Campaign Alpha doing this week? Should we raise the budget?",
        "Checking Campaign Alpha against the CPA target set last session.",
    ),
]


@dataclass
class BuddySession:
    mem: EntityMemory
    task: str
    session_id: str = field(default_factory=lambda: f"buddy-{uuid.uuid4().hex[:12]}")
    messages: list[dict[str, str]] = field(default_factory=list)
    system_prompt: str = ""

    def start(self) -> str:
        """Session start: the remembered context for the task goes into the system prompt."""
        memory = self.mem.context(self.task, limit=20, max_tokens=2000)["context"]
        self.system_prompt = f"{BASE_PROMPT}\n\nCurrent task: {self.task}\n\n{memory}"
        return self.system_prompt

    def turn(self, user_text: str, scripted_reply: str) -> str:
        # A real agent would call its LLM with self.system_prompt + self.messages here.
        self.messages.append({"role": "user", "content": user_text})
        self.messages.append({"role": "assistant", "content": scripted_reply})
        return scripted_reply

    def end(self) -> dict:
        """Session end: the conversation goes to /extract; the service stores the entities.
        (An agent would not wait; the demo does, to print what was remembered.)"""
        return self.mem.extract(self.session_id, self.messages, wait=120)


def run_session(mem: EntityMemory, number: int, task: str, script: list[tuple[str, str]]) -> str:
    session = BuddySession(mem, task)
    prompt = session.start()
    print(f"===== session {number}: system prompt =====")
    print(prompt)
    print(f"===== session {number}: conversation =====")
    for user_text, reply in script:
        print(f"user:  {user_text}")
        print(f"buddy: {session.turn(user_text, reply)}")
    result = session.end()
    stored = ", ".join(f"{e['type']}:{e['name']}" for e in result.get("entities", []))
    print(f"===== session {number}: remembered ({result.get('extractor')}) =====")
    print(stored or "(nothing new)")
    print()
    return prompt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="service URL (default: ENTITY_MEMORY_URL)")
    parser.add_argument("--token", help="bearer token (default: ENTITY_MEMORY_TOKEN)")
    parser.add_argument("--user", default="buddy-demo", help="the user Buddy talks to")
    parser.add_argument("--fresh", action="store_true", help="forget the user first")
    args = parser.parse_args(argv)

    with EntityMemory(args.url, args.token, user=args.user) as mem:
        if args.fresh:
            mem.forget_user()
        run_session(mem, 1, "Set up bidding and reporting for the account", SESSION_1)
        time.sleep(0.01)
        run_session(mem, 2, "Weekly check of Campaign Alpha performance and budget", SESSION_2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
