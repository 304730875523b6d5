#!/usr/bin/env python3
"""The project's style, checked: ctest runs `style_check.py ROOT format|length`.

format: every C++ file git tracks in src/, labs/ and tests/ is as clang-format (.clang-format) leaves it.
        Without clang-format it prints "SKIPPED: ..." (ctest reports the test skipped).
length: no function in labs/ or src/runner/ runs over 60 lines. A function is found as a definition that
        starts at column 0 (the project's namespaces are not indented) and ends at its matching brace; the
        labs' table in labs/catalog.cpp is data, not code, and is the one exception.
"""
import os
import re
import shutil
import subprocess
import sys

MAX_LINES = 60
TABLES = {("labs/catalog.cpp", "catalog")}  # data tables written as one initializer
NOT_FUNCTIONS = ("namespace", "struct", "class", "enum", "union", "#", "//", "}", "using", "template",
                 "static_assert", "extern")


def tracked(root, *patterns):
    """The C++ files git tracks under the folders; outside a git clone (a source archive), every one there."""
    out = subprocess.run(["git", "-C", root, "ls-files", *patterns], capture_output=True, text=True)
    if out.returncode == 0:
        names = out.stdout.split()
    else:
        names = [os.path.relpath(os.path.join(d, f), root) for p in patterns
                 for d, _, files in os.walk(os.path.join(root, p)) for f in files]
    return sorted(f for f in names if f.endswith((".cpp", ".h")))


def check_format(root):
    tool = shutil.which("clang-format")
    if not tool:
        print("SKIPPED: clang-format is not installed (Debian's clang-format package)")
        return 0
    bad = []
    for f in tracked(root, "src", "labs", "tests"):
        r = subprocess.run([tool, "--dry-run", "-Werror", "--style=file", f], cwd=root, capture_output=True,
                           text=True)
        if r.returncode != 0:
            bad.append(f)
    for f in bad:
        print(f"{f}: not as clang-format leaves it (clang-format -i {f})")
    print(f"{len(bad)} of {len(tracked(root, 'src', 'labs', 'tests'))} files differ from clang-format's layout")
    return 1 if bad else 0


def strip(line):
    return re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'|//.*', "", line)


def functions(text):
    """(first line, length, name) of each definition that starts at column 0."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        # A variable's initializer (`const T x = f(...)`) has '=' before its first '('; a signature has none.
        if (line and not line[0].isspace() and "(" in line and not line.startswith(NOT_FUNCTIONS)
                and "=" not in line.split("(")[0]):
            j = i
            while j < len(lines) and j - i < 8 and not strip(lines[j]).rstrip().endswith(("{", ";")):
                j += 1
            end_of_signature = strip(lines[j]).rstrip() if j < len(lines) else ""
            if end_of_signature.endswith("{") and not re.search(r"=\s*\{$", end_of_signature):
                depth, k = 0, j
                for k in range(j, len(lines)):
                    depth += strip(lines[k]).count("{") - strip(lines[k]).count("}")
                    if depth == 0:
                        break
                name = re.search(r"([A-Za-z_][A-Za-z0-9_:]*)\s*\(", line)
                yield i + 1, k - i + 1, name.group(1).split("::")[-1] if name else line.strip()
                i = k + 1
                continue
        i += 1


def check_length(root):
    bad = []
    files = tracked(root, "labs", "src/runner")
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            for first, length, name in functions(fh.read()):
                if length > MAX_LINES and (f, name) not in TABLES:
                    bad.append(f"{f}:{first}: {name}() runs {length} lines (at most {MAX_LINES})")
    print("\n".join(bad))
    print(f"{len(bad)} functions over {MAX_LINES} lines in {len(files)} files of labs/ and src/runner/")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in ("format", "length"):
        sys.exit("usage: style_check.py ROOT format|length")
    sys.exit(check_format(sys.argv[1]) if sys.argv[2] == "format" else check_length(sys.argv[1]))
