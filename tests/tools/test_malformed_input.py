"""Malformed input to `tidu-opt` and `tidu-run` (issue 16): a `file:line:col:
error:` diagnostic (a one-line `error:` for a bad pass pipeline) and exit code
1, never a traceback, a hang or silently wrong output."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from xdsl.ir import Operation

from tidu_mlir.tools import opt, run

TOOL_DIR = Path(sys.executable).parent

GRAPH = """\
builtin.module {
  cg.graph @f {
    %x = cg.input #cg.key<"x"> : tensor<f64>
    %y = prim.mul %x, %x : tensor<f64>
    cg.output %y : tensor<f64>
  }
}
"""


@pytest.fixture(autouse=True)
def _in_tmp_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Inputs are written to `in.mlir` in the working directory, the name diagnostics show."""
    monkeypatch.chdir(tmp_path)


def tidu_opt(capsys: pytest.CaptureFixture[str], source: str, *args: str) -> tuple[int, str]:
    """Run `tidu-opt` in-process on `source` (as `in.mlir`): the exit code and stderr."""
    Path("in.mlir").write_text(source)
    code = opt.run(["in.mlir", *args])
    return code, capsys.readouterr().err


def expect_diagnostic(code: int, err: str, where: str, message: str) -> None:
    """Exit code 1 and a diagnostic `in.mlir:<where>: error: <message...>`."""
    assert code == 1
    assert "Traceback" not in err
    first = err.splitlines()[0]
    assert first.startswith(f"in.mlir:{where}: error: {message}"), err


# --------------------------------------------------------------------------
# Pass pipelines
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("linearize{graph=", "option 'graph' of pass 'linearize' has an empty value"),
        ("linearize{graph=@f wrt=}", "option 'wrt' of pass 'linearize' has an empty value"),
        ("linearize{graph=@f wrt=x,}", "option 'wrt' of pass 'linearize' has an empty value"),
        ('linearize{graph="@f}', "option 'graph' of pass 'linearize': unterminated string \"@f}"),
        ("linearize{graph=@f", "the options of pass 'linearize' lack a closing '}'"),
        ("linearize{=x}", "Expected argument name here at column 11 of 'linearize{=x}'"),
        ("cse,,dce", "Expected pass name here at column 5 of 'cse,,dce'"),
        (
            "linearize{graf=@f}",
            "pass 'linearize' has no option 'graf'; its options are graph, wrt, outputs, name",
        ),
        (
            "materialize{graph=@f nmae=g wrt=x}",
            "pass 'materialize' has no options 'nmae', 'wrt'; its options are graph, name",
        ),
    ],
)
def test_bad_pass_pipeline_is_one_line(
    capsys: pytest.CaptureFixture[str], pipeline: str, message: str
) -> None:
    code, err = tidu_opt(capsys, GRAPH, "-p", pipeline)
    assert code == 1
    assert err.strip() == f"tidu-opt: error: {message}"


def test_bad_target_spec_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = tidu_opt(capsys, GRAPH, "-t", "llvm{")
    assert code == 1
    assert err.strip() == "tidu-opt: error: Expected argument name here at column 6 of 'llvm{'"


# --------------------------------------------------------------------------
# Strings
# --------------------------------------------------------------------------


def test_unterminated_string_fails_fast(tmp_path: Path) -> None:
    """xDSL's string regex backtracks exponentially: ~2x per character, so 60
    characters would take centuries without the linear pre-check."""
    path = tmp_path / "in.mlir"
    path.write_text('func.func @f() {\n  "test.op"() {s = "' + "ab0" * 20 + "} : () -> ()\n}\n")
    result = subprocess.run(
        [str(TOOL_DIR / "tidu-opt"), str(path)], capture_output=True, text=True, timeout=20
    )
    assert result.returncode == 1
    assert result.stderr.startswith(f"{path}:2:20: error: unterminated string literal")


