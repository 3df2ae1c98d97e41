"""A model of how the opponent bids, learned online from the bids it reveals.

GOPS reveals both bids after every round, so an agent can watch its opponent. The model is a
softmax over the cards in the opponent's hand (a conditional logit) on a few features of
(card, prize, prizes still to come); its weights are fitted by maximum likelihood to every revealed
bid seen so far — within a game and across the games one agent plays. Search then samples the
opponent's bids from the model instead of treating it as a perfect searcher (expectimax against the
model rather than decoupled UCT), which is how a search agent exploits a weaker or noisier player.
With no observations the weights are zero: the opponent is modelled as bidding uniformly at random.

The features are computed the same way in the compiled search (``gops.search._model_pick``); a test
checks that the two agree.
"""

from __future__ import annotations

import numpy as np

from backends.games.gops.game import GopsState

FEATURES = ("(card − prize) / N", "|card − prize| / N", "rank of card in hand", "lowest card", "highest card",
            "|hand rank − prize rank|", "hand rank − prize rank")


def features(hand: list[int], prize: int, prizes_left: list[int], n: int) -> np.ndarray:
    """One row of :data:`FEATURES` per card of ``hand`` (ascending), for the round whose prize is ``prize``."""
    cards = sorted(hand)
    m = len(cards)
    rest = sorted(set(prizes_left) | {prize})
    pr = rest.index(prize) / (m - 1) if m > 1 else 0.5
    rows = []
    for i, c in enumerate(cards):
        r = i / (m - 1) if m > 1 else 0.5
        rows.append([(c - prize) / n, abs(c - prize) / n, r, float(i == 0), float(i == m - 1), abs(r - pr), r - pr])
    return np.asarray(rows, np.float64)


def probabilities(weights: np.ndarray, hand: list[int], prize: int, prizes_left: list[int], n: int) -> np.ndarray:
    """The model's probability of each card of ``hand`` (ascending)."""
    z = features(hand, prize, prizes_left, n) @ weights
    p = np.exp(z - z.max())
    return p / p.sum()


class OpponentModel:
    """Conditional-logit model of one opponent, refitted after each new revealed bid.

    ``l2`` keeps the weights small while there are few observations (a prior towards uniform); each
    refit is ``steps`` full-batch gradient steps warm-started from the last weights, over the latest
    ``window`` observations (so the cost per move stays bounded and a changing opponent is followed).
    """

    def __init__(self, n: int = 13, l2: float = 0.005, steps: int = 20, lr: float = 2.0, window: int = 2000):
        self.n = n
        self.weights = np.zeros(len(FEATURES))
        self.l2, self.steps, self.lr, self.window = l2, steps, lr, window
        self._f = np.zeros((0, n, len(FEATURES)))
        self._mask = np.zeros((0, n), bool)
        self._y = np.zeros(0, np.int64)
        self._seen: set[tuple] = set()

    @property
    def observations(self) -> int:
        return len(self._y)

    def observe(self, state: GopsState, opponent: int) -> int:
        """Record the opponent's revealed bids in ``state`` not recorded yet; refit when any were new.
        Returns how many were new. A round is identified by the game's history up to it."""
        n = state.config.num_cards
        if n != self.n:
            raise ValueError(f"this model is for GOPS-{self.n}, the game is GOPS-{n}")
        rows, masks, ys = [], [], []
        for k, bids in enumerate(state.bids):
            key = (state.prizes[: k + 1], state.bids[: k + 1])
            if key in self._seen:
                continue
            self._seen.add(key)
            hand = sorted(set(range(1, n + 1)) - {b[opponent] for b in state.bids[:k]})
            left = sorted(set(range(1, n + 1)) - set(state.prizes[: k + 1]))
            if len(hand) > 1:
                f = np.zeros((n, len(FEATURES)))
                f[: len(hand)] = features(hand, state.prizes[k], left, n)
                rows.append(f)
                masks.append(np.arange(n) < len(hand))
                ys.append(hand.index(bids[opponent]))
        if rows:
            self._f = np.concatenate([self._f, rows])[-self.window:]
            self._mask = np.concatenate([self._mask, masks])[-self.window:]
            self._y = np.concatenate([self._y, ys])[-self.window:]
            self.fit(self.steps)
        return len(rows)

    def _probs(self, w: np.ndarray) -> np.ndarray:
        z = np.where(self._mask, self._f @ w, -np.inf)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True)

    def fit(self, steps: int) -> None:
        """Full-batch gradient ascent on the mean log-likelihood, warm-started."""
        if not len(self._y):
            return
        w = self.weights
        chosen = self._f[np.arange(len(self._y)), self._y]
        for _ in range(steps):
            p = self._probs(w)
            grad = (chosen - np.einsum("bk,bkf->bf", p, self._f)).mean(axis=0) - self.l2 * w
            w = w + self.lr * grad
        self.weights = w

    def log_likelihood(self) -> float:
        """Mean log-probability of the observed bids under the current weights (0 with none)."""
        if not len(self._y):
            return 0.0
        p = self._probs(self.weights)
        return float(np.log(p[np.arange(len(self._y)), self._y]).mean())
