#!/usr/bin/env python3
"""show_refs.py - prints every file:line reference of the Promela models
(model/*.pml) beside the C lines it names, and checks that each still names
what the model step does.

    model/show_refs.py [--check | --fix] [model.pml ...] [src-dir ...]

The models name the sources by bare file name, found in src/core/ (or in
the src-dirs given).  A reference is

    file.c:A          one line
    file.c:A-B        lines A to B
    file.c:A,C-D      several parts
    file.c@COMMIT:A   a line of the file at a past commit (code the model
                      keeps as a variant or a planted bug), read with git

and it is followed by its anchor (on the same line, or first on the next
line of the comment): the word right after it, a C identifier such as the
function the step models (wait.c:268 abar_test), or a C fragment in
backquotes (wait.c:17 `t.raw < cur`).  The rule, for every reference:

  - the file exists and every line named is within it, the first and the
    last line of a range not blank;
  - the anchor occurs in every part (a word as a whole word; a fragment
    with its white space taken as any white space, and a part's lines
    read as one);
  - where a range holds the definition of the function its anchor names
    (the name followed by `(` on a line at file scope), the range starts
    there and ends at that function's closing brace.

So a reference whose lines moved (the C edited above it) names lines that
no longer hold its anchor, and the check fails; a range that no longer
covers its function fails too.  A reference pinned to a commit is checked
where git has that commit, and noted as unchecked otherwise.

With --fix a failing reference is moved where the edit of its file since
HEAD moved its lines (git diff; the references passed at HEAD), or failing
that to the nearest lines (within 80) where it passes, the part shifted as
a whole and a function's range refitted to the function, and the model
files are rewritten; read the diff: a move cannot know the step still
models that C.

Without --check every reference is printed with its lines and problems are
marked `!!`; with --check only the problems are printed.  Either way the
exit status is 1 if any reference fails (or none is found), else 0."""
import glob
import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(here, ".."))
args = sys.argv[1:]
check = "--check" in args
fix = "--fix" in args
args = [a for a in args if a not in ("--check", "--fix")]
pmls = [a for a in args if a.endswith(".pml")]
dirs = [a for a in args if not a.endswith(".pml")]
pmls = pmls or sorted(glob.glob(os.path.join(here, "*.pml")))
dirs = dirs or [os.path.join(root, "src", "core"), os.path.join(root, "src")]

ref = re.compile(r"(?<![\w@/.])([A-Za-z_][A-Za-z0-9_]*\.[ch])(?:@([0-9a-f]{7,40}))?"
                 r":(\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)")
# the anchor: after blanks, or at the start of the next line of a comment
anchor_re = re.compile(r"(?:[ \t]+|[ \t]*\n[ \t]*\*[ \t]+)(?:`([^`\n]+)`|([A-Za-z_][A-Za-z0-9_]*))")
cache = {}
maps = {}
nrefs = nbad = nunchecked = nfixed = 0


def source(name, commit):
    key = (name, commit)
    if key not in cache:
        cache[key] = None
        if commit is None:
            for d in dirs:
                p = os.path.join(d, name)
                if os.path.isfile(p):
                    with open(p, encoding="utf-8") as f:
                        cache[key] = f.read().split("\n")
                    break
        else:
            for sub in ("src/core/", "src/"):
                try:
                    out = subprocess.run(["git", "-C", root, "show", f"{commit}:{sub}{name}"],
                                         capture_output=True, check=True)
                except (OSError, subprocess.CalledProcessError):
                    continue
                cache[key] = out.stdout.decode("utf-8", "replace").split("\n")
                break
    return cache[key]


def has_anchor(text, word, frag):
    if word is not None:
        return re.search(r"(?<![A-Za-z0-9_])" + re.escape(word) + r"(?![A-Za-z0-9_])", text) is not None
    pat = r"\s*".join(re.escape(t) for t in frag.split())
    return re.search(pat, text) is not None


def function_end(text, a, word):
    """The line of the closing brace of the function whose definition starts
    at line a with name `word`, or None if line a is no such definition."""
    first = text[a - 1]
    if not first or first[0] in " \t#/*}" or not re.search(r"\b" + re.escape(word) + r"\s*\(", first):
        return None
    for k in range(a, len(text) + 1):
        line = text[k - 1]
        if line.rstrip().endswith(";") and k == a:
            return None  # a declaration
        if line.rstrip() == "}":
            return k
    return None


def report(where, msg):
    global nbad
    nbad += 1
    print(f"{where}\n  !! {msg}")


def part_problems(name, text, a, b, word, frag):
    """What is wrong with lines a..b of `text` as the reference's part."""
    if a < 1 or b < a or b > len(text):
        return [f"not within its {len(text)} lines"]
    out = []
    if not text[a - 1].strip() or not text[b - 1].strip():
        out.append("a range must start and end on a line of code")
    if word is None and frag is None:
        return out
    if not has_anchor("\n".join(text[a - 1:b]), word, frag):
        return out + [f"`{word or frag}` is not in these lines"]
    if word is not None and b > a:
        defs = [k for k in range(a, b + 1) if function_end(text, k, word)]
        if defs and defs[0] != a:
            out.append(f"{word} is defined at line {defs[0]}")
        elif defs and function_end(text, a, word) != b:
            out.append(f"{word} runs from {a} to {function_end(text, a, word)}")
    return out