def test_bad_escape_is_located(capsys: pytest.CaptureFixture[str]) -> None:
    source = 'func.func @f() {\n  "test.op"() {s = "' + "ab0" * 20 + '\\q"} : () -> ()\n}\n'
    code, err = tidu_opt(capsys, source)
    expect_diagnostic(code, err, "2:81", "invalid escape in string literal")


def test_quotes_in_comments_and_strings_are_fine(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("in.mlir").write_text(
        '// don\'t "quote me\n"test.op"() {s = "a // \\"b\\" \\0A"} : () -> ()\n'
    )
    assert opt.run(["in.mlir", "--allow-unregistered-dialect"]) == 0
    assert '{s = "a // \\22b\\22 \\0A"}' in capsys.readouterr().out


# --------------------------------------------------------------------------
# Dominance
# --------------------------------------------------------------------------

USE_BEFORE_DEF = """\
func.func @f(%a: tensor<3xf64>) -> tensor<3xf64> {
  %1 = prim.add %0, %a : tensor<3xf64>
  %0 = prim.neg %a : tensor<3xf64>
  func.return %1 : tensor<3xf64>
}
"""


@pytest.mark.parametrize("pipeline", [None, "lower-to-llvm"])
def test_use_before_definition_in_func(
    capsys: pytest.CaptureFixture[str], pipeline: str | None
) -> None:
    args = ["-p", pipeline] if pipeline else []
    code, err = tidu_opt(capsys, USE_BEFORE_DEF, *args)
    expect_diagnostic(code, err, "2:3", "operand #0 of 'prim.add' does not dominate its use")


def test_use_of_a_value_from_a_non_dominating_block(
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = """\
func.func @f(%c: i1, %a: f64) -> f64 {
  %x = arith.addf %a, %a : f64
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %y = arith.mulf %x, %a : f64
  cf.br ^bb2
^bb2:
  func.return %y : f64
}
"""
    code, err = tidu_opt(capsys, source)
    expect_diagnostic(code, err, "8:3", "operand #0 of 'func.return' does not dominate its use")
    # %x in ^bb1 is fine: the entry block dominates every block.
    code, err = tidu_opt(capsys, source.replace("return %y", "return %x"))
    assert (code, err) == (0, "")


# --------------------------------------------------------------------------
# Integer and dimension ranges
# --------------------------------------------------------------------------

TOO_BIG = str(2**64)


@pytest.mark.parametrize(
    ("op", "column", "message"),
    [
        (
            f"%r = prim.reduce_sum %m, axes = [{TOO_BIG}] : tensor<2x3xf64> -> tensor<3xf64>",
            36,
            f"'axes' entry {TOO_BIG} does not fit in 64 bits",
        ),
        (
            f"%r = prim.broadcast_in_dim %v, dims = [0, {TOO_BIG}] "
            ": tensor<3xf64> -> tensor<2x3xf64>",
            45,
            f"'dims' entry {TOO_BIG} does not fit in 64 bits",
        ),
        (
            f"%r = prim.dot_general %m, %m, batch = [] x [], contract = [1] x [{TOO_BIG}] "
            ": (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x2xf64>",
            68,
            f"'contract' entry {TOO_BIG} does not fit in 64 bits",
        ),
        (
            f"%r = prim.slice %v [0:-{TOO_BIG}:1] : tensor<3xf64> -> tensor<0xf64>",
            25,
            f"slice limit -{TOO_BIG} does not fit in 64 bits",
        ),
        (
            f"%r = prim.concatenate %v, dimension = {TOO_BIG} : tensor<3xf64> -> tensor<3xf64>",
            41,
            f"dimension {TOO_BIG} does not fit in 64 bits",
        ),
    ],
)
def test_index_array_entries_fit_in_64_bits(
    capsys: pytest.CaptureFixture[str], op: str, column: int, message: str
) -> None:
    source = f"func.func @f(%m: tensor<2x3xf64>, %v: tensor<3xf64>) {{\n  {op}\n  func.return\n}}\n"
    code, err = tidu_opt(capsys, source)
    expect_diagnostic(code, err, f"2:{column}", message)


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ("dense<(1.0, 2.0)> : tensor<2xcomplex<f80>>", "dense literals of element type f80"),
        ("dense<[1.0, 2.0]> : tensor<2xf80>", "dense literals of element type f80"),
        ("dense<1.0> : tensor<2xf128>", "dense literals of element type f80, f128"),
        ("dense<1.0> : tensor<2xcomplex<f64>>", "a complex dense element must be a pair"),
    ],
)
def test_dense_literal_xdsl_cannot_build(
    capsys: pytest.CaptureFixture[str], literal: str, message: str
) -> None:
    source = f"func.func @f() {{\n  %c = prim.constant {literal}\n}}\n"
    code, err = tidu_opt(capsys, source)
    expect_diagnostic(code, err, "2:27", message)


