#!/usr/bin/env python3
"""Builds a corpus of model replies, one per BFCL checker rule, for every case of the given
BFCL categories, and records BFCL's own verdict on each (bfcl-eval's eval runner functions,
with its OpenAI function-calling handler's decoding). tests/bfcl_agreement.rs scores the same
replies with toolscore and requires every verdict to agree.

Usage: python bfcl_agreement.py OUT.jsonl CATEGORY...
Each output line: {"category", "id", "rule", "calls": [{"name", "arguments"}] | null,
"content": str | null, "bfcl": true | false | null (null: BFCL's checker raised), "error"}.
"""

import copy
import json
import sys

from bfcl_eval.constants.enums import Language, ReturnFormat
from bfcl_eval.eval_checker.eval_runner import (
    _evaluate_single_ast_entry,
    _evaluate_single_relevance_entry,
)
from bfcl_eval.model_handler.api_inference.openai_completion import (
    OpenAICompletionsHandler,
)
from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

# A model BFCL registers with underscore_to_dot (the OpenAI FC style).
MODEL = "gpt-4o-2024-11-20-FC"


def handler():
    # Only decode_ast is used, which reads is_fc_model; no client (and no API key) is needed.
    h = OpenAICompletionsHandler.__new__(OpenAICompletionsHandler)
    h.is_fc_model = True
    h.model_name = MODEL
    return h


def first_value(allowed):
    for v in allowed:
        if v != "":
            return v
    return None


def canonical(answer):
    """One call per answer: each parameter's first allowed value; omittable-only ones left out."""
    calls = []
    for a in answer:
        name, params = next(iter(a.items()))
        args = {}
        for p, allowed in params.items():
            v = first_value(allowed)
            if v is not None or None in allowed:
                args[p] = v
        calls.append((name.replace(".", "_"), args))
    return calls


def encode(calls):
    return [{"name": n, "arguments": a if isinstance(a, str) else json.dumps(a)} for n, a in calls]


def map_values(args, f, nested):
    out = {}
    for k, v in args.items():
        if nested and isinstance(v, list):
            out[k] = [f(x) for x in v]
        elif nested and isinstance(v, dict):
            out[k] = {kk: f(vv) for kk, vv in v.items()}
        elif not nested:
            out[k] = f(v)
        else:
            out[k] = v
    return out


def to_int(v):
    return int(v) if type(v) == float and v == int(v) else v


def to_float(v):
    return float(v) if type(v) == int else v


def int_str(v):
    return str(v) if type(v) in (int, float) else v


def shout(v):
    return v.upper().replace(" ", "_") if type(v) == str else v


def bang(v):
    return v + "!" if type(v) == str else v


def spaced(v):
    return " ".join(v) if type(v) == str and len(v) < 40 else v


def ast_corpus(answer):
    """(rule, calls or None, content) for an AST case."""
    base = canonical(answer)
    out = [("first_allowed_values", base, None)]
    for i, a in enumerate(answer):
        name, params = next(iter(a.items()))
        for p, allowed in params.items():
            for j, v in enumerate(allowed[:4]):
                if v == "":
                    calls = copy.deepcopy(base)
                    calls[i][1].pop(p, None)
                    out.append((f"omit_optional:{p}", calls, None))
                    calls = copy.deepcopy(base)
                    calls[i][1][p] = ""
                    out.append((f"empty_string_sent:{p}", calls, None))
                elif j > 0:
                    calls = copy.deepcopy(base)
                    calls[i][1][p] = v
                    out.append((f"allowed_value_{j}:{p}", calls, None))
            calls = copy.deepcopy(base)
            calls[i][1][p] = None
            out.append((f"null_sent:{p}", calls, None))
    for rule, f, nested in [
        ("int_for_float", to_int, False),
        ("float_for_int", to_float, False),
        ("int_as_string", int_str, False),
        ("case_and_underscores", shout, False),
        ("trailing_bang", bang, False),
        ("spaces_between_letters", spaced, False),
        # Each character BFCL's standardize_string drops, and two it keeps.
        *[(f"appended_{repr(c)}", (lambda c: lambda v: v + c if type(v) == str else v)(c), False)
          for c in " ,./-_*^!\t"],
        ("nested_int_for_float", to_int, True),
        ("nested_float_for_int", to_float, True),
        ("nested_case", shout, True),
        ("nested_bang", bang, True),
    ]:
        calls = [(n, map_values(a, f, nested)) for n, a in base]
        if calls != base or json.dumps(calls) != json.dumps(base):
            out.append((rule, calls, None))
    out.append(("duplicate_call", base + base[:1], None))
    if len(base) > 1:
        out.append(("missing_call", base[:-1], None))
        out.append(("swapped_order", list(reversed(base)), None))
        # The first call twice instead of the last.
        out.append(("first_twice_no_last", base[:-1] + base[:1], None))
    out.append(("dotted_name", [(n if i else next(iter(answer[0])), a) for i, (n, a) in enumerate(base)], None))
    out.append(("extra_parameter", [(n, dict(a, unexpected_param=1)) for n, a in base], None))
    out.append(("unparseable_arguments", [(base[0][0], '{"oops": ')] + base[1:], None))
    out.append(("array_arguments", [(base[0][0], "[1]")] + base[1:], None))
    out.append(("text_reply", None, "I would call the function, but here is text instead."))
    out.append(("no_calls", [], None))
    return out


def relevance_corpus(functions):
    name = functions[0]["name"].replace(".", "_") if functions else "some_tool"
    return [
        ("text_reply", None, "I cannot help with that using these tools."),
        ("empty_text", None, ""),
        ("no_calls", [], None),
        ("call_empty_args", [(name, {})], None),
        ("call_with_args", [(name, {"x": 1})], None),
        ("unparseable_arguments", [(name, '{"x": ')], None),
        ("array_arguments", [(name, "[1, 2]")], None),
        ("two_calls", [(name, {}), (name, {"x": 1})], None),
    ]


def main():
    out_path, categories = sys.argv[1], sys.argv[2:]
    h = handler()
    with open(out_path, "w") as out:
        for category in categories:
            entries = load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False)
            relevance = "relevance" in category
            truths = {} if relevance else {g["id"]: g["ground_truth"] for g in load_ground_truth_entry(category)}
            for entry in entries:
                if relevance:
                    corpus = relevance_corpus(entry["function"])
                else:
                    corpus = ast_corpus(truths[entry["id"]])
                for rule, calls, content in corpus:
                    encoded = encode(calls) if calls is not None else None
                    model_result = (
                        [{c["name"]: c["arguments"]} for c in encoded] if encoded is not None else content
                    )
                    try:
                        if relevance:
                            r = _evaluate_single_relevance_entry(h, entry["id"], model_result, entry, MODEL, category)
                        else:
                            r = _evaluate_single_ast_entry(
                                h, entry["id"], model_result, truths[entry["id"]], entry, MODEL,
                                category, Language.PYTHON, ReturnFormat.PYTHON,
                            )
                        verdict, error = r["valid"], r.get("error_type", "")
                    except Exception as e:  # BFCL's checker raised: no verdict to agree with
                        verdict, error = None, f"{type(e).__name__}: {e}"
                    out.write(json.dumps({
                        "category": category, "id": entry["id"], "rule": rule,
                        "calls": encoded, "content": content, "bfcl": verdict, "error": error,
                    }) + "\n")


if __name__ == "__main__":
    main()
