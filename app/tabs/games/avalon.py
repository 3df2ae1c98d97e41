"""Strategy Games → Avalon: play with agents in the other seats; the table's discussion is the chat. The
game lives on the server (``backends.games.avalon.match``); the session holds only its id, and the page
gets the player's information set until the game is over."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from app.components.action_button import bind_action, bind_stop
from app.components.errors import user_errors
from app.components.params import control, documented
from app.tabs.games.common import LOG_LABEL, RELOAD_LABEL, labelled, quiet, write_log
from backends.games.actions import AVALON_NEW, AVALON_PLAY
from backends.games.avalon import match as avalon
from backends.games.avalon.match import AvalonTurn
from backends.games.logs import read_log
from backends.games.requests import AvalonMatchRequest, AvalonPlayRequest

AGENT_LABELS = {"search": "search over beliefs", "rule": "rule-based (AvalonBench)",
                "search+llm": "search + LLM speech (slow on CPU)", "strategist": "STRATEGIST strategy",
                "strategist+llm": "STRATEGIST strategy + LLM speech by its guides"}
PLAYING = "The other players are acting…"
KEPT = 12  # the outputs but the status (a Stop changes none of them)
TURN_TEXT = {"speak": "Your turn to speak: say something to the table.", "propose": "You lead: pick a team.",
             "vote": "Vote on the proposed team.", "quest": "You are on the quest: play a card.",
             "assassinate": "You are the Assassin: name Merlin."}


def _chat(t: AvalonTurn) -> list[gr.ChatMessage]:
    out = []
    for line in t.chat:
        if line["kind"] == "speech":
            mine = line["speaker"].endswith("(you)")
            out.append(gr.ChatMessage(role="user" if mine else "assistant", content=f"**{line['speaker']}:** {line['text']}"))
        else:
            out.append(gr.ChatMessage(role="assistant", content=line["text"], metadata={"title": line["speaker"]}
                                      if line["kind"] in ("end", "reasoning") else None))
    return out


def _values(t: AvalonTurn, log_path: str) -> list:
    """The table's outputs but the status: its id, the chat, the info line, the log, the controls for the person's
    turn."""
    info = (f"You are **Player {t.seat}**, {avalon.ROLE_NAMES.get(t.role, t.role)} ({t.side}) · "
            f"quests: {' '.join('✓' if ok else '✗' for ok in t.quest_results) or 'none yet'} · "
            f"leader: Player {t.leader} · rejections this round: {t.rejections}")
    if t.strategy:
        info += f" · agents' strategy: {t.strategy}"
    n, turn = t.num_players, t.turn
    return [
        t.match_id, _chat(t), info, log_path,
        gr.update(visible=turn == "speak"),
        gr.update(visible=turn == "propose"),
        gr.update(choices=[(f"Player {i}" + (" (you)" if i == t.seat else ""), str(i)) for i in range(n)], value=[]),
        gr.update(visible=turn == "vote"),
        gr.update(visible=turn == "quest"),
        gr.update(interactive=t.side != "good"),  # good players can only play Success
        gr.update(visible=turn == "assassinate"),
        gr.update(choices=[(f"Player {i}", str(i)) for i in range(n) if i != t.seat], value=None),
    ]


def _status(t: AvalonTurn) -> str:
    if t.over:
        status = f"**Game over.** {t.outcome}. Seed **{t.seed}**: enter it to deal this game again."
        if t.replaced_speeches:
            status += (f" {t.replaced_speeches} agent speech(es) were replaced by a neutral line because they "
                       f"gave away what the agent was told in private.")
        return status
    if t.turn:
        extra = f" Team size {t.team_size}." if t.turn == "propose" else (
            f" Team: {t.team}." if t.turn in ("vote", "quest") else "")
        return f"**{TURN_TEXT[t.turn]}**{extra}"
    return "Waiting for the other players…"


def _show(request, t: AvalonTurn, paths: dict) -> tuple:
    return (_status(t), *_values(t, str(paths["log"])))


def _stopped(request) -> tuple:
    """After a Stop: the game as it was (nothing to change on the page), and what to do now."""
    if isinstance(request, AvalonPlayRequest):
        return (f"Stopped: the other players' turns were stopped and your {request.action} was taken back; the game "
                f"is as it was — act again to go on (the agents choose the same).",
                *([gr.update()] * KEPT))
    return ("Stopped: no new game was dealt.", *([gr.update()] * KEPT))


def build(run_dir: gr.State) -> None:
    """The Avalon sub-tab; ``run_dir``: the session's Improve run, whose best strategy strategist agents play."""
    with gr.Tab("Avalon"):
        gr.Markdown("Play *The Resistance: Avalon* with agents in the other seats: search agents that weigh every "
                    "role assignment consistent with what they know and play each option out (optionally speaking "
                    "through an LLM), the same with a STRATEGIST strategy's value heuristic (and dialogue guides), "
                    "or AvalonBench-style rule agents. Speak, propose, vote, go on quests — the "
                    "table's discussion is the chat; the agents' private reasoning appears after the game.")
        ui = SimpleNamespace(state=gr.State(None))  # the id of the session's game; the game stays on the server
        with gr.Row():
            ui.players = control(AvalonMatchRequest, "num_players")
            ui.role = control(AvalonMatchRequest, "human_role")
            ui.discussion = control(AvalonMatchRequest, "discussion")
            ui.seed = control(AvalonMatchRequest, "seed", widget="number", elem_id="avalon-seed")
            ui.new = gr.Button("New game", variant="primary", elem_id="avalon-new")
            ui.stop = gr.Button("Stop", variant="stop", elem_id="avalon-stop")
        with gr.Row():
            ui.agents = labelled(AvalonMatchRequest, "agents", AGENT_LABELS, elem_id="avalon-agents")
        ui.info = gr.Markdown(elem_id="avalon-info")
        ui.chat = gr.Chatbot(label="Table", height=420, elem_id="avalon-chat")
        ui.status = gr.Markdown(elem_id="avalon-status")
        with gr.Group(visible=False) as ui.speak_box:
            with gr.Row():
                ui.say = gr.Textbox(label="Your statement", scale=4, elem_id="avalon-say-text",
                                    info="What you tell the table before the next proposal.")
                ui.say_btn = gr.Button("Say", variant="primary", elem_id="avalon-say")
        with gr.Group(visible=False) as ui.propose_box:
            ui.team = gr.CheckboxGroup([], label="Team", elem_id="avalon-team",
                                       info="Tick as many players as this quest needs.")
            ui.propose = gr.Button("Propose team", variant="primary", elem_id="avalon-propose")
        with gr.Row(visible=False) as ui.vote_box:
            ui.approve = gr.Button("Approve", variant="primary", elem_id="avalon-approve")
            ui.reject = gr.Button("Reject", variant="stop", elem_id="avalon-reject")
        with gr.Row(visible=False) as ui.quest_box:
            ui.success = gr.Button("Success", variant="primary", elem_id="avalon-success")
            ui.fail = gr.Button("Fail", variant="stop", elem_id="avalon-fail")
        with gr.Group(visible=False) as ui.assassin_box:
            ui.target = gr.Dropdown([], label="Who is Merlin?", elem_id="avalon-target",
                                    info="As the Assassin: the player you think is Merlin; naming Merlin wins it for evil.")
            ui.kill = gr.Button("Assassinate", variant="stop", elem_id="avalon-kill")
        with gr.Row():
            ui.log = gr.File(label=LOG_LABEL, elem_id="avalon-log")
            ui.upload = gr.File(label=RELOAD_LABEL, file_types=[".json"], type="filepath", elem_id="avalon-upload")
    _wire(ui, run_dir)


