"""Choosing devices for free values so that a function needs the fewest copies.

`plan-devices` reduces a module to this problem (docs/devices.md, "What the
planner decides"): *nodes* are device variables (after unification), some
fixed to a device, the others free; a *value* lives on one node and is read
at a set of nodes. A value read on devices other than its own is copied once
per such device, so the copies a labelling costs are

    copies = sum over values of |{device of a reader} - {device of the value}|

(counted in copies, not bytes: every copy costs one). `choose` labels every
free node so that `copies` is minimal, and among minimal labellings prefers
the one that agrees with a given preferred labelling on the most nodes (the
planner passes its first-consumer rule, so programs whose plan already was
minimal keep it). The objective is the lexicographic pair, made one integer
as `WEIGHT * copies + disagreements` with `WEIGHT` above any disagreement
count.

Free nodes are solved per group connected through values. A group touching
no fixed node, or fixed nodes of one device only, goes on one device (the
only zero-copy labellings): that device, or the one most of its nodes
prefer.
Merging two devices never adds copies, so a group only ever uses the devices
fixed next to it. With two such devices, one minimum s-t cut is the exact
optimum (a value with all its readers is a hyperedge that costs one copy iff
it is cut, which a cut graph expresses with two auxiliary nodes). With three
or more — multiway cut, NP-hard in general — a group of at most
`EXACT_LIMIT` labellings is enumerated (exact); a larger one starts from the
preferred labelling and applies alpha-beta swap moves (each an exact minimum
cut over the nodes on two devices) until no swap lowers the objective: the
result is never worse than the preference, and no re-partition of any two
devices' free nodes improves it.
"""

from __future__ import annotations

import itertools
from collections import Counter, deque
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

EXACT_LIMIT = 3**8
"""Groups with at most this many labellings (e.g. 8 free nodes, 3 devices) are enumerated."""

_INF = 1 << 60


@dataclass(frozen=True)
class Value:
    """A value living on node `home`, read at nodes `readers`."""

    home: int
    readers: frozenset[int]


def copies(values: Sequence[Value], label: Mapping[int, Hashable]) -> int:
    """How many copies `label` needs: one per value and foreign reader device."""
    return sum(len({label[r] for r in v.readers} - {label[v.home]}) for v in values)


def choose(
    values: Sequence[Value],
    fixed: Mapping[int, Hashable],
    free: Sequence[int],
    prefer: Mapping[int, Hashable],
    order: Sequence[Hashable],
) -> dict[int, Hashable]:
    """A device for every node of `free`: fewest copies, then closest to `prefer`.

    `order` lists every device once; it fixes how ties are broken, so the
    result depends only on the inputs (never on set or dict iteration order).
    """
    rank = {d: i for i, d in enumerate(order)}
    result: dict[int, Hashable] = {}
    for group, touching in _groups(values, free):
        devices = sorted(
            {fixed[n] for v in touching for n in (v.home, *v.readers) if n in fixed},
            key=lambda d: rank[d],
        )
        if len(devices) <= 1:  # zero copies: the whole group on one device
            votes = Counter(prefer[n] for n in group)
            only = devices[0] if devices else min(votes, key=lambda d: (-votes[d], rank[d]))
            result.update(dict.fromkeys(group, only))
            continue
        problem = _Problem(touching, dict(fixed), group, prefer)
        if len(devices) == 2 or len(devices) ** len(group) > EXACT_LIMIT:
            result.update(problem.swaps(devices))
        else:
            result.update(problem.enumerate(devices))
    return result


