"""Kernel families: units whose code differs only in integer constants share one build.

A network's kernels often come in families: DenseNet-121's 1x1 convolutions
to 128 channels are one kernel per layer, the same loop nest but for the
number of input channel blocks `n` (the reduction's trip count, `icmp slt
i64 %i, n`, and the weight block's stride `1024 n` with its multiples).
LLVM optimized and compiled every one of them from scratch. Here the units
of one process's split (backends/kernel_split.py) are grouped by their text
with their names canonical and every *parametrizable* integer literal
abstracted (`_SITE`); a group of at least two units is a family:

* the **generic unit** holds the functions that are only ever called (not the
  entry, not an OpenMP wrapper whose address goes to `GOMP_parallel`: the
  loops of a parallel body) and everything they reach; each called one is
  exported as `__lamina_f_<key>_<i>` with one extra `i64`/`i32` parameter per
  differing literal in them (literals with the same values in every member:
  one parameter), used where the literal was, and `llvm.assume`s that a
  parameter whose values are all positive is positive (a loop whose trip count
  is one runs at least once: LLVM then keeps its accumulators in registers, as
  with the literal);
* each **member unit** keeps the rest of its kernel (its entry and OpenMP
  wrapper, with their own literals) and calls the generic functions with its
  literals appended to the calls. A member keeps its symbol (the host's text
  does not change); its key covers its own text, which names the generic
  unit's symbol, which is the generic unit's key: a member's key names exactly
  one object, and its generic unit is recorded with it (`KernelUnit.needs`,
  `kernel_reuse.Record.family`), so a member reused from the cache brings
  its generic unit's object along.

A literal is parametrizable where an SSA value is allowed and a register
costs the same kind of instruction: an operand of `add`, `sub`, `mul`,
`and`, `or`, `xor` and `icmp`, the single index of a `getelementptr` of a
scalar element type, a `select`'s values, a stored value. Never an `alloca`
size, an alignment, a type, a divisor or shift, a call's argument (an
intrinsic's `immarg`), a `phi`'s incoming value, metadata: literals there stay
in the group's key, so units differing there are not a family. Nor is a group
whose generic functions would refer to an error message (it names its kernel),
whose differing literals are in an internal function of the generic unit, or
whose generic unit would hold less than `MIN_GENERIC_SHARE` of the code.
Families are formed per lowering process; backends/parallel_lowering.py deals
a te-level family's kernels to one process (`deal`, `te_family`), so that the
same families form as in one process.

`LAMINA_KERNEL_FAMILIES=0` turns families off (the units as before).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace

from lamina.runtime.env import env_flag

FAMILIES_ENV = "LAMINA_KERNEL_FAMILIES"
"""Environment variable: `0` compiles every kernel unit on its own (no families)."""

GENERIC_PREFIX = "__lamina_f_"
"""Symbol prefix of a family's generic functions (`<prefix><key[:32]>_<i>`)."""

MIN_MEMBERS = 2
"""Fewest units that make a family."""

_PLACE = "__lamina_family_unit"
_INT = r"-?\d+"
_VAL = r'(?:%"(?:[^"\\]|\\.)*"|-?\d+)'
_NAME = r'%"[^"]*"'
_SITE = re.compile(
    "|".join(
        [  # binary operators without a divisor or a shift amount; compares
            rf"^  {_NAME} = (?:(?:add|sub|mul|and|or|xor)(?: nuw| nsw)*|icmp \w+) "
            rf"(?P<t0>i64|i32) (?P<a0>{_VAL}), (?P<b0>{_VAL})$",
            # the one index of an address of a scalar element
            rf"^  {_NAME} = getelementptr (?:inbounds )?(?:i8|i16|i32|i64|float|double|half), "
            rf"(?:ptr|[\w ]+\*) {_NAME}, (?P<t1>i64|i32) (?P<a1>{_VAL})$",
            rf"^  {_NAME} = select\s+i1 {_NAME}, (?P<t2>i64|i32) (?P<a2>{_VAL}), "
            rf"(?:i64|i32) (?P<b2>{_VAL})$",
            rf"^  store (?P<t3>i64|i32) (?P<a3>{_INT}), ",
        ]
    ),
    re.M,
)
"""Instructions with parametrizable literals: group `t<i>` is the operands' type, `a<i>`
and `b<i>` the operands (a literal there may become a parameter of that type)."""
_GROUPS = [(f"t{i}", f"a{i}", f"b{i}") for i in range(4)]

