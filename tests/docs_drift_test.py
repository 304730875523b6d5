#!/usr/bin/env python3
"""The docs name only what exists: a drift test (ctest runs it; it needs no build and takes well under a second).

It reads every Markdown file of the project, the YAML data files (comments and text: quiz.yaml's explanations
are what a learner reads) and the comments of the amp library's public headers (src/amp/*.h), and checks that
what they name exists in the code:

  paths       a backticked path or a relative link (with its #anchor) names a file, folder or heading there;
              build/bin/NAME names an executable the build makes
  targets     a backticked CMake name (amp_lab_*, amp_lab::*) is a target, function, option or variable
  options     a backticked or code-block --option of amp-lab's own commands is defined by its code
  variables   AMP_LAB_* and XDG_* names are read or set by the code
  amp:: names amp::X names something src/amp declares
  sections    FILE.md, "Heading" (also in code comments) names a heading of FILE.md
  lists       the docs that list the amp library's headers and the tests name every one there is; a section
              titled for "each lab" names every lab of labs/catalog.cpp
  --dtype     a sentence about --dtype that names labs names the labs that take it (labs/catalog.cpp's
              dtype_choice), or says the ones it names refuse it
  claims      a paragraph making one of the claims in CLAIMS below says the condition it holds under
  machines    a text that names an AMD EPYC names its family (lscpu), or says it was not recorded: several
              generations stand behind this project's figures, and a figure is only as good as the
              processor named beside it
  other projects: names of torchao and Transformer Engine are checked against the ones confirmed in their
              sources (EXTERNAL_NAMES below, each with the file it comes from)

Usage: docs_drift_test.py ROOT. Prints each finding as FILE:LINE: what is wrong, and exits 1 if there is one.
"""
import os
import re
import sys

# Names of other projects the docs may cite, confirmed in those projects' sources. A name attributed to
# torchao or Transformer Engine (written after the project's name, or dotted under its package) must be here.
EXTERNAL_NAMES = {
    # pytorch/ao, torchao/optim/__init__.py (__all__) and adam.py, quant_utils.py
    "torchao": {
        "torchao.optim", "_AdamW", "AdamW8bit", "AdamW4bit", "AdamWFp8", "Adam8bit", "Adam4bit", "AdamFp8",
        "bf16_stochastic_round", "_fp32_to_bf16_sr", "torchao/optim/quant_utils.py",
        # pytorch/ao, torchao/float8/float8_aten_api.py, the emulated FP8 matmul
        "torchao.float8", "mm_float8_emulated", "torchao/float8/float8_aten_api.py",
        # pytorch/ao, torchao/prototype/mx_formats/mx_tensor.py and config.py, the MX block formats
        "torchao.prototype.mx_formats", "to_mx", "to_dtype", "ScaleCalculationMode",
        "torchao/prototype/mx_formats/mx_tensor.py",
    },
    # NVIDIA/TransformerEngine, transformer_engine/common/recipe/__init__.py
    "Transformer Engine": {
        "DelayedScaling", "Float8CurrentScaling", "Float8BlockScaling", "MXFP8BlockScaling",
        "NVFP4BlockScaling", "transformer_engine/common/recipe", "margin", "amax_history_len",
    },
}

# Commands of other projects whose options the docs quote (cmake --install, pip --index-url, ...): their
# options are theirs, not amp-lab's, and are not looked up in amp-lab's code.
EXTERNAL_COMMANDS = {
    "cmake", "ctest", "pip", "python", "python3", "torchrun", "git", "apt-get", "sudo", "clang-format",
    "ninja", "nvidia-smi", "ldd", "time", "g++", "gcc", "ccache", "lscpu", "uptime", "bash", "sh",
}

