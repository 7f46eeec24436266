#!/usr/bin/env python3
"""show_refs.py - prints every file:line annotation of model/abar.pml beside
the C lines it names, for a reader to check against the model step (run it
after the core changes; the model names the sources by bare file name, found
under src/ or src/core/).

    model/show_refs.py [abar.pml] [src-dir...]

Exits 1 if an annotation names a file that is not found or a line past its
end (a stale reference); whether a line still says what the step does is
for the reader to judge."""
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
pml = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "abar.pml")
dirs = sys.argv[2:] or [os.path.join(here, "..", "src"), os.path.join(here, "..", "src", "core")]
ref = re.compile(r"\b([a-z_]+\.[ch]):(\d+(?:[-,]\d+)*)(?: and (\d+(?:-\d+)?))?")
cache, bad = {}, 0


def source(name):
    if name not in cache:
        cache[name] = None
        for d in dirs:
            p = os.path.join(d, name)
            if os.path.exists(p):
                with open(p, encoding="utf-8") as f:
                    cache[name] = f.read().split("\n")
                break
    return cache[name]


for no, line in enumerate(open(pml, encoding="utf-8"), 1):
    for m in ref.finditer(line):
        name, spec = m.group(1), m.group(2) + ("," + m.group(3) if m.group(3) else "")
        text = source(name)
        print(f"{os.path.basename(pml)}:{no}: {m.group(0)}    | {line.strip()[:90]}")
        if text is None:
            print(f"  !! {name}: not found under {dirs}")
            bad += 1
            continue
        for part in spec.split(","):
            a, _, b = part.partition("-")
            a, b = int(a), int(b or a)
            if b > len(text) or a < 1 or a > b:
                print(f"  !! {name}:{part}: past the end ({len(text)} lines)")
                bad += 1
                continue
            for k in range(a, min(b, a + 2) + 1):
                print(f"    {k:4}: {text[k - 1].strip()[:100]}")
            if b > a + 2:
                print(f"    ...  {b:4}: {text[b - 1].strip()[:100]}")
sys.exit(1 if bad else 0)
