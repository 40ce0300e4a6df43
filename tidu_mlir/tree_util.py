"""Pytrees: nested containers of arrays, flattened to leaves and rebuilt.

The transforms take and return pytrees (`grad(loss)(params)` with `params` a
dict gives a dict). The semantics are JAX's, built on `optree` with one
namespace for tidu's registrations (`NAMESPACE`):

* tuples, lists, dicts (leaves in sorted key order), namedtuples,
  `OrderedDict`, `defaultdict` and `deque` are nodes; anything else is a leaf;
* `None` is a node without children: it has no leaf and is rebuilt as `None`;
* `register_pytree_node(cls, flatten, unflatten)` adds a node type:
  `flatten(x) -> (children, aux_data)`, `unflatten(aux_data, children) -> x`;
  `aux_data` is part of the structure (compared, hashed: keep it hashable);
* `register_dataclass` makes a dataclass a node, its data fields the
  children and its meta fields part of the structure.

Registrations live in tidu's namespace only: a class registered with JAX's
`jax.tree_util` is a leaf here until it is registered here too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, overload

import optree
from optree import PyTreeKind, PyTreeSpec

NAMESPACE = "tidu_mlir"
"""The optree namespace holding tidu's registrations."""

PyTreeDef = PyTreeSpec
"""The structure of a pytree (hashable, comparable; `str` shows it)."""


def is_pair(treedef: PyTreeDef) -> bool:
    """Whether `treedef` is a tuple (or namedtuple) of two subtrees."""
    return treedef.kind in (PyTreeKind.TUPLE, PyTreeKind.NAMEDTUPLE) and treedef.num_children == 2


T = TypeVar("T")


def tree_flatten(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[Any], PyTreeDef]:
    """The leaves of `tree` (dict keys sorted) and its structure."""
    return optree.tree_flatten(tree, is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """The pytree of structure `treedef` holding `leaves` (inverse of `tree_flatten`)."""
    return optree.tree_unflatten(treedef, leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of `tree`, in `tree_flatten` order."""
    return optree.tree_leaves(tree, is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The structure of `tree`."""
    return optree.tree_structure(tree, is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_map(
    f: Callable[..., Any],
    tree: Any,
    *rest: Any,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """`f` applied leafwise: `f(leaf, *leaves of rest at the same place)`; every
    tree of `rest` must have `tree`'s structure (or have it as a prefix)."""
    return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, none_is_leaf=False,
                           namespace=NAMESPACE)  # fmt: skip


def tree_leaf_paths(tree: Any) -> list[str]:
    """One path per leaf, in leaf order, as Python would index it: `['w'][0]`, `.field`."""
    return [accessor.codify("") for accessor in
            optree.tree_accessors(tree, none_is_leaf=False, namespace=NAMESPACE)]  # fmt: skip


def register_pytree_node(
    nodetype: type[T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Any]],
    unflatten_func: Callable[[Any, Iterable[Any]], T],
) -> type[T]:
    """Make `nodetype` a pytree node: `flatten_func(x)` returns `(children,
    aux_data)`, `unflatten_func(aux_data, children)` rebuilds `x`."""
    # optree types node classes as collections; any class may be a node.
    register: Any = optree.register_pytree_node
    register(nodetype, flatten_func, unflatten_func, namespace=NAMESPACE)
    return nodetype


@overload
def register_dataclass(
    nodetype: type[T],
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
) -> type[T]: ...
@overload
def register_dataclass(
    nodetype: None = None,
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
) -> Callable[[type[T]], type[T]]: ...
def register_dataclass(
    nodetype: type[T] | None = None,
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
) -> type[T] | Callable[[type[T]], type[T]]:
    """Make the dataclass `nodetype` a pytree node: `data_fields` are its
    children (arrays, or pytrees of them), `meta_fields` static values kept in
    the structure (hashable). Without field lists a field is meta when declared
    `field(metadata={"static": True})` and data otherwise. Usable as
    `@register_dataclass` or `register_dataclass(cls, data_fields, meta_fields)`.

    Rebuilding calls `nodetype(**fields)`, so every field taking part in
    `__init__` must be listed."""
    if nodetype is None:
        return lambda cls: register_dataclass(cls, data_fields, meta_fields)
    if not dataclasses.is_dataclass(nodetype):
        raise TypeError(f"register_dataclass expects a dataclass, got {nodetype!r}")
    fields = dataclasses.fields(nodetype)
    if data_fields is None and meta_fields is None:
        meta = tuple(f.name for f in fields if f.metadata.get("static", False))
        data = tuple(f.name for f in fields if f.name not in meta)
    else:
        data, meta = tuple(data_fields or ()), tuple(meta_fields or ())
    _check_fields(nodetype, fields, data, meta)

    def flatten(x: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return tuple(getattr(x, n) for n in data), tuple(getattr(x, n) for n in meta)

    def unflatten(aux: tuple[Any, ...], children: Iterable[Any]) -> Any:
        return nodetype(
            **dict(zip(data, children, strict=True)), **dict(zip(meta, aux, strict=True))
        )

    return register_pytree_node(nodetype, flatten, unflatten)


def _check_fields(nodetype: type, fields: Sequence[dataclasses.Field[Any]],
                  data: tuple[str, ...], meta: tuple[str, ...]) -> None:  # fmt: skip
    names = {f.name for f in fields}
    if both := set(data) & set(meta):
        raise ValueError(f"{nodetype.__name__}: fields {sorted(both)} are both data and meta")
    if unknown := (set(data) | set(meta)) - names:
        raise ValueError(f"{nodetype.__name__} has no fields {sorted(unknown)}")
    missing = {f.name for f in fields if f.init} - set(data) - set(meta)
    if missing:
        raise ValueError(
            f"{nodetype.__name__}: fields {sorted(missing)} are neither data nor meta fields "
            "(every field of __init__ must be listed)"
        )


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """The structures of the children of the root node of `treedef`."""
    return list(treedef.children())


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """Whether `treedef` is a single leaf."""
    return treedef.is_leaf()


__all__ = [
    "NAMESPACE", "PyTreeDef", "register_dataclass", "register_pytree_node", "tree_flatten",
    "tree_leaf_paths", "tree_leaves", "tree_map", "tree_structure", "tree_unflatten",
    "treedef_children", "treedef_is_leaf",
]  # fmt: skip


def broadcast_prefix_leaves(prefix: Any, tree: Any) -> list[Any]:
    """One entry per leaf of `tree`: the leaf of `prefix` (a pytree prefix of
    `tree`, e.g. vmap's `in_axes`) above it. `None` in `prefix` is a leaf here
    (it means "not mapped"); a mismatch is a ValueError from the structures."""
    marker = object()
    marked = optree.tree_map(lambda a: marker if a is None else a, prefix, none_is_leaf=True,
                             namespace=NAMESPACE)  # fmt: skip
    full = optree.tree_broadcast_prefix(marked, tree, none_is_leaf=False, namespace=NAMESPACE)
    leaves = optree.tree_leaves(full, is_leaf=lambda a: a is marker, none_is_leaf=False,
                                namespace=NAMESPACE)  # fmt: skip
    return [None if leaf is marker else leaf for leaf in leaves]