# Paths a doc may name that are not in a clone: what a build, a run or an install makes, and the machine's.
MADE_PATHS = (
    "build", "build-cuda", "build-sanitize", "build-mutation", "build-e", "bench-out", "workspace", "P/",
    "~", "$", "/", "site-packages", "shared/", "../shared", "ckpt.pt", "third_party/", "share/",
)
# Headers of LibTorch, CUDA and NCCL that the docs name (amp-lab includes them; they are not in a clone).
EXTERNAL_HEADERS = ("ATen/", "c10/", "torch/", "cublas_v2.h", "nccl.h", "cuda_runtime")
# Folders a path may be written relative to: the project, its include folder src/, the tests.
PATH_BASES = ("", "src", "tests")

SKIP_DIRS = {".git", "workspace", "bench-out", "__pycache__", "node_modules"}
CODE_EXT = (".cpp", ".h", ".cmake", ".txt", ".py", ".sh", ".in", ".yaml")


class Findings:
    def __init__(self):
        self.items = []

    def add(self, where, text):
        self.items.append(f"{where}: {text}")


def walk(root, keep):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for f in sorted(files):
            path = os.path.join(folder, f)
            if keep(path):
                yield path


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def rel(root, path):
    return os.path.relpath(path, root)


class Code:
    """What the code defines: the text of every code file, CMake names, options, the catalog."""

    def __init__(self, root):
        self.root = root
        self.all_files = [rel(root, p) for p in walk(root, lambda p: True)]
        self.files = {}
        for path in walk(root, lambda p: p.endswith(CODE_EXT) or "/scripts/" in p or p.endswith("/.ci/run")):
            if path.endswith("docs_drift_test.py") or path.endswith((".yaml",)):
                continue
            self.files[rel(root, path)] = read(path)
        self.text = "\n".join(self.files.values())
        self.words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_.-]*[A-Za-z0-9_]", self.text))
        self.words |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", self.text))
        # cxxopts ("name", "h,name"), argparse and shell scripts ("--name", --name)).
        self.options = set(re.findall(r"--([a-z][a-z0-9-]*)", self.text))
        self.options |= set(re.findall(r'"(?:[a-zA-Z],)?([a-z][a-z0-9-]*)"', self.text))
        cmake = "\n".join(t for p, t in self.files.items() if p.endswith((".cmake", "CMakeLists.txt", ".in")))
        self.cmake_names = set(re.findall(
            r"(?:add_library|add_executable|add_custom_target|function|macro|option|set|amp_lab_add_lab)"
            r"\(\s*([A-Za-z_][A-Za-z0-9_:-]*)", cmake))
        self.cmake_names |= set(re.findall(r"(amp_lab::[A-Za-z_]+)", cmake))
        self.cmake_names |= set(re.findall(r"ALIAS\s+([A-Za-z_:]+)", cmake))
        self.cmake_names |= set(re.findall(r"amp_lab_add_\w+\(\s*([A-Za-z_][\w-]*)", cmake))
        amp_headers = [t for p, t in self.files.items() if p.startswith("src/amp/") and p.endswith((".h", ".cpp"))]
        self.amp_words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", "\n".join(strip_comments(t) for t in amp_headers)))
        catalog = self.files.get("labs/catalog.cpp", "")
        self.labs = []  # (number, id, takes --dtype)
        for entry in re.split(r"\{\.number = ", catalog)[1:]:
            number = int(entry.split(",")[0])
            lab_id = re.search(r'\.id = "([\w-]+)"', entry).group(1)
            self.labs.append((number, lab_id, ".dtype_choice" in entry))
        self.executables = {"amp-lab", "amp-lab-info", "amp-lab-bench"}
        for number, lab_id, _ in self.labs:
            self.executables.add(f"lab{number:02d}_{lab_id.replace('-', '_')}")

    def defines_option(self, name):
        return name in self.options

    def has_word(self, word):
        return word in self.words


def strip_comments(cpp):
    return re.sub(r"//[^\n]*", "", cpp)