def to_new(num_players, human_role, discussion, seed, agents, strategy_run) -> AvalonMatchRequest:
    """Args:
        strategy_run: The session's Improve run (held by the session), whose best strategy strategist agents play.
    """
    return avalon.with_strategy(AvalonMatchRequest(num_players, human_role, discussion, -1 if seed is None else seed,
                                                   agents, strategy_run=strategy_run))


def to_say(match_id, text) -> AvalonPlayRequest:
    """Args:
        match_id: The session's game (held by the session).
    """
    return AvalonPlayRequest(match_id, "speak", text=text)


def to_propose(match_id, team) -> AvalonPlayRequest:
    """Args:
        match_id: The session's game (held by the session).
        team: The seats on the team (numbers, or their names as the page sends them: "0", "3").
    """
    return AvalonPlayRequest(match_id, "propose", team=list(team or []))


def to_assassinate(match_id, target) -> AvalonPlayRequest:
    """Args:
        match_id: The session's game (held by the session).
    """
    return AvalonPlayRequest(match_id, "assassinate", target=None if target in (None, "") else int(target))


def _fixed(action: str, **value):
    """A button's request: the action with its value (approve, reject, success, fail)."""

    def to_request(match_id) -> AvalonPlayRequest:
        """Args:
            match_id: The session's game (held by the session).
        """
        return AvalonPlayRequest(match_id, action, **value)

    return to_request


