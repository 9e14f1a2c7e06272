"""Character-level mutation fuzzing of `lamina-opt`: malformed text is a user error.

Every input of tests/filecheck is mutated a few characters at a time
(deletions, insertions — control bytes, quotes, brackets, digits —,
duplications of a span, byte flips) and run through `lamina-opt` in-process
with the flags of the file's first RUN line that shape parsing and passes
(`--split-input-file`, `--verify-diagnostics`, `-p`). Whatever the mutant,
the tool must exit 0, or exit 1 with a located `file:line:col: error:` diagnostic — never exit 2
(`internal error`, a Python traceback).

Seeded and bounded (a few hundred mutants, parse-dominated) so it runs in
seconds; `python tests/test_malformed_text_fuzz.py N SEED [FLAGS...]` runs a
larger campaign (FLAGS, e.g. `--compile-to lowering`, instead of the RUN
lines') and prints every failing mutant.
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from lamina.tools.lamina_opt import main as opt_main

FILECHECK = Path(__file__).parent / "filecheck"
INSERTS = [
    *(chr(c) for c in (0, 1, 7, 8, 11, 12, 27, 127)),
    '"',
    "'",
    "\\",
    "\n",
    "\t",
    "{",
    "}",
    "(",
    ")",
    "<",
    ">",
    "[",
    "]",
    "%",
    "^",
    "#",
    "!",
    "@",
    ":",
    ",",
    "=",
    "-",
    "0",
    "9",
    "x",
    "e",
    "é",
    "\u2028",
    "\ufeff",
]
LOCATED = re.compile(r"^\S.*:\d+:\d+: error: |^\S.*:\d+: error: expected[- ]", re.M)
"""A located error: `file:line:col:`, or (`--verify-diagnostics` verdicts on the
annotations, which name a line, as MLIR's do) `file:line: error: expected...`."""
KEPT_FLAGS = {"--split-input-file": 0, "--verify-diagnostics": 0, "-p": 1}


@dataclass(frozen=True)
class Seed:
    path: Path
    text: str
    flags: tuple[str, ...]


def seeds() -> list[Seed]:
    """Every .mlir input under tests/filecheck with its first RUN line's parse/pass flags."""
    found = []
    for path in sorted(FILECHECK.rglob("*.mlir")):
        text = path.read_text(encoding="utf-8")
        run = re.search(r"^// RUN: lamina-opt %s(.*)$", text, re.M)
        flags: list[str] = []
        if run is not None:
            try:
                words = shlex.split(run.group(1).split("|")[0])
            except ValueError:
                words = []
            for i, word in enumerate(words):
                if word in KEPT_FLAGS:
                    flags += words[i : i + 1 + KEPT_FLAGS[word]]
        found.append(Seed(path, text, tuple(flags)))
    return found


def mutate(text: str, rng: random.Random) -> str:
    """1-3 character-level edits at random places."""
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(text) + 1)
        kind = rng.randrange(4)
        if kind == 0:  # delete a short span
            text = text[:at] + text[at + rng.randint(1, 8) :]
        elif kind == 1:  # insert a character
            text = text[:at] + rng.choice(INSERTS) + text[at:]
        elif kind == 2:  # duplicate a span
            span = text[at : at + rng.randint(1, 40)]
            text = text[:at] + span + text[at:]
        elif at < len(text):  # flip one bit of a character
            flipped = chr(ord(text[at]) ^ (1 << rng.randrange(7)))
            text = text[:at] + flipped + text[at + 1 :]
    return text


@dataclass(frozen=True)
class Outcome:
    status: int
    stderr: str

    @property
    def acceptable(self) -> bool:
        if self.status == 0:
            return True
        return self.status == 1 and LOCATED.search(self.stderr) is not None


def run_mutant(text: str, flags: tuple[str, ...], tmp: Path) -> Outcome:
    """`lamina-opt` on `text` in-process, output discarded, stderr kept."""
    path = tmp / "mutant.mlir"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = opt_main([str(path), *flags, "-o", str(tmp / "out.mlir")])
    return Outcome(status, err.getvalue())


def campaign(
    count: int, seed: int, tmp: Path, extra: tuple[str, ...] = ()
) -> list[tuple[Seed, str, Outcome]]:
    """`count` mutants (seeded); the ones whose outcome is not acceptable.
    `extra` flags replace the RUN line's (e.g. `--compile-to lowering`)."""
    rng = random.Random(seed)
    inputs = seeds()
    bad = []
    for _ in range(count):
        source = rng.choice(inputs)
        text = mutate(source.text, rng)
        outcome = run_mutant(text, extra or source.flags, tmp)
        if not outcome.acceptable:
            bad.append((source, text, outcome))
    return bad


def test_mutated_filecheck_inputs_never_reach_an_internal_error(tmp_path):
    bad = campaign(300, seed=20261125, tmp=tmp_path)
    report = [
        f"{s.path.name} {' '.join(s.flags)} -> {o.status}\n{o.stderr[-600:]}" for s, _, o in bad
    ]
    assert not bad, "\n\n".join(report)


def test_the_two_known_crashes_are_located_diagnostics(tmp_path):
    """A string literal open at the end of the file, and a control byte."""
    for text in (
        'builtin.module {\n  %0 = "test.op"() {a = "abc',
        "builtin.module {\n  graph.func @f() {\x01\n  }\n}\n",
        'builtin.module {\n  %0 = "abc\\',
    ):
        outcome = run_mutant(text, (), tmp_path)
        assert outcome.status == 1 and LOCATED.search(outcome.stderr), outcome.stderr


if __name__ == "__main__":
    import tempfile

    n, s = (int(a) for a in sys.argv[1:3])
    with tempfile.TemporaryDirectory() as tmp:
        failures = campaign(n, s, Path(tmp), tuple(sys.argv[3:]))
    for source, text, outcome in failures:
        print(f"=== {source.path} {source.flags} -> {outcome.status}")
        print(repr(text[:4000]))
        print(outcome.stderr[-2000:])
    print(f"{n} mutants, {len(failures)} not acceptable")