def header_comments(text):
    """The comment lines of a C++ header, with their line numbers; the code lines left blank."""
    out = []
    for line in text.split("\n"):
        at = line.find("//")
        out.append(line[at + 2:] if at >= 0 else "")
    return "\n".join(out)


def headings(markdown):
    """GitHub's anchors of a Markdown file's headings (a repeated heading gets -1, -2, ...)."""
    seen, out, titles = {}, set(), []
    fence = False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            fence = not fence
        if fence or not re.match(r"#{1,6} ", line):
            continue
        title = line.lstrip("#").strip()
        titles.append(title)
        anchor = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(anchor, 0)
        seen[anchor] = n + 1
        out.add(anchor if n == 0 else f"{anchor}-{n}")
    return out, titles


def sections(markdown):
    """(title, text) for each heading of a Markdown file."""
    parts = re.split(r"\n(?=#{1,6} )", "\n" + markdown)
    out = []
    for part in parts:
        part = part.strip("\n")
        if re.match(r"#{1,6} ", part):
            title, _, body = part.partition("\n")
            out.append((title.lstrip("#").strip(), body))
    return out


def paragraphs(text, yaml=False):
    """(first line number, paragraph) of a text, paragraphs split at blank lines (in YAML also at each key,
    so that each question's explanation, hint and option is a paragraph of its own)."""
    out, start, lines = [], 1, []
    for n, line in enumerate(text.split("\n"), 1):
        if yaml and lines and re.match(r"\s*(- )?[\w-]+:( |$)", line):
            out.append((start, "\n".join(lines)))
            lines = []
        if line.strip():
            if not lines:
                start = n
            lines.append(line)
        elif lines:
            out.append((start, "\n".join(lines)))
            lines = []
    if lines:
        out.append((start, "\n".join(lines)))
    return out


def spans(text):
    """(line, backticked span) of a text, code blocks' lines included as spans."""
    out = []
    fence = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            out.append((n, line.strip()))
            continue
        for m in re.finditer(r"`([^`]+)`", line):
            out.append((n, m.group(1)))
    return out


def looks_like_path(span):
    if " " in span or span.startswith(("-", "http", "#", "{", "<")) or "::" in span or "(" in span:
        return False
    if not re.fullmatch(r"[\w.~$/{}*<>+:-]+", span):
        return False
    # A file name with an extension, a folder (ending in /), or a path under one of the project's folders.
    return re.search(r"\.(cpp|h|md|yaml|py|cmake|sh|json|txt|in|hxx|gch|pt)$", span) is not None or \
        span.endswith("/") or re.match(r"(src|labs|tests|scripts|cmake|build[\w-]*|\.ci)/", span) is not None


def check_path(root, doc, n, span, found, code):
    if span.startswith(EXTERNAL_HEADERS):
        return
    if span.startswith("tests/") and span[len("tests/"):] in code.cmake_names:
        return  # a test executable the build makes (tests/unit_tests)
    if any(c in span for c in "*<>{}") or "..." in span or span.startswith(MADE_PATHS) or "NN" in span:
        if span.startswith("build/bin/"):
            name = span[len("build/bin/"):]
            if not any(c in name for c in "*<>{}") and "NN" not in name and name not in code.executables:
                found.add(f"{doc}:{n}", f"`{span}` names no executable the build makes")
        return
    base = os.path.dirname(os.path.join(root, doc))
    candidates = [os.path.join(root, b, span) for b in PATH_BASES] + [os.path.join(base, span)]
    if not any(os.path.exists(c) for c in candidates):
        # A bare file name: somewhere in the project (test_clip.cpp), or one the code makes (progress.json).
        if "/" not in span and (any(p.endswith("/" + span) for p in code.all_files) or span in code.text):
            return
        found.add(f"{doc}:{n}", f"`{span}` names no file or folder of the project")