_DEFINE = re.compile(r'^define (?:(?:internal|private) )?([^@]*)@"((?:[^"\\]|\\.)*)"\(')
_REF = re.compile(r'@"((?:[^"\\]|\\.)*)"')
_MD = re.compile(r"!(\d+)\b")


_ASSUME = 'declare void @"llvm.assume"(i1 %".1")'


def enabled() -> bool:
    return env_flag(FAMILIES_ENV, True)


@dataclass
class _Function:
    name: str
    lines: list[str]
    text: str = ""
    sites: list[tuple[int, int, str]] | None = None
    """(start, end, type) in `text` of every parametrizable literal, in order."""


@dataclass
class _Parsed:
    prelude: list[str]
    functions: list[_Function]
    metadata: dict[str, str]
    key: str
    """The text with its names canonical and its parametrizable literals abstracted."""
    values: list[str]
    """The parametrizable literals, in order (those of `functions`' `sites`)."""


def _parse(text: str, symbol: str) -> _Parsed | None:
    prelude: list[str] = []
    functions: list[_Function] = []
    metadata: dict[str, str] = {}
    current: _Function | None = None
    for line in text.split("\n"):
        if current is not None:
            current.lines.append(line)
            if line == "}":
                current = None
            continue
        if line.startswith("define "):
            match = _DEFINE.match(line)
            if match is None:
                return None
            current = _Function(match.group(2), [line])
            functions.append(current)
        elif line.startswith("!"):
            metadata[line.partition(" ")[0][1:]] = line
        elif line.strip():
            prelude.append(line)
    if not functions or functions[0].name != symbol:
        return None
    canonical = {symbol: _PLACE}
    for i, function in enumerate(functions[1:]):
        canonical[function.name] = f"__lamina_ff{i}"
    values: list[str] = []
    pieces: list[str] = []
    for function in functions:
        text = function.text = "\n".join(function.lines)
        sites = function.sites = []
        position = 0
        for match in _SITE.finditer(text):
            for kind, a, b in _GROUPS:
                if match.group(kind) is None:
                    continue
                for group in (a, b):
                    literal = match.group(group) if group in _SITE.groupindex else None
                    if literal is not None and not literal.startswith("%"):
                        start, end = match.span(group)
                        sites.append((start, end, match.group(kind)))
                        values.append(literal)
                        pieces.append(text[position:start])
                        pieces.append("#")
                        position = end
                break
        pieces.append(text[position:])
        pieces.append("\n")
    body = "".join(pieces)
    key_text = "\n".join([*prelude, body, *metadata.values()])
    key_text = _REF.sub(lambda m: f'@"{canonical.get(m.group(1), m.group(1))}"', key_text)
    key_text = key_text.replace(symbol, _PLACE)  # its messages, `<symbol>_m<i>`
    return _Parsed(prelude, functions, metadata, key_text, values)


def _paren_end(text: str, start: int) -> int:
    """The index of the `)` closing the `(` at `start - 1`."""
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced parentheses")


def _append_arguments(line: str, callee: str, new: str, extra: str) -> str:
    """`line` with every call of `@"callee"(...)` calling `@"new"(..., extra)`."""
    target = f'@"{callee}"('
    out, position = [], 0
    while True:
        at = line.find(target, position)
        if at < 0:
            break
        open_at = at + len(target)
        close = _paren_end(line, open_at)
        inner = line[open_at:close]
        joined = f"{inner}, {extra}" if inner.strip() and extra else inner or extra
        out.append(line[position:at] + f'@"{new}"({joined})')
        position = close + 1
    out.append(line[position:])
    return "".join(out)


@dataclass
class Family:
    """A family's generic unit and its members' new texts (by member symbol)."""

    generic_key: str
    generic_symbol: str
    generic_text: str
    members: dict[str, str]


def _plan(
    parsed: list[_Parsed], generic: set[str]
) -> tuple[dict[tuple[str, tuple[str, ...]], int], list]:
    """The parameters (type and values per member → index) and each site's parameter
    (per function, per site; None where the members agree or outside `generic`)."""
    first = parsed[0]
    params: dict[tuple[str, tuple[str, ...]], int] = {}
    site_params: list[list[int | None]] = []
    position = 0
    for function in first.functions:
        row: list[int | None] = []
        for _start, _end, kind in function.sites or ():
            values = tuple(p.values[position] for p in parsed)
            position += 1
            if function.name not in generic or len(set(values)) == 1:
                row.append(None)
                continue
            row.append(params.setdefault((kind, values), len(params)))
        site_params.append(row)
    return params, site_params


