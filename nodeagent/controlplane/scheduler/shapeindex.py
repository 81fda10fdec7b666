"""Per pod shape, what the node pass knows about each node at the node's current version: which
nodes do not fit, which fit and with what rank.

Why: upstream filters nodes from a rotating start until it has found numFeasibleNodesToFind of
them (max(100, 5-50% of the cluster)) and scores those. With the equivalence cache every node but
the few that changed since the last pod of the same shape gives the remembered answer, so a pass
reduces to counting remembered fits between the changed nodes (popcounts on bitmasks) and a
range minimum over their ranks (a segment tree), instead of a Python loop over hundreds of nodes.
The answer is the same as that loop's: the same nodes in the same order, the same best node.

Indexes are positions in the pass's sorted node list; `NodePass` clears a node's bits from the
cache's change log and resets the state when the node list is rebuilt. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

INF: tuple[Any, ...] = (math.inf,)
"""Greater than every rank (ranks start with an int score)."""


class MinTree:
    """Range minimum over ranks (tuples) by node index; INF where no fitting node is known."""

    __slots__ = ("items", "size")

    def __init__(self, n: int) -> None:
        size = 1
        while size < n:
            size *= 2
        self.size = size
        self.items: list[tuple[Any, ...]] = [INF] * (2 * size)

    def set(self, i: int, value: tuple[Any, ...]) -> None:
        items = self.items
        j = i + self.size
        items[j] = value
        j >>= 1
        while j:
            a, b = items[2 * j], items[2 * j + 1]
            low = a if a < b else b
            if items[j] is low:
                return  # the ancestors already hold it
            items[j] = low
            j >>= 1

    def min(self, lo: int, hi: int) -> tuple[Any, ...]:
        """The least rank among indexes lo <= i < hi."""
        items = self.items
        best = INF
        lo += self.size
        hi += self.size
        while lo < hi:
            if lo & 1:
                if items[lo] < best:
                    best = items[lo]
                lo += 1
            if hi & 1:
                hi -= 1
                if items[hi] < best:
                    best = items[hi]
            lo >>= 1
            hi >>= 1
        return best


class ShapeState:
    """One pod shape's knowledge: `misfit` and `fit` bitmasks over node indexes, the ranks of the
    fitting nodes in a MinTree and their candidates by node name."""

    __slots__ = ("cands", "epoch", "fit", "misfit", "n", "seen", "tree", "value_of", "values")

    def __init__(self) -> None:
        self.misfit = 0
        self.fit = 0
        self.seen = 0  # position in the cache's change log
        self.epoch = -1  # the node list it indexes
        self.n = 0
        self.tree = MinTree(0)
        self.cands: dict[str, Any] = {}
        self.values: dict[int, int] = {}
        """How many fitting nodes have each value (a score the rank leaves out): one key, and that
        score is equal on every node of any window."""
        self.value_of: dict[str, int] = {}

    def reset(self, n: int) -> None:
        self.misfit = self.fit = 0
        self.n = n
        self.tree = MinTree(n)
        self.cands = {}
        self.values = {}
        self.value_of = {}

    def forget(self, i: int, name: str) -> None:
        """Node i changed: nothing is known about it any more."""
        bit = 1 << i
        self.misfit &= ~bit
        if self.fit & bit:
            self.fit &= ~bit
            self.tree.set(i, INF)
            self.cands.pop(name, None)
            value = self.value_of.pop(name, 0)
            left = self.values.get(value, 0) - 1
            if left > 0:
                self.values[value] = left
            else:
                self.values.pop(value, None)

    def fits(self, i: int, name: str, cand: Any, rank: tuple[Any, ...], value: int = 0) -> None:
        self.fit |= 1 << i
        self.tree.set(i, rank)
        self.cands[name] = cand
        self.value_of[name] = value
        self.values[value] = self.values.get(value, 0) + 1

    def uniform(self) -> bool:
        """Every fitting node has the same value."""
        return len(self.values) <= 1

    def unknown(self) -> int:
        """Bits of the nodes to evaluate."""
        return ((1 << self.n) - 1) & ~self.misfit & ~self.fit

    def count(self, lo: int, hi: int) -> int:
        """Fitting nodes at rotation positions lo <= p < hi (positions past n wrap around)."""
        if hi <= lo:
            return 0
        doubled = self.fit | (self.fit << self.n)
        return ((doubled >> lo) & ((1 << (hi - lo)) - 1)).bit_count()

    def nth(self, lo: int, k: int) -> int:
        """The rotation position of the k-th (1-based) fitting node at or after position lo."""
        bits = (self.fit | (self.fit << self.n)) >> lo
        low, high = 1, bits.bit_length()
        while low < high:  # the least p with k fitting nodes below lo + p
            mid = (low + high) // 2
            if (bits & ((1 << mid) - 1)).bit_count() >= k:
                high = mid
            else:
                low = mid + 1
        return lo + low - 1

    def best(self, lo: int, hi: int) -> tuple[Any, ...]:
        """The least rank at rotation positions lo <= p < hi."""
        n = self.n
        if hi <= n:
            return self.tree.min(lo, hi)
        a, b = self.tree.min(lo, n), self.tree.min(0, min(hi - n, lo))
        return a if a < b else b

    def window(self, lo: int, hi: int) -> Callable[[], list[int]]:
        """A function listing the indexes of the nodes fitting now at rotation positions
        lo <= p < hi, in rotation order (only tests and classic DRA want the list)."""
        fit, n = self.fit, self.n

        def listed() -> list[int]:
            bits = ((fit | (fit << n)) >> lo) & ((1 << (hi - lo)) - 1)
            out = []
            while bits:
                low = bits & -bits
                out.append((lo + low.bit_length() - 1) % n)
                bits ^= low
            return out

        return listed