def check_links(root, doc, text, found, anchors_of):
    for n, line in enumerate(text.split("\n"), 1):
        for m in re.finditer(r"\]\(([^)\s]+)\)", line):
            target = m.group(1)
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(os.path.join(root, doc)), path)) if path \
                else os.path.join(root, doc)
            if not os.path.exists(full):
                found.add(f"{doc}:{n}", f"the link ({target}) names no file")
            elif anchor and full.endswith(".md") and anchor not in anchors_of(full):
                found.add(f"{doc}:{n}", f"the link ({target}) names no heading of {rel(root, full)}")


def check_spans(root, doc, text, found, code):
    for n, span in spans(text):
        words = span.split()
        command = os.path.basename(words[0]) if words else ""
        if looks_like_path(span):
            check_path(root, doc, n, span, found, code)
        for m in re.finditer(r"(?<![\w-])(amp_lab(?:::|_)[A-Za-z0-9_]+)", span):
            name = m.group(1)
            if name not in code.cmake_names and not code.has_word(name):
                found.add(f"{doc}:{n}", f"`{name}` is no CMake target, function, option or variable of the project")
        if command in EXTERNAL_COMMANDS or (len(words) > 1 and words[0] == "CI=true" and words[1] == "bash"):
            continue
        # A command after a variable assignment (RANK=0 ... build/bin/lab13...) is amp-lab's if it is one of
        # its scripts or executables; any other first word's options are not looked up.
        first = next((w for w in words if "=" not in w or w.startswith("-")), "")
        if first and not first.startswith("-") and not re.search(r"(scripts/|build/bin/|amp-lab|lab\d\d_)", first):
            continue
        for m in re.finditer(r"(?<![\w-])--([a-z][a-z0-9-]*)", span):
            if not code.defines_option(m.group(1)):
                found.add(f"{doc}:{n}", f"`--{m.group(1)}` is no option amp-lab's code defines")


def check_variables(doc, text, found, code):
    for n, line in enumerate(text.split("\n"), 1):
        for m in re.finditer(r"\b((?:AMP_LAB|XDG)_[A-Z0-9_]*[A-Z0-9])\b", line):
            if not code.has_word(m.group(1)):
                found.add(f"{doc}:{n}", f"{m.group(1)} is read or set nowhere in the code")


def check_amp_names(doc, text, found, code):
    for n, line in enumerate(text.split("\n"), 1):
        for m in re.finditer(r"\bamp::((?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)", line):
            for part in m.group(1).split("::"):
                if part not in code.amp_words:
                    found.add(f"{doc}:{n}", f"amp::{m.group(1)}: src/amp declares no {part}")
                    break


def check_sections(root, doc, text, found, titles_of):
    for n, line in enumerate(text.split("\n"), 1):
        for m in re.finditer(r"\b([A-Z]+\.md)(?:'s)?,? \"([^\"]+)\"", line):
            target = os.path.join(root, m.group(1))
            if not os.path.exists(target):
                found.add(f"{doc}:{n}", f"{m.group(1)} does not exist")
            elif not any(t == m.group(2) or t.startswith(m.group(2)) for t in titles_of(target)):
                found.add(f"{doc}:{n}", f"{m.group(1)} has no section \"{m.group(2)}\"")


