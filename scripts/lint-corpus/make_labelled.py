#!/usr/bin/env python3
"""Write the labelled tools `toolscore lint --judge P --measure` measures a judge on, from the
lint corpora under tests/data/lint/, into datasets/lint-labelled/.

Usage: python3 scripts/lint-corpus/make_labelled.py tests/data/lint datasets/lint-labelled

One JSON object per line: {"set", "tool", "poisoned", "class", "placement"}. `tool` is the
tool exactly as its corpus file holds it (MCP or OpenAI shape); `class` and `placement` are
the labels the corpus gives it, in one vocabulary across sets (below), or null where the corpus
gives none. Benign tools carry only "poisoned": false. Deterministic: the same bytes every run.

Where the labels come from:
- adversarial/<technique>.json: the class is the file's technique; the placement is where
  make_adversarial.py put the payload (its PLACED table). holdout.json mixes techniques: its
  class is null.
- adversarial/holdout-2026-12-04.json: the class and placement named by each tool's comment in
  make_holdout_2026_12_04.py (keywords below); a comment that names neither leaves it null.
- adversarial-blind/ and adversarial-sealed/: each README's table of tools (the primary class
  and "where the payload sits").
- benign/: every tool, poisoned false.
"""

import gzip
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_adversarial  # noqa: E402

# One placement vocabulary for every set: the field of the tool the payload sits in.
PLACEMENTS = [
    "description",
    "property description",
    "enum value",
    "default",
    "examples",
    "title",
    "nested object property",
    "property name",
    "tool name",
    "output schema",
    "split across fields",
]

TECHNIQUE_CLASS = {
    "instructions.json": "instruction-override",
    "hidden-unicode.json": "hidden-unicode",
    "homoglyphs.json": "homoglyphs",
    "directive-tags.json": "directive-tags",
    "exfiltration.json": "exfiltration",
    "secrets.json": "credential-harvesting",
    "shadowing.json": "shadowing",
    "obfuscated.json": "obfuscated",
    "holdout.json": None,
}

ADVERSARIAL_PLACEMENT = {
    "description": "description",
    "property": "property description",
    "enum": "enum value",
    "default": "default",
    "examples": "examples",
    "name": "tool name",
}

# The blind set's primary classes, by number (its README's class table).
BLIND_CLASS = {
    1: "concealment",
    2: "misreporting",
    3: "shadowing",
    4: "exfiltration",
    5: "credential-harvesting",
    6: "hijack",
    7: "authority",
    8: "parameter-tampering",
}

SEALED_CLASS = {
    "concealment": "concealment",
    "misreporting": "misreporting",
    "cross-tool": "shadowing",
    "exfiltration": "exfiltration",
    "credential-harvest": "credential-harvesting",
    "hijack/sabotage": "hijack",
    "authority/urgency": "authority",
    "param-tampering": "parameter-tampering",
}

# Keywords of make_holdout_2026_12_04.py's comments, first match wins.
HOLDOUT_CLASS_WORDS = [
    ("conceal", "concealment"),
    ("silent", "concealment"),
    ("misreport", "misreporting"),
    ("cross-tool", "shadowing"),
    ("shadowing", "shadowing"),
    ("credential", "credential-harvesting"),
    ("secret", "credential-harvesting"),
    ("wallet", "credential-harvesting"),
    ("mcp config", "credential-harvesting"),
    ("exfil", "exfiltration"),
    ("bcc", "exfiltration"),
    ("authority", "authority"),
    ("impersonating", "authority"),
    ("redirection", "parameter-tampering"),
    ("role change", "hijack"),
    ("tool-choice hijack", "shadowing"),
    ("no confirmation", "hijack"),
]
HOLDOUT_PLACEMENT_WORDS = [
    ("nested property", "nested object property"),
    ("property name", "property name"),
    ("tool name", "tool name"),
    ("in enum", "enum value"),
    ("in default", "default"),
    ("in examples", "examples"),
    ("in property", "property description"),
    ("param description", "property description"),
]


