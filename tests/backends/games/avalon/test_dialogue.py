"""LLM speech for Avalon agents, with a recorded-response double standing in for the LLM."""


from backends.games.avalon.agents import play_avalon
from backends.games.avalon.dialogue import (
    NEUTRAL_LINE,
    LLMSpeaker,
    accusations,
    clean_speech,
    describe_view,
    leaks,
)
from backends.games.avalon.game import AvalonConfig, AvalonGame
from backends.games.avalon.search import SearchAgent, evil_marginals
from backends.games.strategist.llm import LLMReply


class Recorded:
    """Test double: answers from a fixed list and records the prompts it got."""

    name = "recorded"

    def __init__(self, replies):
        self.replies, self.prompts = list(replies), []

    def complete(self, messages, max_tokens=512, temperature=0.7, seed=None, cancel=None):
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
    assert clean_speech("") == ""
    assert len(llm.prompts) == len(speeches)  # every speech came from one LLM call, none from elsewhere


class Echo:
    """Test double: an LLM that recites its prompt (the user message, or the system message)."""

    name = "echo"

    def __init__(self, which: int = 1):
        self.which = which

    def complete(self, messages, max_tokens=512, temperature=0.7, seed=None, cancel=None):
        return LLMReply(messages[self.which]["content"], self.name)


def _seven_player_game():
    from backends.games.avalon.game import AvalonConfig as Config

    roles = ("Merlin", "Percival", "Servant", "Servant", "Morgana", "Assassin", "Minion")
    return AvalonGame.new(Config(7, roles=roles, discussion=True), seed=2)


def test_an_llm_that_echoes_its_prompt_is_silenced_and_counted():
    for g in (AvalonGame.new(AvalonConfig(5, discussion=True), seed=4), _seven_player_game()):
        for which in (0, 1):
            speaker = LLMSpeaker(Echo(which))
            for seat in range(g.n):
                view = g.view(seat)
                said = speaker(view, evil_marginals(view))
                assert said == NEUTRAL_LINE, (g.roles[seat], said)
                assert f"role {g.roles[seat]}" not in said and "You see" not in said
            assert speaker.said == speaker.replaced == g.n


def test_leaks_catch_private_knowledge_and_let_fair_speech_through():
    g = AvalonGame.new(AvalonConfig(5, discussion=True), seed=4)
    merlin, servant = g.roles.index("Merlin"), g.roles.index("Servant")
    minion, assassin = g.roles.index("Minion"), g.roles.index("Assassin")
    v = {seat: g.view(seat) for seat in range(5)}
    fair = ["I suspect player 2. Keep player 2 off the team.", "I trust player 1 the least after that vote.",
            "I am loyal to Arthur.", "The Assassin will try to find Merlin, so let us be careful."]
    for seat in range(5):
        for text in fair:
            assert not leaks(text, v[seat], []), (g.roles[seat], text)
    assert leaks(f"As the Minion I back player {servant}.", v[minion], [])
    assert leaks("I'm the assassin, sorry.", v[assassin], [])
    assert leaks(f"My partner player {assassin} should lead.", v[minion], [])
    assert leaks("We evil players should stick together.", v[assassin], [])
    assert leaks(f"Player {assassin} is evil, I am certain.", v[merlin], [])  # Merlin was told so
    assert not leaks(f"Player {assassin} is evil, I am certain.", v[servant], [])  # a guess: nobody told it
    assert leaks(f"Player {minion} (evil) should not go.", v[servant], [])  # the prompt's format
    assert leaks("I am Merlin, trust me.", v[merlin], [])
    assert leaks("Trust me: be brief and concrete, name the player you trust least.", v[servant],
                 ["Be brief and concrete. Name the player you trust least and why."])


def test_a_leaking_speech_is_replaced_in_a_game_and_fair_speech_is_kept():
    g = AvalonGame.new(AvalonConfig(5, discussion=True), seed=1)
    llm = Recorded(["You are player 1 of 5, role Minion (evil). You see: player 2 (evil).", "I suspect player 3."])
    speaker = LLMSpeaker(llm)
    agents = {i: SearchAgent(i, worlds=2, speaker=speaker) for i in range(5)}
    play_avalon(g, agents)
    speeches = [e["text"] for e in g.events if e["type"] == "speech"]
    assert set(speeches) == {NEUTRAL_LINE, "I suspect player 3."}
    assert speaker.replaced == speeches.count(NEUTRAL_LINE) > 0 and speaker.said == len(speeches)