def check_external(doc, text, found):
    """A name attributed to torchao or Transformer Engine is one their sources have."""
    flat = re.sub(r"\s+", " ", text)
    for project, names in EXTERNAL_NAMES.items():
        key = r"\btorchao\b" if project == "torchao" else r"\b(?:Transformer Engine|TE)\b"
        # torchao.optim.X, torchao/optim/x.py
        if project == "torchao":
            for m in re.finditer(r"\btorchao(?:[./][\w]+)+", flat):
                name = m.group(0).rstrip(".")
                parts = re.split(r"(?<=\w)\.(?=_?[A-Z])", name)  # torchao.optim._AdamW -> module, class
                if name not in names and parts[0] not in names and not name.endswith(".py") and \
                        not any(name.startswith(x) for x in names if "/" in x or "." in x and x != name):
                    found.add(doc, f"{name}: not a torchao name this test knows from torchao's sources")
                if len(parts) > 1 and parts[1] not in names:
                    found.add(doc, f"{name}: torchao has no {parts[1]} (its sources have {sorted(n for n in names if n[0] in '_A')})")
        # "torchao's X(", "torchao.optim's X(", "torchao `X(", "Transformer Engine's X"
        for sentence in re.split(r"(?<=[.;])\s", flat):
            if not re.search(key, sentence):
                continue
            for m in re.finditer(r"(?<![\w.:])(_?[A-Z][A-Za-z0-9_]*|_[a-z][a-z0-9_]*)\(", sentence):
                if m.group(1) not in names:
                    found.add(doc, f"{m.group(1)}(...) beside {project}: not a name of {project}'s sources "
                                   f"(known: {', '.join(sorted(n for n in names if n[0] in '_ADFMN'))})")
            if project != "torchao":
                for m in re.finditer(r"\b([A-Z][A-Za-z0-9]*Scaling)\b", sentence):
                    if m.group(1) not in names:
                        found.add(doc, f"{m.group(1)} beside {project}: no such recipe in its sources")


LAB_LIST = r"\blabs?\s+((?:\d{2})(?:\s*-\s*\d{2})?(?:(?:,\s*|\s+and\s+|\s+or\s+)\d{2}(?:\s*-\s*\d{2})?)*)"


def lab_numbers(text):
    out = set()
    for m in re.finditer(LAB_LIST, text, re.IGNORECASE):
        for part in re.split(r",\s*|\s+and\s+|\s+or\s+", m.group(1)):
            a, _, b = part.partition("-")
            out |= set(range(int(a), int(b or a) + 1))
    return out


def check_dtype(doc, text, found, code):
    """In a sentence that names --dtype, each clause that names labs names labs that take it, or says they
    refuse it."""
    takers = {number for number, _, takes in code.labs if takes}
    for start, para in paragraphs(text, yaml=doc.endswith(".yaml")):
        flat = re.sub(r"\s+", " ", para)
        for sentence in re.split(r"(?<=\.)\s", flat):
            if "--dtype" not in sentence:
                continue
            for clause in re.split(r"(?<=;)\s", sentence):
                named = lab_numbers(clause)
                if not named:
                    continue
                refusing = re.search(r"refuse|does not apply|do not take|not take", clause)
                wrong = named & takers if refusing else named - takers
                if wrong:
                    which = "take it" if refusing else "refuse it"
                    found.add(f"{doc}:{start}", f"--dtype: labs {sorted(wrong)} {which} (labs/catalog.cpp), but: "
                                                 f"\"{clause[:160]}\"")


def check_machines(doc, text, found):
    for start, para in paragraphs(text, yaml=doc.endswith(".yaml")):
        if "AMD EPYC" in para and not re.search(r"family\s+\d+|family\s+(?:was\s+|were\s+)?not\s+recorded", para):
            flat = re.sub(r"\s+", " ", para)
            at = flat.index("AMD EPYC")
            found.add(f"{doc}:{start}", "names an AMD EPYC without its family (lscpu) or saying it was not "
                      f"recorded: \"...{flat[max(0, at - 70):at + 70]}...\"")


