"""`batch{graph=@f axes=0,none size=4 name=fb}`: vectorize a graph over a new
leading axis (a wrapper over `tidu_mlir.ad.batch`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from tidu_mlir.ad.batch import batch
from tidu_mlir.passes.options import SymNameOptionPass, find_fragment


@dataclass(frozen=True)
class BatchPass(SymNameOptionPass):
    """Vectorize a module-level `cg.graph` over a new leading batch axis: a new
    graph computes it for `size` examples at once (what `td.vmap` runs).

    Options:
        graph: the `cg.graph` to batch, by symbol (`@f`).
        size: the batch extent, the length of the new leading axis.
        axes: one per input in program order: `0` maps the input over its
            leading axis, `none` broadcasts it to every example.
        name: the new graph's symbol; unset: `<graph>_batched`.
    """

    name = "batch"

    graph: str
    size: int
    axes: tuple[int | str, ...] = ()
    sym_name: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fragment = find_fragment(op, self.graph)
        batch(fragment, [_is_mapped(axis) for axis in self.axes], self.size, self.sym_name)


def _is_mapped(axis: int | str) -> bool:
    """`0` → mapped, `none` → broadcast; other axes are refused."""
    spelling = str(axis).strip().lower()
    if spelling in ("0", "none"):
        return spelling == "0"
    raise PassFailedException(
        f"batch axis '{axis}' is not supported: the pass maps leading axes (`0`) or "
        "broadcasts (`none`); move other axes to the front first (td.vmap does)"
    )
