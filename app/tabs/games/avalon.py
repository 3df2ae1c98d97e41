"""Strategy Games → Avalon: play with agents in the other seats; the table's discussion is the chat. The
game lives on the server (``backends.games.avalon.match``); the session holds only its id, and the page
gets the player's information set until the game is over."""

from __future__ import annotations

import gradio as gr

from app.components.errors import user_errors
from app.tabs.games.common import LOG_LABEL, RELOAD_LABEL, quiet, seed_value, write_log
from backends.common.errors import InputError
from backends.games.avalon import match as avalon
from backends.games.avalon.game import ROLES, TEAM_SIZES, default_roles
from backends.games.logs import read_log

# the roles the tab's setups deal (the engine knows Percival, Morgana, Mordred and Oberon too; no setup has them)
PLAYABLE_ROLES = [r for r in ROLES if any(r in default_roles(n) for n in TEAM_SIZES)]
TURN_TEXT = {"speak": "Your turn to speak: say something to the table.", "propose": "You lead: pick a team.",
             "vote": "Vote on the proposed team.", "quest": "You are on the quest: play a card.",
             "assassinate": "You are the Assassin: name Merlin."}


def _chat(match) -> list[gr.ChatMessage]:
    out = []
    for line in avalon.transcript(match):
        if line["kind"] == "speech":
            mine = line["speaker"].endswith("(you)")
            out.append(gr.ChatMessage(role="user" if mine else "assistant", content=f"**{line['speaker']}:** {line['text']}"))
        else:
            out.append(gr.ChatMessage(role="assistant", content=line["text"], metadata={"title": line["speaker"]}
                                      if line["kind"] in ("end", "reasoning") else None))
    return out


def _avalon_outputs(match_id: str, match):
    turn = avalon.human_turn(match)
    view = match.game.view(match.human)
    n = match.game.n
    if match.over:
        status = (f"**Game over.** {match.game.winner.upper()} wins — {match.game.end_reason}. Seed **{match.seed}**: "
                  f"enter it to deal this game again.")
        if match.replaced_speeches:
            status += (f" {match.replaced_speeches} agent speech(es) were replaced by a neutral line because they "
                       f"gave away what the agent was told in private.")
    elif turn:
        extra = f" Team size {view['team_size']}." if turn == "propose" else (
            f" Team: {view['team']}." if turn in ("vote", "quest") else "")
        status = f"**{TURN_TEXT[turn]}**{extra}"
    else:
        status = "Waiting for the other players…"
    quests = " ".join("✓" if ok else "✗" for ok in match.game.quest_results) or "none yet"
    info = (f"You are **Player {match.human}**, {avalon.ROLE_NAMES.get(view['role'], view['role'])} ({view['side']}) · "
            f"quests: {quests} · leader: Player {view['leader']} · rejections this round: {view['rejections']}")
    if match.strategy:
        info += f" · agents' strategy: {match.strategy.get('name', '?')}"
    good = view["side"] == "good"
    return [
        match_id, _chat(match), status, info, write_log("avalon", avalon.offered_log(match, match_id)),
        gr.update(visible=turn == "speak"),
        gr.update(visible=turn == "propose"),
        gr.update(choices=[(f"Player {i}" + (" (you)" if i == match.human else ""), str(i)) for i in range(n)], value=[]),
        gr.update(visible=turn == "vote"),
        gr.update(visible=turn == "quest"),
        gr.update(interactive=not good),  # good players can only play Success
        gr.update(visible=turn == "assassinate"),
        gr.update(choices=[(f"Player {i}", str(i)) for i in range(n) if i != match.human], value=None),
    ]