def test_integer_attribute_out_of_range(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """xDSL verifies the attribute while parsing it: located at the op."""
    source = f"func.func @f() {{\n  %c = arith.constant {TOO_BIG} : i64\n}}\n"
    code, err = tidu_opt(capsys, source)
    expect_diagnostic(code, err, "2:3", f"Integer value {TOO_BIG} is out of range for type i64")


@pytest.mark.parametrize(
    ("type_", "column", "message"),
    [
        ("tensor<3x100000000000000000000000xf64>", 27, "dimension 100000000000000000000000 is"),
        ("tensor<4294967296x4294967296xf64>", 25, f"shape 4294967296x4294967296 has {2**64}"),
    ],
)
def test_tensor_shapes_fit_in_64_bits(
    capsys: pytest.CaptureFixture[str], type_: str, column: int, message: str
) -> None:
    source = f"func.func @f(%a: {type_}) {{\n  func.return\n}}\n"
    code, err = tidu_opt(capsys, source)
    expect_diagnostic(code, err, f"1:{column}", message)


# --------------------------------------------------------------------------
# Pass ids
# --------------------------------------------------------------------------

PASS_ID = str(2**63)


@pytest.mark.parametrize(
    ("source", "where", "message"),
    [
        (
            GRAPH.replace("#cg.key<\"x\">", f"#cg.tangent<#cg.key<\"x\">, {PASS_ID}>"),
            "3:45",
            f"pass id {PASS_ID} does not fit in 64 bits",
        ),
        (
            GRAPH.replace("#cg.key<\"x\">", f"#cg.cotangent<0, {PASS_ID}>"),
            "3:36",
            f"pass id {PASS_ID} does not fit in 64 bits",
        ),
        (
            GRAPH.replace(
                "    cg.output %y",
                f"    cg.linear @jvp1 pass {PASS_ID} active [] {{\n      cg.output\n    }}\n"
                "    cg.output %y",
            ),
            "5:26",
            f"pass id {PASS_ID} does not fit in 64 bits",
        ),
        (
            GRAPH.replace(
                "    cg.output %y",
                f'    "cg.linear"() <{{sym_name = "jvp1", pass_id = {PASS_ID} : i64, '
                "active = array<i1>}> ({\n      cg.output\n    }) : () -> ()\n    cg.output %y",
            ),
            "5:5",
            f"cg.linear pass id -{PASS_ID} is negative",
        ),
        (
            GRAPH.replace("builtin.module", f"builtin.module attributes {{cg.next_pass_id = {PASS_ID} : i64}}"),
            "1:1",
            "module attribute cg.next_pass_id must be an integer in 1..",
        ),
    ],
)  # fmt: skip
def test_pass_ids_fit_in_64_bits(
    capsys: pytest.CaptureFixture[str], source: str, where: str, message: str
) -> None:
    code, err = tidu_opt(capsys, source)
    expect_diagnostic(code, err, where, message)


# --------------------------------------------------------------------------
# tidu-run
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "where", "message"),
    [
        (USE_BEFORE_DEF, "2:3", "operand #0 of 'prim.add' does not dominate its use"),
        ('func.func @f() {\n  "x', "2:3", "unterminated string literal"),
        (USE_BEFORE_DEF.replace("3xf64>) ->", "3x100000000000000000000000xf64>) ->"), "1:27",
         "dimension 100000000000000000000000 is larger"),
    ],
)  # fmt: skip
def test_tidu_run_reports_source_diagnostics(
    capsys: pytest.CaptureFixture[str], source: str, where: str, message: str
) -> None:
    Path("in.mlir").write_text(source)
    code = run.run(["in.mlir", "--entry", "@f", "--backend", "interp"])
    expect_diagnostic(code, capsys.readouterr().err, where, message)


