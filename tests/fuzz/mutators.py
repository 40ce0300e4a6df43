"""Byte- and token-level mutations of MLIR text and of tool command lines.

Each mutator takes a random generator and the input and returns a mutated
copy. The token mutations work on a rough MLIR lexing (strings, SSA values,
symbols, numbers, identifiers, punctuation) that keeps the whitespace between
tokens, so unmutated parts stay byte for byte; the byte mutations reach what
the lexing cannot (invalid UTF-8, NUL bytes, cuts inside a token).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

TOKEN = re.compile(
    rb"""
      (?P<space>\s+)
    | (?P<comment>//[^\n]*)
    | (?P<string>"(?:[^"\\\n]|\\.)*")
    | (?P<ssa>[%^][\w.$-]+(?:\#\d+)?)
    | (?P<symbol>@[\w.$-]+|@"[^"\n]*")
    | (?P<alias>[\#!][\w.$-]+)
    | (?P<number>-?0x[0-9a-fA-F]+|-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)
    | (?P<shape>(?:(?:\d+|\?)x)+)
    | (?P<word>[A-Za-z_][\w.$]*)
    | (?P<punct>->|::|.)
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class Token:
    kind: str
    text: bytes


def tokenize(text: bytes) -> list[Token]:
    """The tokens of `text`; joining their texts gives `text` back."""
    tokens: list[Token] = []
    for match in TOKEN.finditer(text):
        kind = match.lastgroup or "punct"
        tokens.append(Token(kind, match.group()))
    return tokens


def join(tokens: Sequence[Token]) -> bytes:
    return b"".join(t.text for t in tokens)


def _significant(tokens: Sequence[Token]) -> list[int]:
    """Indices of the tokens that are not whitespace."""
    return [i for i, t in enumerate(tokens) if t.kind != "space"]


# --------------------------------------------------------------------------
# Replacement values
# --------------------------------------------------------------------------

INTERESTING_NUMBERS = [
    b"0", b"1", b"-1", b"2", b"3", b"7", b"-0.0", b"0.5", b"1.5", b"255", b"256",
    b"65536", b"2147483647", b"2147483648", b"4294967296", b"9223372036854775807",
    b"9223372036854775808", b"-9223372036854775809", b"18446744073709551616",
    b"340282366920938463463374607431768211456", b"1" + b"0" * 400, b"9" * 5000, b"1e308", b"1e999",
    b"-1e999", b"1e-400", b"0x7FF0000000000000", b"0xFFFFFFFFFFFFFFFFFFFF", b"nan", b"inf",
]  # fmt: skip

ELEMENT_TYPES = [
    b"f64", b"f32", b"f16", b"bf16", b"f80", b"f128", b"i1", b"i8", b"i32", b"i64", b"index",
    b"complex<f64>", b"complex<f32>", b"complex<i32>", b"none", b"tensor<f64>", b"f64x",
]  # fmt: skip

DIMENSIONS = [b"0", b"1", b"2", b"3", b"?", b"4294967296", b"99999999999999999999", b"-1"]

BRACKETS = b"{}()[]<>"

STRINGS = [b'""', b'"x"', b'"\\"', b'"\\q"', b'"\\0"', b'"\\ff"', b'"' + b"a" * 300 + b'"']


# --------------------------------------------------------------------------
# Token mutations
# --------------------------------------------------------------------------


def delete_token(rng: random.Random, tokens: list[Token]) -> None:
    if indices := _significant(tokens):
        del tokens[rng.choice(indices)]


def duplicate_token(rng: random.Random, tokens: list[Token]) -> None:
    if indices := _significant(tokens):
        at = rng.choice(indices)
        tokens.insert(at, tokens[at])


def swap_tokens(rng: random.Random, tokens: list[Token]) -> None:
    if len(indices := _significant(tokens)) >= 2:
        a, b = rng.sample(indices, 2)
        tokens[a], tokens[b] = tokens[b], tokens[a]


def move_token(rng: random.Random, tokens: list[Token]) -> None:
    """Move a token a few places (an operand before its op, a type before a colon)."""
    if len(indices := _significant(tokens)) >= 2:
        at = rng.randrange(len(indices))
        to = min(len(indices) - 1, max(0, at + rng.randint(-4, 4)))
        token = tokens.pop(indices[at])
        tokens.insert(indices[to], token)


def _replace_kind(
    rng: random.Random, tokens: list[Token], kinds: set[str], values: list[bytes]
) -> None:
    """Replace one token of `kinds` by one of `values`."""
    indices = [i for i, t in enumerate(tokens) if t.kind in kinds]
    if indices and values:
        at = rng.choice(indices)
        tokens[at] = Token(tokens[at].kind, rng.choice(values))


def change_number(rng: random.Random, tokens: list[Token]) -> None:
    values = INTERESTING_NUMBERS + [str(rng.randint(-10, 10)).encode()]
    _replace_kind(rng, tokens, {"number"}, values)


def change_ssa_name(rng: random.Random, tokens: list[Token]) -> None:
    """Use another value of the input (type mismatches, use before definition, cycles)."""
    names = sorted({t.text for t in tokens if t.kind == "ssa" and t.text.startswith(b"%")})
    _replace_kind(rng, tokens, {"ssa"}, names + [b"%undefined", b"%0#7"])


def change_symbol(rng: random.Random, tokens: list[Token]) -> None:
    names = sorted({t.text for t in tokens if t.kind == "symbol"})
    _replace_kind(rng, tokens, {"symbol"}, names + [b"@nope", b'@""', b"@f::@jvp1"])


def change_word(rng: random.Random, tokens: list[Token]) -> None:
    """Another identifier of the input: an op name for another, a keyword misplaced."""
    words = sorted({t.text for t in tokens if t.kind == "word"})
    _replace_kind(rng, tokens, {"word"}, words + ELEMENT_TYPES)


def change_string(rng: random.Random, tokens: list[Token]) -> None:
    _replace_kind(rng, tokens, {"string"}, STRINGS)


def change_alias(rng: random.Random, tokens: list[Token]) -> None:
    aliases = sorted({t.text for t in tokens if t.kind == "alias"})
    _replace_kind(rng, tokens, {"alias"}, aliases + [b"#cg.nope", b"#", b"!"])


def change_element_type(rng: random.Random, tokens: list[Token]) -> None:
    """`f64` -> `f80`, `complex<i32>`, ... (the types the dense literals and ops refuse)."""
    indices = [
        i for i, t in enumerate(tokens) if re.fullmatch(rb"[fi]\d+|bf16|index|complex", t.text)
    ]
    if indices:
        at = rng.choice(indices)
        tokens[at] = Token("word", rng.choice(ELEMENT_TYPES))


def change_shape(rng: random.Random, tokens: list[Token]) -> None:
    """Change, add or drop a dimension of a `AxBx` shape prefix, or make it unranked."""
    indices = [i for i, t in enumerate(tokens) if t.kind == "shape"]
    if not indices:
        return
    at = rng.choice(indices)
    dims = tokens[at].text.split(b"x")[:-1]
    choice = rng.randrange(4)
    if choice == 0:
        dims[rng.randrange(len(dims))] = rng.choice(DIMENSIONS)
    elif choice == 1:
        dims.insert(rng.randrange(len(dims) + 1), rng.choice(DIMENSIONS))
    elif choice == 2 and dims:
        del dims[rng.randrange(len(dims))]
    else:
        dims = [b"*"]
    tokens[at] = Token("shape", b"".join(d + b"x" for d in dims))


def unbalance(rng: random.Random, tokens: list[Token]) -> None:
    """Insert or delete one bracket."""
    indices = [i for i, t in enumerate(tokens) if t.kind == "punct" and t.text in BRACKETS]
    if indices and rng.random() < 0.5:
        del tokens[rng.choice(indices)]
    else:
        at = rng.randrange(len(tokens) + 1)
        tokens.insert(at, Token("punct", bytes([rng.choice(BRACKETS)])))


def deep_nest(rng: random.Random, tokens: list[Token]) -> None:
    """Thousands of open brackets, or a balanced deep nest, at a random place."""
    depth = rng.choice([100, 1000, 5000, 20000])
    opener, closer = rng.choice([(b"(", b")"), (b"[", b"]"), (b"{", b"}"), (b"<", b">"),
                                 (b"tensor<", b">"), (b"complex<", b">")])  # fmt: skip
    text = opener * depth + (closer * depth if rng.random() < 0.5 else b"")
    tokens.insert(rng.randrange(len(tokens) + 1), Token("punct", text))


TOKEN_MUTATORS: list[Callable[[random.Random, list[Token]], None]] = [
    delete_token, duplicate_token, swap_tokens, move_token, change_number, change_number,
    change_ssa_name, change_symbol, change_word, change_string, change_alias,
    change_element_type, change_shape, change_shape, unbalance, deep_nest,
]  # fmt: skip


# --------------------------------------------------------------------------
# Line and byte mutations
# --------------------------------------------------------------------------


def truncate(rng: random.Random, text: bytes, donors: Sequence[bytes]) -> bytes:
    return text[: rng.randrange(len(text) + 1)]


def flip_byte(rng: random.Random, text: bytes, donors: Sequence[bytes]) -> bytes:
    """Replace or insert one byte: printable, control, NUL or invalid UTF-8."""
    byte = rng.choice([rng.randrange(32, 127), 0, 9, 10, 13, 0x7F, 0x80, 0xC3, 0xFF])
    at = rng.randrange(len(text) + 1)
    keep = at + (1 if rng.random() < 0.5 else 0)
    return text[:at] + bytes([byte]) + text[keep:]


def delete_lines(rng: random.Random, text: bytes, donors: Sequence[bytes]) -> bytes:
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    start = rng.randrange(len(lines))
    del lines[start : start + rng.randint(1, 3)]
    return b"".join(lines)


def duplicate_line(rng: random.Random, text: bytes, donors: Sequence[bytes]) -> bytes:
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    line = rng.choice(lines)
    lines.insert(rng.randrange(len(lines) + 1), line)
    return b"".join(lines)


def splice_line(rng: random.Random, text: bytes, donors: Sequence[bytes]) -> bytes:
    """Insert a line of another lit input (ops the input does not expect)."""
    donor = rng.choice(donors).splitlines(keepends=True) if donors else []
    lines = text.splitlines(keepends=True)
    if not donor:
        return text
    lines.insert(rng.randrange(len(lines) + 1), rng.choice(donor))
    return b"".join(lines)


TEXT_MUTATORS: list[Callable[[random.Random, bytes, Sequence[bytes]], bytes]] = [
    truncate, flip_byte, delete_lines, duplicate_line, splice_line,
]  # fmt: skip


def mutate_text(rng: random.Random, text: bytes, donors: Sequence[bytes]) -> bytes:
    """`text` after one to three mutations (mostly token-level)."""
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        if rng.random() < 0.75:
            tokens = tokenize(text)
            rng.choice(TOKEN_MUTATORS)(rng, tokens)
            text = join(tokens)
        else:
            text = rng.choice(TEXT_MUTATORS)(rng, text, donors)
    return text


# --------------------------------------------------------------------------
# Command lines
# --------------------------------------------------------------------------

OPTION_VALUES = ["@f", "@g", "@f::@jvp1", "@f::@jvp1::@vjp2", "@nope", "x", "y", "x,x", "",
                 "0", "-1", "9223372036854775808", "none", "true", "save-nothing", "@",
                 "tangent(x,1)", "{", "}", ",", '"', "'"]  # fmt: skip


def mutate_pipeline(rng: random.Random, pipeline: str) -> str:
    """Change an option value, drop, repeat or swap passes, or cut the text."""
    choice = rng.randrange(4)
    if choice == 0 and (values := list(re.finditer(r"=([^ },]*)", pipeline))):
        match = rng.choice(values)
        return pipeline[: match.start(1)] + rng.choice(OPTION_VALUES) + pipeline[match.end(1) :]
    passes = re.split(r",(?![^{]*\})", pipeline)
    if choice == 1 and len(passes) > 1:
        del passes[rng.randrange(len(passes))]
    elif choice == 2:
        passes.insert(rng.randrange(len(passes) + 1), rng.choice(passes))
    elif choice == 3 and len(passes) > 1:
        rng.shuffle(passes)
    else:
        return pipeline[: rng.randrange(len(pipeline) + 1)]
    return ",".join(passes)


RUN_ARG_VALUES = ["1.0", "-0.0", "nan", "inf", "1e999", "[1.0, 2.0]", "[[1.0], [2.0, 3.0]]",
                  "[]", "1+2j", "'x'", "None", "[1.0,", "True", "10**400", "(1.0, 2.0)",
                  "{1: 2}", "1" * 5000]  # fmt: skip
ENTRY_VALUES = ["@nope", "@f::@", "@", "f", "@f::@jvp9", "@f::@jvp1::@vjp2", "@g"]


def mutate_args(rng: random.Random, tool: str, args: tuple[str, ...]) -> tuple[str, ...]:
    """Mutate the pass pipeline (`-p`) or a `tidu-run` argument or entry."""
    items = list(args)
    if tool == "tidu-opt" and "-p" in items[:-1]:
        at = items.index("-p") + 1
        items[at] = mutate_pipeline(rng, items[at])
    elif tool == "tidu-run":
        positions = [i + 1 for i, a in enumerate(items[:-1]) if a in ("--arg", "--entry")]
        roll = rng.random()
        if positions and roll < 0.7:
            at = rng.choice(positions)
            entry = items[at - 1] == "--entry"
            items[at] = rng.choice(ENTRY_VALUES if entry else RUN_ARG_VALUES)
        elif positions and roll < 0.85:
            at = rng.choice(positions)
            del items[at - 1 : at + 1]  # a missing argument (or entry)
        else:
            items += ["--arg", rng.choice(RUN_ARG_VALUES)]  # one too many
    return tuple(items)