def _groups(values: Sequence[Value], free: Sequence[int]) -> list[tuple[list[int], list[Value]]]:
    """Free nodes connected through values, each with the values touching it (in input order)."""
    parent = {n: n for n in free}

    def find(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for v in values:
        nodes = [n for n in (v.home, *sorted(v.readers)) if n in parent]
        for n in nodes[1:]:
            parent[find(n)] = find(nodes[0])
    members: dict[int, list[int]] = {}
    for n in free:
        members.setdefault(find(n), []).append(n)
    touching: dict[int, list[Value]] = {root: [] for root in members}
    for v in values:
        node = next((n for n in (v.home, *v.readers) if n in parent), None)
        if node is not None:
            touching[find(node)].append(v)
    return [(members[root], touching[root]) for root in members]


@dataclass
class _Problem:
    """One connected group of free nodes and the values touching it."""

    values: list[Value]
    label: dict[int, Hashable]
    """Fixed nodes' devices; the free nodes' are filled in by the solvers."""
    free: list[int]
    prefer: Mapping[int, Hashable]

    @property
    def weight(self) -> int:
        return len(self.free) + 1

    def objective(self) -> int:
        misses = sum(self.label[n] != self.prefer[n] for n in self.free)
        return self.weight * copies(self.values, self.label) + misses

    def enumerate(self, devices: Sequence[Hashable]) -> dict[int, Hashable]:
        """Exact: the first labelling (in `devices` order) with the least objective."""
        best: tuple[int, tuple[Hashable, ...]] | None = None
        for choice in itertools.product(devices, repeat=len(self.free)):
            self.label.update(zip(self.free, choice, strict=True))
            score = self.objective()
            if best is None or score < best[0]:
                best = (score, choice)
        assert best is not None
        return dict(zip(self.free, best[1], strict=True))

    def swaps(self, devices: Sequence[Hashable]) -> dict[int, Hashable]:
        """Alpha-beta swaps from the preferred labelling (one cut is exact for two devices)."""
        for n in self.free:
            pref = self.prefer[n]
            self.label[n] = pref if pref in devices else devices[0]
        if len(devices) == 2:  # one cut over all the free nodes: the global optimum
            self._swap(*devices)
            return {n: self.label[n] for n in self.free}
        score = self.objective()
        improved = True
        while improved:
            improved = False
            for alpha, beta in itertools.combinations(devices, 2):
                before = {n: self.label[n] for n in self.free}
                self._swap(alpha, beta)
                new = self.objective()
                if new < score:
                    score, improved = new, True
                else:
                    self.label.update(before)
        return {n: self.label[n] for n in self.free}

    def _swap(self, alpha: Hashable, beta: Hashable) -> None:
        """Relabel the free nodes on `alpha` or `beta` optimally between the two (min cut)."""
        moving = [n for n in self.free if self.label[n] in (alpha, beta)]
        if not moving:
            return
        graph = _CutGraph(moving)
        for v in self.values:
            self._value_edges(graph, v, alpha, beta)
        graph.max_flow()  # the copies first: a few augmentations of `weight` each
        for n in moving:  # then the preference, from that flow: few units more
            pref = self.prefer[n]
            if pref == alpha:
                graph.edge(graph.source, graph.node[n], 1)  # cut when n goes to beta
            elif pref == beta:
                graph.edge(graph.node[n], graph.sink, 1)
        graph.max_flow()
        on_alpha = graph.source_side()
        for n in moving:
            self.label[n] = alpha if graph.node[n] in on_alpha else beta

    def _value_edges(self, graph: _CutGraph, v: Value, alpha: Hashable, beta: Hashable) -> None:
        """Edges whose cut costs `weight` per copy `v` needs to alpha or beta.

        Source side is alpha, sink side beta. Copies to other devices do not
        depend on this move (they are constant), so only the two ORs remain:
        "some reader on beta" (when the home is not on beta) and "some reader
        on alpha" (when the home is not on alpha).
        """
        w, node = self.weight, graph.node
        readers = v.readers - {v.home}
        moving = [r for r in sorted(readers) if r in node]
        const = {self.label[r] for r in readers if r not in node}
        home = node.get(v.home)
        for other, side in ((beta, 1), (alpha, 0)):
            # cost w when some reader is on `other` and the home is not on `other`
            if home is None and self.label[v.home] == other:
                continue
            if other in const:  # a constant reader already on `other`
                if home is not None:  # pay iff the home is on the other device
                    graph.edge(*((home, graph.sink) if side else (graph.source, home)), w)
                continue
            if not moving:
                continue
            aux = graph.new()
            for r in moving:  # aux is on `other` whenever some reader is
                graph.edge(*((aux, node[r]) if side else (node[r], aux)), _INF)
            if home is None:  # constant home elsewhere: pay iff aux on `other`
                graph.edge(*((graph.source, aux) if side else (aux, graph.sink)), w)
            else:  # pay iff the home is not on `other` and aux is
                graph.edge(*((home, aux) if side else (aux, home)), w)


class _CutGraph:
    """A flow network; `source_side` is the minimal source set of a minimum cut.

    Dinic's algorithm (level graph, blocking flows with per-node edge
    pointers). `_swap` saturates the copy edges (capacity `weight`) before it
    adds the preference edges (capacity 1): routed first, the unit edges
    would carry up to `weight` separate paths across every cut copy edge.
    """

    def __init__(self, nodes: Sequence[int]) -> None:
        self.source, self.sink = 0, 1
        self.node = {n: i + 2 for i, n in enumerate(nodes)}
        self.adj: list[list[int]] = [[] for _ in range(len(nodes) + 2)]
        self.to: list[int] = []
        self.cap: list[int] = []

    def new(self) -> int:
        self.adj.append([])
        return len(self.adj) - 1

    def edge(self, u: int, w: int, c: int) -> None:
        """An edge u -> w of capacity c (its reverse, index ^ 1, starts empty)."""
        self.adj[u].append(len(self.to))
        self.to.append(w)
        self.cap.append(c)
        self.adj[w].append(len(self.to))
        self.to.append(u)
        self.cap.append(0)

    def _levels(self) -> list[int] | None:
        level = [-1] * len(self.adj)
        level[self.source] = 0
        queue = deque([self.source])
        while queue:
            u = queue.popleft()
            for e in self.adj[u]:
                w = self.to[e]
                if self.cap[e] > 0 and level[w] < 0:
                    level[w] = level[u] + 1
                    queue.append(w)
        return level if level[self.sink] >= 0 else None

    def _blocking_flow(self, level: list[int]) -> None:
        """Augment along shortest paths until none is left (iterative DFS)."""
        nxt = [0] * len(self.adj)
        while True:
            path: list[int] = []  # edge indices from the source
            u = self.source
            while u != self.sink:
                edges = self.adj[u]
                while nxt[u] < len(edges):
                    e = edges[nxt[u]]
                    w = self.to[e]
                    if self.cap[e] > 0 and level[w] == level[u] + 1:
                        break
                    nxt[u] += 1
                if nxt[u] == len(edges):  # dead end: retreat
                    if not path:
                        return
                    level[u] = -1
                    e = path.pop()
                    u = self.to[e ^ 1]
                    nxt[u] += 1
                    continue
                e = edges[nxt[u]]
                path.append(e)
                u = self.to[e]
            flow = min(self.cap[e] for e in path)
            for e in path:
                self.cap[e] -= flow
                self.cap[e ^ 1] += flow

    def max_flow(self) -> None:
        """Augment the current flow to a maximum one (edges may be added between calls)."""
        while (level := self._levels()) is not None:
            self._blocking_flow(level)

    def source_side(self) -> set[int]:
        """After `max_flow`: the nodes still reachable from the source."""
        seen, stack = {self.source}, [self.source]
        while stack:
            u = stack.pop()
            for e in self.adj[u]:
                w = self.to[e]
                if self.cap[e] > 0 and w not in seen:
                    seen.add(w)
                    stack.append(w)
        return seen


__all__ = ["EXACT_LIMIT", "Value", "choose", "copies"]
