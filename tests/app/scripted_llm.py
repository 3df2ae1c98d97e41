"""Recorded answers of a scripted LLM (a test double behind the ``scripted_endpoint`` fixture)."""


def scripted_strategist(body: dict) -> str:
    """The recorded answers of a scripted LLM for STRATEGIST runs (GOPS or Avalon heuristics)."""
    from backends.games.avalon import heuristics as avalon_heuristics
    from backends.games.gops import heuristics as gops_heuristics

    last = body["messages"][-1]["content"]
    if "What do you conclude" in last:
        return "It wastes high cards."
    if "improvement ideas" in last:
        return "1. Keep the top card for the top prize.\n2. Weigh large prizes more."
    if "Avalon" in body["messages"][0]["content"]:
        return "```python\n" + avalon_heuristics.BASELINE_SOURCE.replace("q = 0.5", "q = 0.45") + "```"
    return "```python\n" + gops_heuristics.BASELINE_SOURCE.replace('v0 = state["pot"] / 2',
                                                                   'v0 = state["pot"] / 2 + 0.1') + "```"