def line_map(name):
    """Old line -> new line for the source `name` from `git diff -U0 HEAD`
    (the references passed at HEAD: CI checks them), None for a line the
    diff changed; {} where git has no such diff."""
    if name in maps:
        return maps[name]
    maps[name] = {}
    for sub in ("src/core/", "src/"):
        if not os.path.isfile(os.path.join(root, sub, name)):
            continue
        try:
            out = subprocess.run(["git", "-C", root, "diff", "-U0", "HEAD", "--", sub + name],
                                 capture_output=True, check=True).stdout.decode("utf-8", "replace")
        except (OSError, subprocess.CalledProcessError):
            return maps[name]
        hunks = [tuple(int(x or 1) for x in h) for h in
                 re.findall(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", out, re.M)]
        maps[name] = hunks
        break
    return maps[name]


def mapped(name, line):
    hunks = line_map(name)
    if not hunks:
        return None
    shift = 0
    for a, b, c, d in hunks:
        if b == 0:      # pure insertion after old line a
            if line > a:
                shift += d
            continue
        if line < a:
            break
        if line < a + b:
            return None  # a line the edit changed
        shift += d - b
    return line + shift


def relocate(name, text, a, b, word, frag):
    """Where the edit since HEAD moved lines a..b (git diff), if they pass
    there; else the nearest lines (a', b') that pass, the part moved as a
    whole (a function's range refitted to the function), or None within 80
    lines."""
    ma, mb = mapped(name, a), mapped(name, b)
    if ma and mb:
        if word is not None and mb > ma and function_end(text, ma, word):
            mb = function_end(text, ma, word)
        if not part_problems(name, text, ma, mb, word, frag):
            return ma, mb
    for d in sorted(range(-80, 81), key=abs):
        na, nb = a + d, b + d
        if word is not None and b > a and 1 <= na <= len(text) and function_end(text, na, word):
            nb = function_end(text, na, word)
        if not part_problems(name, text, na, nb, word, frag):
            return na, nb
    return None


lines_out = {}
for pml in pmls:
    base = os.path.basename(pml)
    with open(pml, encoding="utf-8") as f:
        whole = f.read()
    out = lines_out.setdefault(pml, whole.split("\n"))
    start = 0
    for no, line in enumerate(whole.split("\n"), 1):
        start, line_start = start + len(line) + 1, start
        for m in ref.finditer(line):
            nrefs += 1
            name, commit, spec = m.group(1), m.group(2), m.group(3)
            am = anchor_re.match(whole, line_start + m.end())
            frag, word = (am.group(1), am.group(2)) if am else (None, None)
            shown = m.group(0) + (" " + (word or "`" + frag + "`") if am else "")
            where = f"{base}:{no}: {shown}    | {line.strip()[:90]}"
            if not check and not fix:
                print(where)
            text = source(name, commit)
            if text is None:
                if commit is not None:
                    nunchecked += 1
                    if not check and not fix:
                        print(f"  (not checked: {name} at {commit} not in this git history)")
                    continue
                report(where, f"{name}: not found under {dirs}")
                continue
            if am is None:
                report(where, "no anchor: the reference must be followed by a word or a `fragment` "
                              "from the lines it names")
            parts = []
            for part in spec.split(","):
                a, _, b = part.partition("-")
                a, b = int(a), int(b or a)
                if not check and not fix and 1 <= a <= b <= len(text):
                    for k in range(a, min(b, a + 2) + 1):
                        print(f"    {k:4}: {text[k - 1].strip()[:100]}")
                    if b > a + 2:
                        print(f"    ...  {b:4}: {text[b - 1].strip()[:100]}")
                bad = part_problems(name, text, a, b, word, frag)
                moved = relocate(name, text, a, b, word, frag) if bad and fix and commit is None else None
                if moved:
                    a, b = moved
                    nfixed += 1
                else:
                    for msg in bad:
                        report(where, f"{name}:{part}: {msg}")
                parts.append(f"{a}" if a == b else f"{a}-{b}")
            new = m.group(0)[: -len(spec)] + ",".join(parts)
            if fix and new != m.group(0):
                out[no - 1] = out[no - 1].replace(m.group(0), new, 1)

if fix:
    for pml, out in lines_out.items():
        with open(pml, "w", encoding="utf-8") as f:
            f.write("\n".join(out))

if nrefs == 0:
    print("!! no references found (in " + ", ".join(pmls) + ")")
    nbad += 1
summary = f"show_refs: {nrefs} references, {nbad} problems"
if fix:
    summary += f", {nfixed} moved (where git diff moved their lines, else to the nearest that hold their anchor)"
if nunchecked:
    summary += f", {nunchecked} pinned to commits not checked (no git history)"
print(summary)
sys.exit(1 if nbad else 0)
