"""`td.tree_util` against JAX's pytree semantics (and JAX itself where installed)."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

import numpy as np
import pytest

import tidu_mlir as td
from tidu_mlir import tree_util

Point = collections.namedtuple("Point", "x y")


class Pair:
    """A class registered with `register_pytree_node` (children a, b; aux name)."""

    def __init__(self, a: Any, b: Any, name: str = "pair"):
        self.a, self.b, self.name = a, b, name


tree_util.register_pytree_node(
    Pair, lambda p: ((p.a, p.b), p.name), lambda name, children: Pair(*children, name=name)
)


@tree_util.register_dataclass
@dataclasses.dataclass
class Layer:
    w: Any
    b: Any
    act: str = dataclasses.field(default="tanh", metadata={"static": True})


@dataclasses.dataclass
class Explicit:
    data: Any
    meta: int


tree_util.register_dataclass(Explicit, data_fields=["data"], meta_fields=["meta"])

NESTED = {"b": [1, (2, None)], "a": Point(3, {"z": 4, "y": 5}), "c": None}


def test_leaf_order_sorts_dict_keys_and_none_has_no_leaf() -> None:
    leaves, treedef = tree_util.tree_flatten(NESTED)
    assert leaves == [3, 5, 4, 1, 2]
    assert treedef.num_leaves == 5
    assert tree_util.tree_unflatten(treedef, leaves) == NESTED
    assert tree_util.tree_leaves(None) == []
    assert tree_util.tree_leaves([None, (None,)]) == []
    assert tree_util.tree_structure(None) != tree_util.tree_structure(0)


def test_tree_map_keeps_structure_and_none() -> None:
    doubled = tree_util.tree_map(lambda v: 2 * v, NESTED)
    assert doubled == {"b": [2, (4, None)], "a": Point(6, {"z": 8, "y": 10}), "c": None}
    assert isinstance(doubled["a"], Point)
    summed = tree_util.tree_map(lambda u, v: u + v, NESTED, doubled)
    assert tree_util.tree_leaves(summed) == [9, 15, 12, 3, 6]


def test_tuples_of_equal_arrays_stay_tuples() -> None:
    pair = (np.ones(2), np.ones(2))
    leaves, treedef = tree_util.tree_flatten(pair)
    assert len(leaves) == 2
    rebuilt = tree_util.tree_unflatten(treedef, leaves)
    assert isinstance(rebuilt, tuple) and len(rebuilt) == 2
    assert tree_util.tree_structure(pair) != tree_util.tree_structure([np.ones(2), np.ones(2)])


def test_register_pytree_node_uses_jax_signatures() -> None:
    p = Pair(np.ones(1), [2.0, 3.0], name="p")
    leaves, treedef = tree_util.tree_flatten(p)
    assert len(leaves) == 3
    rebuilt = tree_util.tree_unflatten(treedef, [10, 20, 30])
    assert isinstance(rebuilt, Pair) and rebuilt.name == "p"
    assert (rebuilt.a, rebuilt.b) == (10, [20, 30])
    # the aux data is part of the structure
    assert treedef != tree_util.tree_structure(Pair(np.ones(1), [2.0, 3.0], name="q"))


def test_register_dataclass_as_decorator_and_with_field_lists() -> None:
    layer = Layer(np.ones(2), 0.5)
    leaves, treedef = tree_util.tree_flatten(layer)
    assert len(leaves) == 2 and leaves[1] == 0.5  # w, b data; act static
    rebuilt = tree_util.tree_unflatten(treedef, [1.0, 2.0])
    assert rebuilt == Layer(1.0, 2.0, "tanh")
    assert treedef != tree_util.tree_structure(Layer(np.ones(2), 0.5, act="relu"))
    explicit = Explicit(data=[1.0, 2.0], meta=3)
    assert tree_util.tree_leaves(explicit) == [1.0, 2.0]
    assert tree_util.tree_map(lambda v: -v, explicit) == Explicit([-1.0, -2.0], 3)


def test_register_dataclass_refusals() -> None:
    with pytest.raises(TypeError, match="expects a dataclass"):
        tree_util.register_dataclass(Pair)

    @dataclasses.dataclass
    class Partial:
        a: Any
        b: Any

    with pytest.raises(ValueError, match=r"\['b'\] are neither data nor meta"):
        tree_util.register_dataclass(Partial, data_fields=["a"], meta_fields=[])
    with pytest.raises(ValueError, match="both data and meta"):
        tree_util.register_dataclass(Partial, data_fields=["a", "b"], meta_fields=["a"])


def test_structures_are_hashable_cache_keys() -> None:
    a = tree_util.tree_structure({"w": np.ones(2), "b": (1.0, None)})
    b = tree_util.tree_structure({"b": (5.0, None), "w": np.zeros(3)})
    assert a == b and hash(a) == hash(b)
    assert tree_util.tree_leaf_paths(NESTED) == [
        "['a'].x", "['a'].y['y']", "['a'].y['z']", "['b'][0]", "['b'][1][0]",
    ]  # fmt: skip


def test_td_exposes_tree_util() -> None:
    assert td.tree_util is tree_util
    assert {"tree_map", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure",
            "register_pytree_node", "register_dataclass"} <= set(tree_util.__all__)  # fmt: skip


def test_leaf_order_and_structure_agree_with_jax() -> None:
    jax = pytest.importorskip("jax")
    trees = [
        NESTED,
        [None, {"k": (1, 2), "a": [3]}, Point(4, None)],
        ((), [], {}, 7),
        collections.OrderedDict([("z", 1), ("a", 2)]),
    ]
    for tree in trees:
        ours = tree_util.tree_leaves(tree)
        theirs = jax.tree_util.tree_leaves(tree)
        assert ours == theirs
        assert (
            tree_util.tree_structure(tree).num_leaves
            == jax.tree_util.tree_structure(tree).num_leaves
        )
        assert tree_util.tree_map(lambda v: v + 1, tree) == jax.tree_util.tree_map(
            lambda v: v + 1, tree
        )