MAX_PARAMETERS = 4
"""Most parameters a generic unit takes. Members that differ in more constants differ in
more than a reduction's extent and strides (DenseNet-121's 1x1 convolutions: four):
in spatial sizes or a concatenation's offsets (up to 34), whose loops are left to
LLVM with known trip counts."""

MIN_GENERIC_SHARE = 0.5
"""The generic unit must hold at least this part of a member's functions' text."""


def _called_only(function: _Function, target: str) -> bool:
    """Does `function` refer to `target` (`@"name"`) only as the callee of calls?"""
    for line in function.lines[1:]:
        if target in line and (
            " call " not in f" {line.strip()} " or line.count(target) != line.count(target + "(")
        ):
            return False
    return True


def _family(parsed: list[_Parsed], symbols: list[str], facts: str, runtime: str) -> Family | None:
    """The family of `parsed`'s units: the generic unit holds their called-only functions
    (`_split_plan`) or, failing that, all of their code (`_whole_plan`: a kernel
    without an OpenMP body, whose entry calls the generic entry); None if neither fits."""
    first = parsed[0]
    names = [f.name for f in first.functions]
    refs = {f.name: set(_REF.findall(f.text)) - {f.name} for f in first.functions}
    plan = _split_plan(parsed, symbols[0], names, refs) or _whole_plan(parsed, symbols[0], names)
    if plan is None:
        return None
    return _build(parsed, symbols, facts, runtime, names, refs, *plan)


def _split_plan(parsed: list[_Parsed], symbol: str, names: list[str], refs: dict) -> tuple | None:
    first = parsed[0]
    # The generic unit's entries: functions only ever called (an OpenMP body's loops,
    # not its wrapper, whose address is passed), with everything they reach.
    differing = {
        name
        for name in names[1:]
        if all(_called_only(f, f'@"{name}"') for f in first.functions if name in refs[f.name])
    }
    generic: set[str] = set()
    stack = list(differing)
    while stack:
        name = stack.pop()
        if name not in generic:
            generic.add(name)
            stack += [r for r in refs[name] if r in refs]
    if not generic or names[0] in generic:
        return None
    for function in first.functions:
        if function.name in generic and symbol in function.text:
            return None  # an error message names its kernel
        if function.name not in generic and refs[function.name] & (generic - differing):
            return None  # an internal function of the generic unit used outside it
    share = sum(len(f.text) for f in first.functions if f.name in generic)
    if share < MIN_GENERIC_SHARE * sum(len(f.text) for f in first.functions):
        return None
    params, site_params = _plan(parsed, generic)
    if len(params) > MAX_PARAMETERS:
        return None
    for f_index, row in enumerate(site_params):
        if any(p is not None for p in row) and names[f_index] not in differing:
            return None  # a constant no parameter can reach
    return differing & generic, generic, params, site_params


def _whole_plan(parsed: list[_Parsed], symbol: str, names: list[str]) -> tuple | None:
    """All of the kernel in the generic unit, its entry taking the parameters."""
    first = parsed[0]
    root = first.functions[0]
    if symbol in "\n".join(root.lines[1:]) or any(symbol in f.text for f in first.functions[1:]):
        return None  # an error message names its kernel
    generic = set(names)
    params, site_params = _plan(parsed, generic)
    if not params or len(params) > MAX_PARAMETERS:
        return None
    if any(p is not None for row in site_params[1:] for p in row):
        return None  # nothing to share, or a constant outside the entry
    return {names[0]}, generic, params, site_params


