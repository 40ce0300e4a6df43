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
            leading axis, `none` broadcasts it to every example, `basis` makes
            it the scale of standard-basis rows (example `b` is the input's
            element `b` alone; the basis inputs take consecutive rows, so
            `size` is their element count: a Jacobian's seeds).
        name: the new graph's symbol; unset: `<graph>_batched`.
    """

    name = "batch"

    graph: str
    size: int
    axes: tuple[int | str, ...] = ()
    sym_name: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fragment = find_fragment(op, self.graph)
        spellings = [_spelling(axis) for axis in self.axes]
        mapped = [spelling != "none" for spelling in spellings]
        basis = [spelling == "basis" for spelling in spellings]
        batch(fragment, mapped, self.size, self.sym_name, basis)


def _spelling(axis: int | str) -> str:
    """`0` (mapped), `none` (broadcast) or `basis`; other axes are refused."""
    spelling = str(axis).strip().lower()
    if spelling in ("0", "none", "basis"):
        return spelling
    raise PassFailedException(
        f"batch axis '{axis}' is not supported: the pass maps leading axes (`0`), "
        "broadcasts (`none`) or seeds a basis (`basis`); move other axes to the front "
        "first (td.vmap does)"
    )