def placement_of(where):
    """A README's "where the payload sits" in the one vocabulary."""
    w = where.replace("`", "").strip().lower()
    if w.startswith("split"):
        return "split across fields"
    if w.startswith("outputschema"):
        return "output schema"
    if w.startswith("title"):
        return "title"
    if w.startswith("examples"):
        return "examples"
    for p in PLACEMENTS:
        if w.startswith(p):
            return p
    raise SystemExit(f"unknown placement: {where!r}")


def table_rows(readme, first_header):
    """The rows of the markdown table whose header starts with `first_header`."""
    rows, inside = [], False
    for line in open(readme, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith(first_header):
            inside = True
            continue
        if inside:
            if not line.startswith("|"):
                break
            if line.startswith("|---"):
                continue
            rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def tools_of(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["tools"]


def line(set_name, tool, cls=None, placement=None, poisoned=True):
    row = {"set": set_name, "tool": tool, "poisoned": poisoned}
    if poisoned:
        row["class"] = cls
        row["placement"] = placement
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


def adversarial(src):
    make_adversarial.build()
    placed = make_adversarial.PLACED
    out = []
    for fname, cls in TECHNIQUE_CLASS.items():
        for t in tools_of(os.path.join(src, "adversarial", fname)):
            where = placed[t["name"]]
            placement = ADVERSARIAL_PLACEMENT[where]
            if t["name"].startswith("update_profile_"):
                placement = "property name"
            out.append(line("adversarial", t, cls, placement))
    holdout = os.path.join(os.path.dirname(os.path.abspath(__file__)), "make_holdout_2026_12_04.py")
    comments = [m.group(1).lower() for m in re.finditer(r"^# \d+ (.*)$", open(holdout, encoding="utf-8").read(), re.M)]
    tools = tools_of(os.path.join(src, "adversarial", "holdout-2026-12-04.json"))
    assert len(comments) == len(tools), (len(comments), len(tools))
    for t, c in zip(tools, comments):
        cls = next((v for k, v in HOLDOUT_CLASS_WORDS if k in c), None)
        placement = next((v for k, v in HOLDOUT_PLACEMENT_WORDS if k in c), "description")
        out.append(line("adversarial", t, cls, placement))
    return out


def blind(src):
    by_name = {r[1]: r for r in table_rows(os.path.join(src, "adversarial-blind", "README.md"), "| # | name")}
    out = []
    for t in tools_of(os.path.join(src, "adversarial-blind", "holdout-2026-12-04b.json")):
        row = by_name[t["name"]]
        primary = int(re.match(r"\d+", row[2]).group(0))
        out.append(line("adversarial-blind", t, BLIND_CLASS[primary], placement_of(row[3])))
    return out


def sealed(src):
    by_name = {r[1].strip("`"): r for r in table_rows(os.path.join(src, "adversarial-sealed", "README.md"), "| # | name")}
    out = []
    for t in tools_of(os.path.join(src, "adversarial-sealed", "holdout-sealed-1.json")):
        row = by_name[t["name"]]
        out.append(line("adversarial-sealed", t, SEALED_CLASS[row[2]], placement_of(row[3])))
    return out


def benign_mcp(src):
    d = os.path.join(src, "benign", "mcp")
    return [line("benign-mcp", t, poisoned=False) for f in sorted(os.listdir(d)) for t in tools_of(os.path.join(d, f))]


def benign_bfcl(src):
    out = []
    for raw in open(os.path.join(src, "benign", "bfcl.jsonl"), encoding="utf-8"):
        for t in json.loads(raw)["tools"]:
            out.append(line("benign-bfcl", t, poisoned=False))
    return out


def main():
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    sets = {
        "adversarial.jsonl": adversarial(src),
        "adversarial-blind.jsonl": blind(src),
        "adversarial-sealed.jsonl": sealed(src),
        "benign-mcp.jsonl": benign_mcp(src),
        "benign-bfcl.jsonl.gz": benign_bfcl(src),
    }
    for fname, lines in sets.items():
        data = ("\n".join(lines) + "\n").encode("utf-8")
        path = os.path.join(dst, fname)
        if fname.endswith(".gz"):
            # mtime 0 and no file name: the same bytes every run.
            with open(path, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as g:
                g.write(data)
        else:
            with open(path, "wb") as f:
                f.write(data)
        print(f"{fname}: {len(lines)} tools", file=sys.stderr)


if __name__ == "__main__":
    main()