def _wire(ui: SimpleNamespace, run_dir: gr.State) -> None:
    """New game and every action of the person: the games_avalon_new / games_avalon_play actions (progress on the
    status line while the agents play, Stop between their search steps); reloading a log is a light handler."""
    outputs = [ui.state, ui.chat, ui.status, ui.info, ui.log, ui.speak_box, ui.propose_box, ui.team, ui.vote_box,
               ui.quest_box, ui.fail, ui.assassin_box, ui.target]
    common = dict(outputs=outputs, status=ui.status, show=_show, stopped=_stopped, running=PLAYING,
                  concurrency_id="games-avalon", concurrency_limit=4)
    bind_action(AVALON_NEW, trigger=ui.new.click, to_request=to_new, api_name="avalon_new",
                inputs=[ui.players, ui.role, ui.discussion, ui.seed, ui.agents, run_dir], **common)
    say = bind_action(AVALON_PLAY, trigger=ui.say_btn.click, inputs=[ui.state, ui.say], to_request=to_say,
                      api_name="avalon_say", **common)
    say.then(lambda: "", outputs=ui.say, api_visibility="private")
    said = bind_action(AVALON_PLAY, trigger=ui.say.submit, inputs=[ui.state, ui.say], to_request=to_say,
                       api_name="avalon_say_submit", api_visibility="private", **common)
    said.then(lambda: "", outputs=ui.say, api_visibility="private")
    bind_action(AVALON_PLAY, trigger=ui.propose.click, inputs=[ui.state, ui.team], to_request=to_propose,
                api_name="avalon_propose", **common)
    for button, name, action, value in ((ui.approve, "avalon_approve", "vote", {"approve": True}),
                                        (ui.reject, "avalon_reject", "vote", {"approve": False}),
                                        (ui.success, "avalon_success", "quest", {"success": True}),
                                        (ui.fail, "avalon_fail", "quest", {"success": False})):
        bind_action(AVALON_PLAY, trigger=button.click, inputs=[ui.state], to_request=_fixed(action, **value),
                    api_name=name, **common)
    bind_action(AVALON_PLAY, trigger=ui.kill.click, inputs=[ui.state, ui.target], to_request=to_assassinate,
                api_name="avalon_assassinate", **common)
    bind_stop(ui.stop, [AVALON_NEW, AVALON_PLAY], ui.status, api_name="avalon_stop")

    @user_errors
    @documented()
    @quiet
    def on_reload(log):
        """A downloaded log back in play: your view's log resumes your game while the server holds it; a finished
        game's full log shows that game (every role, the agents' reasoning, the seed).

        Args:
            log: An Avalon log this tab offered (JSON).
        """
        if not log:
            return [gr.update()] * len(outputs)
        t = avalon.turn(*avalon.reload(read_log(log)))
        return _values_with_status(t, write_log("avalon", (t.log_name, t.log_text)))

    ui.upload.upload(on_reload, inputs=ui.upload, outputs=outputs, api_name="avalon_reload")


def _values_with_status(t: AvalonTurn, log_path: str) -> list:
    """Every output, in the order of the events' outputs (the status third)."""
    match_id, chat, *rest = _values(t, log_path)
    return [match_id, chat, _status(t), *rest]