FAILING_CHECK = """func.func @f(%v: tensor<2xf64>) -> tensor<2xf64> {
  %s = prim.reduce_sum %v, axes = [0] : tensor<2xf64> -> tensor<f64>
  %ok = prim.compare lt, %s, %s : tensor<f64>
  %r = prim.check %ok, %v, message = "sum too large" : tensor<2xf64>
  func.return %r : tensor<2xf64>
}
"""


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_tidu_run_reports_a_failed_check(capsys: pytest.CaptureFixture[str], backend: str) -> None:
    """A `prim.check` false at run time is an error about the arguments, not a traceback."""
    Path("in.mlir").write_text(FAILING_CHECK)
    code = run.run(["in.mlir", "--entry", "@f", "--arg", "[1.0, 2.0]", "--backend", backend])
    assert (code, capsys.readouterr().err) == (1, "tidu-run: error: sum too large\n")


@pytest.mark.parametrize("sigil", ["%", "^", "!", "#"])
def test_a_bare_sigil_names_the_character(capsys: pytest.CaptureFixture[str], sigil: str) -> None:
    """xDSL's lexer message has an unfilled `{first_char}`; ours names the character."""
    code, err = tidu_opt(capsys, f"builtin.module {{\n  {sigil}\n}}\n")
    expect_diagnostic(code, err, "2:3", f"Expected suffix identifier after '{sigil}'")


UNDEFINED = """\
func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {
  %a = prim.neg %x : tensor<4xf64>
  %b = prim.add %a, %nope : tensor<4xf64>
  %c = prim.add %b, %other : tensor<4xf64>
  func.return %c : tensor<4xf64>
}
"""