def build(run_dir: gr.State) -> None:
    """The Avalon sub-tab; ``run_dir``: the session's Improve run, whose best strategy strategist agents play."""
    with gr.Tab("Avalon"):
        gr.Markdown("Play *The Resistance: Avalon* with agents in the other seats: search agents that weigh every "
                    "role assignment consistent with what they know and play each option out (optionally speaking "
                    "through an LLM), the same with a STRATEGIST strategy's value heuristic (and dialogue guides), "
                    "or AvalonBench-style rule agents. Speak, propose, vote, go on quests — the "
                    "table's discussion is the chat; the agents' private reasoning appears after the game.")
        av_state = gr.State(None)  # the id of the session's game; the game itself stays on the server
        with gr.Row():
            av_players = gr.Slider(5, 10, value=5, step=1, label="Players",
                                   info="Seats at the table, you included (5–10; more seats deal more evil roles).")
            av_role = gr.Dropdown(["random", *PLAYABLE_ROLES], value="Servant", label="Your role",
                                  info="The role you are dealt; random deals one as the game would.")
            av_discussion = gr.Checkbox(True, label="Discussion before each proposal",
                                        info="Everyone speaks once before each team proposal (the chat).")
            av_seed = gr.Number(-1, precision=0, minimum=-1, label="Seed (-1 = random)", elem_id="avalon-seed",
                                info="Same seed → the same deal and agents' choices; -1: a new one each game.")
            av_new = gr.Button("New game", variant="primary", elem_id="avalon-new")
        with gr.Row():
            av_agents = gr.Radio([("search over beliefs", "search"), ("rule-based (AvalonBench)", "rule"),
                                  ("search + LLM speech (slow on CPU)", "search+llm"),
                                  ("STRATEGIST strategy", "strategist"),
                                  ("STRATEGIST strategy + LLM speech by its guides", "strategist+llm")],
                                 value="search", label="Agents", elem_id="avalon-agents",
                                 info="LLM speech uses the configured endpoint, else the embedded SmolLM2-135M "
                                      "(tiny: fluent but shallow; set ICLR25_LLM_BASE_URL for a stronger model). "
                                      "STRATEGIST strategy: the best Avalon strategy of your Improve run, else the "
                                      "shipped one.")
        av_info = gr.Markdown(elem_id="avalon-info")
        chat = gr.Chatbot(label="Table", height=420, elem_id="avalon-chat")
        av_status = gr.Markdown(elem_id="avalon-status")
        with gr.Group(visible=False) as speak_box:
            with gr.Row():
                say = gr.Textbox(label="Your statement", scale=4, elem_id="avalon-say-text",
                                 info="What you tell the table before the next proposal.")
                say_btn = gr.Button("Say", variant="primary", elem_id="avalon-say")
        with gr.Group(visible=False) as propose_box:
            team_pick = gr.CheckboxGroup([], label="Team", elem_id="avalon-team",
                                         info="Tick as many players as this quest needs.")
            propose_btn = gr.Button("Propose team", variant="primary", elem_id="avalon-propose")
        with gr.Row(visible=False) as vote_box:
            approve_btn = gr.Button("Approve", variant="primary", elem_id="avalon-approve")
            reject_btn = gr.Button("Reject", variant="stop", elem_id="avalon-reject")
        with gr.Row(visible=False) as quest_box:
            success_btn = gr.Button("Success", variant="primary", elem_id="avalon-success")
            fail_btn = gr.Button("Fail", variant="stop", elem_id="avalon-fail")
        with gr.Group(visible=False) as assassin_box:
            target = gr.Dropdown([], label="Who is Merlin?", elem_id="avalon-target",
                                 info="As the Assassin: the player you think is Merlin; naming Merlin wins it for evil.")
            kill_btn = gr.Button("Assassinate", variant="stop", elem_id="avalon-kill")
        with gr.Row():
            av_log = gr.File(label=LOG_LABEL, elem_id="avalon-log")
            av_upload = gr.File(label=RELOAD_LABEL, file_types=[".json"], type="filepath", elem_id="avalon-upload")


    av_outputs = [av_state, chat, av_status, av_info, av_log, speak_box, propose_box, team_pick, vote_box, quest_box,
                  fail_btn, assassin_box, target]

    @user_errors
    @quiet
    def av_on_new(players, role, discussion, seed_v, agents_v, improve_dir):
        req = avalon.AvalonMatchRequest(int(players), role, bool(discussion), seed_value(seed_v), agents_v,
                                        strategy_run=improve_dir)
        return _avalon_outputs(*avalon.start(req))

    def av_action(kind):
        @user_errors
        @quiet
        def handler(match_id, value=None):
            if kind == "propose":
                value = [int(v) for v in (value or [])]
            elif kind == "assassinate":
                if value in (None, ""):
                    raise InputError("Choose whom to name as Merlin.")
                value = int(value)
            elif kind == "speak" and not str(value or "").strip():
                raise InputError("Type something to say (or 'pass').")
            return _avalon_outputs(match_id, avalon.play(match_id, kind, value))
        return handler

    @user_errors
    @quiet
    def av_on_upload(path):
        if not path:
            return [gr.update()] * len(av_outputs)
        return _avalon_outputs(*avalon.reload(read_log(path)))

    av_new.click(av_on_new, inputs=[av_players, av_role, av_discussion, av_seed, av_agents, run_dir], outputs=av_outputs,
                 api_name="avalon_new")
    say_btn.click(av_action("speak"), inputs=[av_state, say], outputs=av_outputs, api_name="avalon_say").then(
        lambda: "", outputs=say, api_visibility="private")
    say.submit(av_action("speak"), inputs=[av_state, say], outputs=av_outputs, api_visibility="private").then(
        lambda: "", outputs=say, api_visibility="private")
    propose_btn.click(av_action("propose"), inputs=[av_state, team_pick], outputs=av_outputs, api_name="avalon_propose")
    approve_btn.click(lambda s: av_action("vote")(s, True), inputs=av_state, outputs=av_outputs, api_name="avalon_approve")
    reject_btn.click(lambda s: av_action("vote")(s, False), inputs=av_state, outputs=av_outputs, api_name="avalon_reject")
    success_btn.click(lambda s: av_action("quest")(s, True), inputs=av_state, outputs=av_outputs, api_name="avalon_success")
    fail_btn.click(lambda s: av_action("quest")(s, False), inputs=av_state, outputs=av_outputs, api_name="avalon_fail")
    kill_btn.click(av_action("assassinate"), inputs=[av_state, target], outputs=av_outputs, api_name="avalon_assassinate")
    av_upload.upload(av_on_upload, inputs=av_upload, outputs=av_outputs, api_name="avalon_reload")