def _build(
    parsed: list[_Parsed],
    symbols: list[str],
    facts: str,
    runtime: str,
    names: list[str],
    refs: dict,
    differing: set[str],
    generic: set[str],
    params: dict,
    site_params: list,
) -> Family:
    first = parsed[0]
    kinds = sorted(params.items(), key=lambda item: item[1])
    formal = ", ".join(f'{kind} %"fam.{i}"' for (kind, _), i in kinds)
    entry_of = {name: f"{_PLACE}_{i}" for i, name in enumerate(n for n in names if n in differing)}
    helpers = {
        name: f"__lamina_gf{i}"
        for i, name in enumerate(n for n in names if n in generic and n not in differing)
    }
    # What the members' values say, for LLVM: a positive trip count runs its loop at
    # least once (accumulators handed on in registers, not zeroed and stored in memory).
    assumptions: list[str] = []
    for (kind, values), i in kinds:
        if all(int(v) > 0 for v in values):
            assumptions.append(f'  %"fam.p{i}" = icmp sgt {kind} %"fam.{i}", 0')
            assumptions.append(f'  call void @"llvm.assume"(i1 %"fam.p{i}")')
    # The generic unit (canonical names, `_PLACE` for its symbol until its key is known).
    bodies: list[str] = []
    for f_index, function in enumerate(first.functions):
        if function.name not in generic:
            continue
        text = function.text
        for (start, end, _kind), param in zip(
            reversed(function.sites or ()), reversed(site_params[f_index]), strict=True
        ):
            if param is not None:
                text = text[:start] + f'%"fam.{param}"' + text[end:]
        lines = text.split("\n")
        for index in range(1, len(lines)):
            for callee in refs[function.name] & differing:
                if f'@"{callee}"(' in lines[index]:
                    lines[index] = _append_arguments(lines[index], callee, callee, formal)
        if function.name in differing:
            define = lines[0]
            for linkage in ("define internal ", "define private "):
                if define.startswith(linkage):
                    define = "define " + define[len(linkage) :]
            at = define.index(f'@"{function.name}"(') + len(f'@"{function.name}"(')
            close = _paren_end(define, at)
            inner = define[at:close]
            joined = f"{inner}, {formal}" if inner.strip() and formal else inner or formal
            lines[0] = define[:at] + joined + define[close:]
            if lines[1] == "{" and lines[2].endswith(":"):
                lines[3:3] = assumptions
        bodies.append("\n".join(lines))
    rename = {**entry_of, **helpers}
    generic_bodies, generic_md = _renumbered(bodies, first.metadata)
    generic_body = _REF.sub(
        lambda m: f'@"{rename.get(m.group(1), m.group(1))}"', "\n".join(generic_bodies)
    )
    header, declarations = _split_prelude(first.prelude)
    used = set(_REF.findall(generic_body))
    declared = [d for n, d in declarations if n in used]
    if assumptions and "llvm.assume" not in used:
        declared.append(_ASSUME)
    generic_text = "\n".join([*header, "", *declared, "", generic_body, *generic_md, ""])
    generic_key = hashlib.sha256(f"{facts}\n{runtime}\n{generic_text}".encode()).hexdigest()
    generic_symbol = f"{GENERIC_PREFIX}{generic_key[:32]}"
    generic_text = generic_text.replace(f'@"{_PLACE}_', f'@"{generic_symbol}_')
    exported = {
        name: f"{generic_symbol}_{entry.rsplit('_', 1)[1]}" for name, entry in entry_of.items()
    }
    declares = []
    for line in generic_text.split("\n"):
        if line.startswith("define ") and f'@"{generic_symbol}_' in line:
            declares.append("declare " + line[len("define ") :].replace(" noinline ", " "))
    # The members: the functions outside the generic unit, calling it with their literals.
    members: dict[str, str] = {}
    index_of = {name: i for i, name in enumerate(names)}
    for position, (member, member_symbol) in enumerate(zip(parsed, symbols, strict=True)):
        extra = ", ".join(f"{kind} {values[position]}" for (kind, values), _i in kinds)
        kept: list[str] = []
        for f_index, function in enumerate(member.functions):
            if names[f_index] in generic:  # the same function as the first member's
                continue
            lines = list(function.lines)
            for index in range(1, len(lines)):
                for callee in refs[names[f_index]] & differing:
                    local = member.functions[index_of[callee]].name
                    if f'@"{local}"(' in lines[index]:
                        lines[index] = _append_arguments(
                            lines[index], local, exported[callee], extra
                        )
            kept.append("\n".join(lines))
        if names[0] in generic:  # the entry itself: a wrapper calling the generic one
            kept.insert(0, _wrapper(member.functions[0].lines[0], exported[names[0]], extra))
        member_bodies, member_md = _renumbered(kept, member.metadata)
        body = "\n".join(member_bodies)
        m_header, m_declarations = _split_prelude(member.prelude)
        used = set(_REF.findall(body))
        members[member_symbol] = "\n".join(
            [
                *m_header,
                "",
                *(d for n, d in m_declarations if n in used),
                *declares,
                "",
                body,
                *member_md,
                "",
            ]
        )
    return Family(generic_key, generic_symbol, generic_text, members)


