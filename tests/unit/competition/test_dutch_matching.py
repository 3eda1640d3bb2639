"""The weighted matching at the heart of the Dutch engine (`_dutch_core`), against brute force.

The engine re-solves after changing the weights of one vertex's edges many times a round; the
answer must stay a maximum-weight matching through any sequence of such changes. Random graphs
up to 11 vertices, dense and sparse, with many equal weights (as a scoregroup has), are solved
and changed, and every matching is compared with the best one found by exhaustive search.
"""

from __future__ import annotations

from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.competition import _dutch_core


def best_weight(weights: tuple[tuple[int, ...], ...]) -> int:
    """The weight of a maximum-weight matching, by exhaustive search over subsets."""
    n = len(weights)

    @cache
    def best(used: int) -> int:
        free = next((v for v in range(n) if not used >> v & 1), None)
        if free is None:
            return 0
        used |= 1 << free
        result = best(used)  # leave `free` unmatched
        for other in range(free + 1, n):
            if not used >> other & 1 and weights[free][other]:
                result = max(result, weights[free][other] + best(used | 1 << other))
        return result

    return best(0)


def matching_weight(weights: list[list[int]], mates: list[int]) -> int:
    """The weight of a matching given as a mate list, checking that it is one."""
    total = 0
    for v, mate in enumerate(mates):
        if mate < 0:
            continue
        assert mates[mate] == v, mates
        assert weights[v][mate] > 0, (v, mate)
        if v < mate:
            total += weights[v][mate]
    return total


@st.composite
def graphs_and_changes(draw: st.DrawFn) -> tuple[int, list, list]:
    """A graph (n, edges) and a sequence of changes to one vertex's edges each."""
    n = draw(st.integers(1, 11))
    top = draw(st.sampled_from([3, 10, 1000]))
    density = draw(st.floats(0.1, 1.0))
    edges = [
        (u, v, draw(st.integers(1, top)))
        for u in range(n)
        for v in range(u + 1, n)
        if draw(st.floats(0, 1)) < density
    ]
    changes = []
    for _ in range(draw(st.integers(0, 6))):
        v = draw(st.integers(0, n - 1))
        changed = [(u, draw(st.integers(0, top))) for u in range(n) if u != v and draw(st.booleans())]
        changes.append((v, changed))
    return n, edges, changes


@settings(max_examples=400)
@given(graphs_and_changes())
def test_every_matching_is_a_maximum_weight_one(case: tuple[int, list, list]) -> None:
    n, edges, changes = case
    weights = [[0] * n for _ in range(n)]
    for u, v, w in edges:
        weights[u][v] = weights[v][u] = w
    snapshots = [[row[:] for row in weights]]
    for v, changed in changes:
        for u, w in changed:
            weights[u][v] = weights[v][u] = w
        snapshots.append([row[:] for row in weights])
    answers = _dutch_core.max_weight_matching(n, edges, changes)
    assert len(answers) == len(snapshots)
    for mates, snapshot in zip(answers, snapshots, strict=True):
        assert matching_weight(snapshot, mates) == best_weight(tuple(map(tuple, snapshot)))


def test_equal_weights_everywhere() -> None:
    # a scoregroup of 9 where every pair weighs the same: a matching of 4 pairs, one left over
    n = 9
    edges = [(u, v, 5) for u in range(n) for v in range(u + 1, n)]
    [mates] = _dutch_core.max_weight_matching(n, edges, [])
    assert sum(1 for m in mates if m >= 0) == 8
