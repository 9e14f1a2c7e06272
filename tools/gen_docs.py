"""`lamina-docs` / `python -m lamina.tools.gen_docs`: regenerate docs/passes.md and docs/dialects.md.

python -m lamina.tools.gen_docs            # rewrite the pages that changed
python -m lamina.tools.gen_docs --check    # exit 1 if a page is stale
"""

from __future__ import annotations

import argparse
import sys

from lamina.tools.cli import guarded_main


def _run(argv: list[str] | None) -> int:
    from lamina.tools.docs_gen import REGENERATE, stale_docs, write_docs

    parser = argparse.ArgumentParser(
        prog="lamina-docs", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_docs()
        for path in stale:
            print(f"{path}: error: stale generated page; run `{REGENERATE}`", file=sys.stderr)
        return 1 if stale else 0
    for path in write_docs():
        print(f"wrote {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return guarded_main("lamina-docs", lambda: _run(argv))


if __name__ == "__main__":
    sys.exit(main())