def _wrapper(define: str, callee: str, extra: str) -> str:
    """An entry that calls `callee` with its own parameters and `extra`."""
    match = _DEFINE.match(define)
    assert match is not None
    result = match.group(1).split()[-1]
    at = define.index(f'@"{match.group(2)}"(') + len(match.group(2)) + 4
    close = _paren_end(define, at)
    args = [f"{p.split()[0]} {p.split()[-1]}" for p in _top_level(define[at:close])]
    call = f'call {result} @"{callee}"({", ".join(a for a in [*args, extra] if a)})'
    if result == "void":
        body = f"  {call}\n  ret void"
    else:
        body = f'  %"fam.r" = {call}\n  ret {result} %"fam.r"'
    return f"{define.replace(' noinline ', ' ')}\n{{\n.0:\n{body}\n}}"


def _top_level(text: str) -> list[str]:
    """`text` split at its commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def _split_prelude(prelude: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """The target lines, and every declaration or global with the name it defines."""
    header, declarations = [], []
    for line in prelude:
        match = _REF.search(line)
        if line.startswith(("target ", "source_filename")) or match is None:
            header.append(line)
        else:
            declarations.append((match.group(1), line))
    return header, declarations


def _renumbered(bodies: list[str], metadata: dict[str, str]) -> tuple[list[str], list[str]]:
    from lamina.backends.kernel_split import _renumbered_metadata

    return _renumbered_metadata(bodies, metadata)


def form(units: list, facts: str, runtime: str, scopes: dict[str, str] | None = None) -> list:
    """`units` (`kernel_split.KernelUnit`s) with the families merged: each member with its
    new text and key, and the generic units after them. Deterministic: the groups
    and their members in the order of `units`. `scopes`: kernel name → its family
    scope (`kernel_reuse.family_scopes`); units of different scopes are no family."""
    from lamina.backends.kernel_split import KernelUnit

    groups: dict[str, list[tuple[int, _Parsed]]] = {}
    for index, unit in enumerate(units):
        if not unit.text or unit.needs:
            continue
        parsed = _parse(unit.text, unit.symbol)
        if parsed is None or not parsed.values:
            continue
        scope = (scopes or {}).get(unit.names[0], "") if unit.names else ""
        groups.setdefault(f"{scope}\n{parsed.key}", []).append((index, parsed))
    out = list(units)
    generics: dict[str, KernelUnit] = {}
    for members in groups.values():
        if len(members) < MIN_MEMBERS:
            continue
        symbols = [units[i].symbol for i, _ in members]
        try:
            family = _family([p for _, p in members], symbols, facts, runtime)
        except (ValueError, IndexError):
            family = None
        if family is None:
            continue
        needs = ((family.generic_key, family.generic_symbol),)
        for index, _ in members:
            unit = units[index]
            text = family.members[unit.symbol]
            key = hashlib.sha256(f"{facts}\n{runtime}\n{text}".encode()).hexdigest()
            out[index] = replace(unit, key=key, text=text, needs=needs)
        generics.setdefault(
            family.generic_key,
            KernelUnit(family.generic_key, family.generic_symbol, family.generic_text, ()),
        )
    return out + list(generics.values())


def with_needed(units: list) -> list:
    """`units` and a unit (without text: compiled before) for every generic unit a
    reused member needs that is not among them; the generic units after the kernels,
    in the order of their first members (the same order whichever process built
    them: the objects are linked in this order)."""
    from lamina.backends.kernel_split import KernelUnit

    kernels = [unit for unit in units if unit.names]
    generics = {unit.key: unit for unit in units if not unit.names}
    ordered: dict[str, KernelUnit] = {}
    for unit in kernels:
        for key, symbol in unit.needs:
            if key not in ordered:
                ordered[key] = generics.get(key) or KernelUnit(key, symbol, "", ())
    return kernels + list(ordered.values())


_DIGITS = re.compile(r"\d+")


def te_family(text: str) -> str:
    """A kernel's family at the te level (its printed te.func with every number
    abstracted): kernels that may become one family after lowering, dealt to the same
    lowering process (backends/parallel_lowering.py). Only a hint: the units decide."""
    return hashlib.sha256(_DIGITS.sub("#", text).encode()).hexdigest()


__all__ = ["FAMILIES_ENV", "GENERIC_PREFIX", "enabled", "form", "te_family", "with_needed"]
