#!/usr/bin/env python3
"""Convert the function docs of the PyPI package bfcl-eval (Berkeley Function Calling
Leaderboard, Apache-2.0) into tool catalogs for toolscore's lint benign corpus.

Usage:
    pip download --no-deps bfcl-eval==2026.3.23 -d /tmp/bfcl
    python3 scripts/lint-corpus/bfcl_to_catalogs.py /tmp/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl \
        > tests/data/lint/benign/bfcl.jsonl

Reads the wheel as a zip (nothing is installed or imported). Every test entry of
bfcl_eval/data/BFCL_v4_*.json carries the tool set a model was shown (`function`), and
bfcl_eval/data/multi_turn_func_doc/*.json lists the multi-turn APIs' tools. Output: one JSON line per
catalog, `{"source": FILE, "entry": ID, "tools": [...]}` (an object with `tools`, which
`toolscore lint` and `catalog::parse_catalog` read), OpenAI-style tools
`{"type": "function", "function": {name, description, parameters}}`.

Each distinct tool (same JSON) appears once: an entry keeps only the tools not already written,
and is skipped when none remain. Within an entry a repeated name keeps its first tool.

Types are mapped as BFCL itself maps them before sending to an OpenAPI-style provider
(bfcl_eval/constants/type_mappings.py GORILLA_TO_OPENAPI: dict->object, float->number,
tuple->array, any->string, unknown->string), at every level of the schema. Descriptions, names,
defaults, enums and every other key are kept as published.
"""

import json
import runpy
import sys
import tempfile
import zipfile


def load_mapping(wheel: zipfile.ZipFile) -> dict:
    src = wheel.read("bfcl_eval/constants/type_mappings.py").decode()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(src)
        path = f.name
    return runpy.run_path(path)["GORILLA_TO_OPENAPI"]


def map_types(schema, mapping):
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "type" and isinstance(v, str):
                out[k] = mapping.get(v, "string")
            elif k == "properties" and isinstance(v, dict):
                out[k] = {name: map_types(s, mapping) for name, s in v.items()}
            else:
                out[k] = map_types(v, mapping) if isinstance(v, (dict, list)) and k not in ("enum", "default", "example", "examples", "required") else v
        return out
    if isinstance(schema, list):
        return [map_types(s, mapping) for s in schema]
    return schema


def to_tool(fn, mapping):
    params = fn.get("parameters") or {"type": "dict", "properties": {}}
    params = map_types(params, mapping)
    params["type"] = "object"
    return {
        "type": "function",
        "function": {
            "name": fn["name"],
            "description": fn.get("description", ""),
            "parameters": params,
        },
    }


def entries(wheel):
    names = sorted(n for n in wheel.namelist() if n.startswith("bfcl_eval/data/") and n.endswith(".json"))
    for n in names:
        base = n[len("bfcl_eval/data/"):]
        if not (base.startswith("BFCL_v4_") or base.startswith("multi_turn_func_doc/")):
            continue
        text = wheel.read(n).decode("utf-8")
        if base.startswith("multi_turn_func_doc/"):
            fns = [json.loads(l) for l in text.splitlines() if l.strip()]
            yield base, base.split("/")[-1].removesuffix(".json"), fns
            continue
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue  # BFCL_v4_format_sensitivity.json is one pretty-printed index, not entries
            if isinstance(d, dict) and isinstance(d.get("function"), list):
                yield base, d.get("id", ""), d["function"]


def main():
    wheel = zipfile.ZipFile(sys.argv[1])
    mapping = load_mapping(wheel)
    seen = set()
    catalogs = tools = 0
    for source, entry, fns in entries(wheel):
        keep, names = [], set()
        for fn in fns:
            if not isinstance(fn, dict) or "name" not in fn:
                continue
            key = json.dumps(fn, sort_keys=True)
            if key in seen or fn["name"] in names:
                continue
            seen.add(key)
            names.add(fn["name"])
            keep.append(to_tool(fn, mapping))
        if keep:
            print(json.dumps({"source": source, "entry": entry, "tools": keep}, ensure_ascii=False))
            catalogs += 1
            tools += len(keep)
    print(f"{catalogs} catalogs, {tools} tools", file=sys.stderr)


if __name__ == "__main__":
    main()
