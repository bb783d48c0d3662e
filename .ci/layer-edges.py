#!/usr/bin/env python3
"""Type references between the folders of Sources/Lade (one Swift module, so an "edge" is a use,
in one folder, of a type or top-level function declared in another).

Usage: .ci/layer-edges.py [SOURCES_DIR] [--names] [--check]
  (default Sources/Lade; --names lists the names per edge; --check exits 1 on a cycle, a
  forbidden edge or an edge up the layer order)
The layers, lowest first (an edge may only point down): Support, Model, Predicate, Stores,
Coordinator, Context, Migration.
Comments and string literals are ignored. Declarations counted: top-level class/struct/enum/
protocol/actor/typealias/func (indent 0). Folders: the first path component under SOURCES_DIR.
"""
import os, re, sys
from collections import defaultdict

args = [a for a in sys.argv[1:] if not a.startswith("--")]
root = args[0] if args else "Sources/Lade"
show_names = "--names" in sys.argv
check = "--check" in sys.argv
LAYERS = ["Support", "Model", "Predicate", "Stores", "Coordinator", "Context", "Migration"]

def strip(text):
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i); i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i): depth += 1; i += 2
                elif text.startswith("*/", i): depth -= 1; i += 2
                else: i += 1
        elif text.startswith('"""', i):
            j = text.find('"""', i + 3); i = n if j < 0 else j + 3; out.append('""')
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1; out.append('""')
        else:
            out.append(text[i]); i += 1
    return "".join(out)

decl = re.compile(r"^(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private|final|open|indirect|nonisolated|static)\s+)*"
                  r"(?:class|struct|enum|protocol|actor|typealias|func)\s+([A-Za-z_]\w*)", re.M)
files = {}
for d, _, fs in os.walk(root):
    for f in fs:
        if f.endswith(".swift"):
            p = os.path.join(d, f)
            files[p] = strip(open(p, encoding="utf-8").read())

def folder(p):
    return os.path.relpath(p, root).split(os.sep)[0]

owner = {}
for p, t in files.items():
    for m in decl.finditer(t):
        name = m.group(1)
        if name in owner and owner[name] != folder(p):
            owner[name] = None  # declared in two folders: ambiguous, not counted
        elif name not in owner:
            owner[name] = folder(p)

edges = defaultdict(lambda: defaultdict(set))  # (a, b) -> name -> files
ident = re.compile(r"\b[A-Za-z_]\w*\b")
for p, t in files.items():
    a = folder(p)
    for tok in set(ident.findall(t)):
        b = owner.get(tok)
        if b and b != a:
            edges[(a, b)][tok].add(os.path.relpath(p, root))

folders = sorted({folder(p) for p in files})
print("edges (from -> to: names used, files using them)")
for (a, b) in sorted(edges):
    names = edges[(a, b)]
    nfiles = len(set().union(*names.values()))
    line = f"  {a:12s} -> {b:12s} {len(names):3d} names in {nfiles:3d} files"
    if show_names or (a, b) in {("Stores", "Context"), ("Stores", "Coordinator"), ("Predicate", "Stores"),
                               ("Stores", "Migration"), ("Coordinator", "Migration"), ("Migration", "Coordinator")}:
        line += ": " + ", ".join(f"{n}" for n in sorted(names))
    print(line)

# cycles: strongly connected components of the folder graph (Tarjan)
graph = defaultdict(set)
for (a, b) in edges: graph[a].add(b)
index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
def visit(v):
    index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
    for w in graph[v]:
        if w not in index: visit(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        comps.append(sorted(comp))
for v in folders:
    if v not in index: visit(v)
cycles = [c for c in comps if len(c) > 1]
print("cycles (folders that reach each other):", "; ".join(" <-> ".join(c) for c in cycles) if cycles else "none")
forbidden = [f"{a}->{b}" for a, b in [("Stores", "Context"), ("Stores", "Coordinator"), ("Stores", "Migration"),
                                       ("Predicate", "Stores")] if (a, b) in edges]
print("forbidden:", ", ".join(forbidden) or "none")
upward = [f"{a}->{b}" for a, b in sorted(edges) if a in LAYERS and b in LAYERS and LAYERS.index(b) > LAYERS.index(a)]
print("against the layer order (" + " < ".join(LAYERS) + "):", ", ".join(upward) or "none")
if check and (cycles or forbidden or upward):
    sys.exit(1)
