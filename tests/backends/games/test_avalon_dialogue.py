"""LLM speech for Avalon agents, with a recorded-response double standing in for the LLM."""

import numpy as np

from backends.games.avalon import AvalonConfig, AvalonGame
from backends.games.avalon_agents import play_avalon
from backends.games.avalon_dialogue import LLMSpeaker, accusations, clean_speech, describe_view
from backends.games.avalon_search import SearchAgent, evil_marginals
from backends.games.llm import LLMReply


class Recorded:
    """Test double: answers from a fixed list and records the prompts it got."""

    name = "recorded"

    def __init__(self, replies):
        self.replies, self.prompts = list(replies), []

    def complete(self, messages, max_tokens=512, temperature=0.7, seed=None):
        self.prompts.append(messages)
        return LLMReply(self.replies[len(self.prompts) % len(self.replies)], self.name)


def test_speaker_uses_only_the_agents_view_and_its_sides_guide():
    g = AvalonGame.new(AvalonConfig(5, discussion=True), seed=4)
    evil_seat = next(i for i in range(5) if g.side(i) == "evil")
    good_seat = g.roles.index("Servant")
    llm = Recorded(["**I suspect player 1.** The vote was odd. And a third sentence."])
    speaker = LLMSpeaker(llm)
    text = speaker(g.view(evil_seat), evil_marginals(g.view(evil_seat)))
    assert text == "I suspect player 1. The vote was odd."
    assert "side of evil" in llm.prompts[-1][0]["content"]
    speaker(g.view(good_seat), {})
    prompt = llm.prompts[-1][1]["content"]
    assert "role Servant" in prompt and "Merlin" not in prompt.replace("role Servant", "")


def test_accusations_are_parsed_and_move_the_belief():
    assert accusations("I suspect player 3, and I trust player 1 the least.", 5) == [1, 3]
    assert accusations("Player 9 is fine", 5) == []
    g = AvalonGame.new(AvalonConfig(5, discussion=True), seed=4)
    servant = g.roles.index("Servant")
    view = g.view(servant)
    accused = next(i for i in range(5) if i != servant)
    other = next(i for i in range(5) if i not in (servant, accused))
    before = evil_marginals(view)[accused]
    view["events"] = view["events"] + [{"type": "speech", "player": other, "text": f"I suspect player {accused}.",
                                        "public": True}] * 3
    after = evil_marginals(view)[accused]
    assert after != before


def test_search_agents_with_llm_speech_play_a_full_game():
    llm = Recorded(["I trust player 2 the least.", "Let us keep the team."])
    g = AvalonGame.new(AvalonConfig(5, discussion=True), seed=1)
    agents = {i: SearchAgent(i, worlds=2, speaker=LLMSpeaker(llm)) for i in range(5)}
    play_avalon(g, agents)
    speeches = [e["text"] for e in g.events if e["type"] == "speech"]
    assert g.winner and speeches and set(speeches) <= {"I trust player 2 the least.", "Let us keep the team."}
    assert describe_view(g.view(0), {1: 0.7}).count("Quest") >= 2
    assert clean_speech("") == "" and np.isfinite(len(llm.prompts))
