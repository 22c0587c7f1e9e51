"""Size of the code a maintainer reads: `.venv/bin/python benchmarks/code_metrics.py [REPO]`

Prints, for ``pipeline/`` of REPO (default: this checkout), the number of functions, the median
function length in lines, the ten longest functions, and how often ``Any`` appears (as a word,
and as a name in the code, imports excluded). Compare two commits with a worktree:
``git worktree add /tmp/old <commit> && python benchmarks/code_metrics.py /tmp/old``.
"""

from __future__ import annotations

import ast
import re
import statistics
import sys
from pathlib import Path


def _functions(tree: ast.AST, where: str) -> list[tuple[int, str]]:
    return [(node.end_lineno - node.lineno + 1 if node.end_lineno else 1, f"{where}:{node.name}")
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]


def _any_names(tree: ast.AST) -> int:
    return sum(1 for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == "Any")


def main(repo: Path) -> None:
    functions: list[tuple[int, str]] = []
    words = names = 0
    for path in sorted((repo / "pipeline").rglob("*.py")):
        text = path.read_text("utf-8")
        tree = ast.parse(text)
        functions += _functions(tree, str(path.relative_to(repo)))
        words += len(re.findall(r"\bAny\b", text))
        names += _any_names(tree)
    lengths = [n for n, _ in functions]
    print(f"pipeline/ of {repo}: {len(functions)} functions, median "
          f"{statistics.median(lengths):g} lines")
    for length, name in sorted(functions, reverse=True)[:10]:
        print(f"  {length:4d}  {name}")
    print(f"Any: {words} as a word, {names} as a name in code (imports excluded)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