def check_lists(root, docs, found, code):
    headers = sorted(f for f in os.listdir(os.path.join(root, "src/amp")) if f.endswith(".h"))
    for doc in ("CONTRIBUTING.md", "src/amp/README.md"):
        text = docs.get(doc, "")
        for h in headers:
            if h not in text:
                found.add(doc, f"does not name src/amp/{h} among the amp library's headers")
    tests = sorted(f for f in os.listdir(os.path.join(root, "tests"))
                   if os.path.isfile(os.path.join(root, "tests", f)) and f.endswith((".cpp", ".sh", ".cmake", ".py"))
                   and not f.endswith(".h") and f != "CMakeLists.txt")
    text = docs.get("TESTING.md", "")
    ranges = re.findall(r"`(lab\d\d_\w+_test\.cpp)` \.\.\. `(lab\d\d_\w+_test\.cpp)`", text)
    for t in tests:
        if t in text:
            continue
        covered = any(a <= t <= b for a, b in ranges) and t.startswith("lab")
        if not covered:
            found.add("TESTING.md", f"does not name tests/{t}")
    # README's quiz row lists the tracks `--track` takes: every track of quiz.yaml, each once (frontier was
    # once missing there).
    quiz = read(os.path.join(root, "quiz.yaml"))
    tracks = re.findall(r"^  - id: ([\w-]+)$", quiz.split("\nquestions:", 1)[0], re.MULTILINE)
    listed = re.search(r"--track ([\w-]+(?:\\\|[\w-]+)+)", docs.get("README.md", ""))
    named = listed.group(1).replace("\\", "").split("|") if listed else []
    for track in tracks:
        if track not in named:
            found.add("README.md", f"the --track list leaves out the track {track} of quiz.yaml")
    for doc, text in docs.items():
        for title, body in sections(text):
            if re.search(r"\b(each|every) lab\b", title, re.IGNORECASE):
                for number, lab_id, _ in code.labs:
                    exe = f"lab{number:02d}_{lab_id.replace('-', '_')}"
                    if exe not in body and f"{number:02d} {lab_id}" not in body and f"`{lab_id}`" not in body:
                        found.add(doc, f"section \"{title}\" leaves out lab {number:02d} {lab_id}")


# Claims of meaning: a sentence whose truth rests on a condition of the code or of a cited source, and which
# was written once without it. Each entry: where it is looked for, what makes a paragraph such a claim, what
# the paragraph must then also say, and why. Each catches a sentence that was once in these docs.
CLAIMS = (
    # src/amp/clip.cpp leaves the gradients untouched for an inf or NaN norm, where clip_grad_norm_ scales
    # them by 0: the two agree for a finite norm only.
    ("src/amp/README.md", r"no\s+group", r"clip_grad_norm_`", r"\bfinite\b",
     "says clip_grad_norm_sharded with no group is clip_grad_norm_ without \"for a finite norm\" (an inf norm "
     "differs: src/amp/clip.cpp)"),
    # A stochastic-rounding update makes fp32 and int32 temporaries: the bytes a weight costs are those kept
    # between steps (lab 17 counts them after the last step), not the memory of an update.
    ("", r"[Ss]tochastic", r"\bat \d+(?:\.\d+)? B\b|\b\d+(?:\.\d+)? B (?:per|a) (?:weight|parameter)|\bbytes per (?:weight|parameter)\b",
     r"after the last step|between steps|during (?:a |the )?step|\bkept\b|during step\(\)",
     "gives stochastic rounding's bytes per weight without saying they are those kept between steps (an "
     "update makes fp32 and int32 temporaries)"),
    # The H200 record: only PyTorch's version is known; the driver, clocks and host were not recorded.
    ("BENCHMARKS.md", r"### The H200 run", r"", r"were not recorded",
     "gives the H200 run without saying what of its set-up was not recorded (driver, clocks, host)"),
    # Lab executables link lab_NN_amp, amp.cpp compiled at the labs' profile (cmake/AmpLabTargets.cmake); a
    # learner's -O0 unit is built only for a check.
    ("", r"linked from[^.]*-O0|-O0[^.]*units?\)?[^.]*link(?:ed|s) the lab", r"", None,
     "says a lab's executable is linked from -O0 exercise units; it links amp.cpp at the labs' profile "
     "(cmake/AmpLabTargets.cmake)"),
    # Lab 14's toy outcome of delayed against current scaling stands beside a practice that went the other
    # way (torchao removed delayed scaling): a text reporting the outcome cites that practice.
    ("quiz.yaml labs/README.md README.md", r"\bdelayed\b[^|]*\bloss|\bloss[^|]*\bdelayed\b", r"\bcurrent\b[^.]*\bdelayed\b|\bdelayed\b[^.]*\bcurrent\b",
     r"pytorch/ao #1680|pytorch/ao #1753|pytorch/ao#1680",
     "compares delayed and current FP8 scaling without the practice (torchao removed delayed scaling: "
     "pytorch/ao #1680, #1753)"),
)