def test_an_undefined_value_is_reported_at_its_first_use(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, err = tidu_opt(capsys, UNDEFINED)
    expect_diagnostic(
        code, err, "3:21", "use of undefined value %nope (and 1 more undefined value)"
    )
    assert err.splitlines()[1].strip() == "%b = prim.add %a, %nope : tensor<4xf64>"


def test_a_value_used_outside_the_region_defining_it_is_reported_at_that_use(
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = UNDEFINED.replace("%nope", "%a").replace("%other", "%inner")
    source = source.replace(
        "  func.return",
        '  "test.op"() ({\n    %inner = prim.neg %x : tensor<4xf64>\n  }) : () -> ()\n'
        "  %d = prim.neg %inner : tensor<4xf64>\n  func.return",
    )
    code, err = tidu_opt(capsys, source, "--allow-unregistered-dialect")
    # Line 4's earlier use resolves to the region's %inner (a dominance error
    # for the verifier); the use after the region closes is the undefined one.
    expect_diagnostic(code, err, "8:17", "use of undefined value %inner")


# --------------------------------------------------------------------------
# Work per input
# --------------------------------------------------------------------------


def _counted_verifications(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times ops of each name are verified from now on."""
    verified: Counter[str] = Counter()
    verify = Operation.verify

    def counting(op: Operation, verify_nested_ops: bool = True) -> None:
        verified[op.name] += 1
        verify(op, verify_nested_ops)

    monkeypatch.setattr(Operation, "verify", counting)
    return verified


@pytest.mark.parametrize(("passes", "times"), [([], 1), (["-p", "cse"], 2)])
def test_each_op_is_verified_once_per_stage(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    passes: list[str],
    times: int,
) -> None:
    """`parse_chunk` verifies the input (`first_verify_error`) and xDSL's
    pipeline verifies the result of each pass, but not the input again before
    the first pass (0.8 s of 7 s for 1 MB)."""
    verified = _counted_verifications(monkeypatch)
    source = GRAPH.replace("%x, %x", "%z, %z").replace(
        "    %y", "    %z = prim.neg %x : tensor<f64>\n    %y"
    )
    code, err = tidu_opt(capsys, source, *passes)
    assert code == 0, err
    names = ["builtin.module", "cg.graph", "cg.input", "prim.neg", "prim.mul", "cg.output"]
    assert verified == Counter(names * times)


LOWERED = """\
llvm.func @f(%p: !llvm.ptr, %i: i64) -> f64 {{
{body}  llvm.return %x0 : f64
}}
"""


def _lowered_lines(count: int) -> str:
    """`count` steps of GEPs, loads, constants and arithmetic, as the lowering
    prints them (pointers as `!llvm.ptr` each time)."""
    return "".join(
        f"  %g{k} = llvm.getelementptr inbounds %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f64\n"
        f"  %x{k} = llvm.load %g{k} : !llvm.ptr -> f64\n"
        f"  %c{k} = llvm.mlir.constant(2.5 : f64) : f64\n"
        f"  %m{k} = llvm.fmul %x{k}, %c{k} : f64\n"
        f'  %e{k} = llvm.call_intrinsic "llvm.exp.f64"(%m{k}) : (f64) -> f64\n'
        f'  %b{k} = llvm.icmp "slt" %i, %i : i64\n'
        for k in range(count)
    )


def test_llvm_ops_alike_are_verified_once_per_kind(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The llvm ops of lowered IR (`diagnostics.LOCAL_LLVM_OPS`) verify like
    `VerifiesLocally` ops: 300 steps alike cost one or two verifications per
    op (two when xDSL reads the first line and its learnt form the others,
    with attribute objects of their own)."""
    verified = _counted_verifications(monkeypatch)
    code, err = tidu_opt(capsys, LOWERED.format(body=_lowered_lines(300)))
    assert code == 0, err
    for name in ("getelementptr", "load", "mlir.constant", "fmul", "call_intrinsic", "icmp"):
        assert 1 <= verified[f"llvm.{name}"] <= 2, verified


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            '%z = llvm.call_intrinsic "exp.f64"(%m0) : (f64) -> f64',
            "intrinsic name must start with 'llvm.'",
        ),
        (
            "%z = llvm.getelementptr %p[0, 1] : (!llvm.ptr) -> !llvm.ptr, f64",
            "GEP index #1: cannot index into f64",
        ),
        (
            '%z = llvm.icmp "slt" %v, %v : vector<2xi64>',
            "Result must be a vector if operands are vectors",
        ),
    ],
)
def test_an_llvm_op_of_a_new_kind_after_many_alike_is_verified(
    capsys: pytest.CaptureFixture[str], bad: str, message: str
) -> None:
    body = _lowered_lines(50) + f"  %v = llvm.mlir.constant(1) : vector<2xi64>\n  {bad}\n"
    line = body.count("\n") + 1
    if "vector<2xi64>" in bad:  # (xDSL's printer asks for a vector result: build one)
        body = body.replace(
            f"  {bad}\n",
            '  %z = "llvm.icmp"(%v, %v) <{predicate = 2 : i64}> : '
            "(vector<2xi64>, vector<2xi64>) -> i1\n",
        )
    code, err = tidu_opt(capsys, LOWERED.format(body=body))
    expect_diagnostic(code, err, f"{line}:3", message)