def check_claims(doc, text, found):
    for where, first, second, needs, why in CLAIMS:
        if where and doc not in where.split():
            continue
        if where == "BENCHMARKS.md" and first.startswith("###"):
            for title, body in sections(text):
                if re.match(first.lstrip("# "), title) and not re.search(needs, body):
                    found.add(doc, f"section \"{title}\" {why}")
            continue
        for start, para in paragraphs(text, yaml=doc.endswith(".yaml")):
            # A claim and its condition are one sentence (or one clause between semicolons).
            for sentence in re.split(r"(?<=[.;])\s+", re.sub(r"\s+", " ", para)):
                if not re.search(first, sentence) or (second and not re.search(second, sentence)):
                    continue
                # The practice beside lab 14's outcome is a sentence of its own: looked for in the paragraph.
                context = re.sub(r"\s+", " ", para) if "delayed" in first else sentence
                if needs is None or not re.search(needs, context):
                    found.add(f"{doc}:{start}", why)


def main(root):
    root = os.path.abspath(root)
    code = Code(root)
    found = Findings()
    docs = {rel(root, p): read(p) for p in walk(root, lambda p: p.endswith(".md"))}
    yamls = {rel(root, p): read(p) for p in walk(root, lambda p: p.endswith(".yaml") and "/tests/" not in p)}
    amp_headers = {rel(root, p): header_comments(read(p))
                   for p in walk(os.path.join(root, "src/amp"), lambda p: p.endswith(".h") and "/detail/" not in p)}
    anchor_cache, title_cache = {}, {}

    def anchors_of(path):
        if path not in anchor_cache:
            anchor_cache[path], title_cache[path] = headings(read(path))
        return anchor_cache[path]

    def titles_of(path):
        anchors_of(path)
        return title_cache[path]

    # CHANGELOG.md records what each version changed, names since gone among them: only its links are held.
    changelog = {d: docs.pop(d) for d in list(docs) if os.path.basename(d) == "CHANGELOG.md"}
    for doc, text in changelog.items():
        check_links(root, doc, text, found, anchors_of)
    for doc, text in docs.items():
        check_links(root, doc, text, found, anchors_of)
        check_spans(root, doc, text, found, code)
    for doc, text in list(yamls.items()) + list(amp_headers.items()):
        check_spans(root, doc, text, found, code)
    for doc, text in list(docs.items()) + list(yamls.items()) + list(amp_headers.items()):
        check_variables(doc, text, found, code)
        check_amp_names(doc, text, found, code)
        check_external(doc, text, found)
        check_dtype(doc, text, found, code)
        check_machines(doc, text, found)
        check_claims(doc, text, found)
        check_sections(root, doc, text, found, titles_of)
    # Code comments point at sections of the docs too ("BENCHMARKS.md, \"Cold build\"").
    for path, text in code.files.items():
        if ".md" in text:
            check_sections(root, path, text, found, titles_of)
    check_lists(root, docs, found, code)
    for item in found.items:
        print(item)
    checked = len(docs) + len(changelog) + len(yamls) + len(amp_headers)
    if found.items:
        print(f"docs drift: {len(found.items)} finding(s) in {checked} files")
        return 1
    print(f"docs drift: none in {checked} files ({len(docs) + len(changelog)} Markdown, {len(yamls)} YAML, "
          f"{len(amp_headers)} amp headers)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: docs_drift_test.py ROOT", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
