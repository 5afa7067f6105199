#!/usr/bin/env python3
"""Builds a corpus of model replies, one per BFCL checker rule, for every case of the given
BFCL categories, and records BFCL's own verdict on each (bfcl-eval's eval runner functions,
with its OpenAI function-calling handler's decoding). tests/it/bfcl_agreement.rs scores the same
replies with toolscore and requires every verdict to agree.

Usage: python bfcl_agreement.py OUT.jsonl TOOLS.jsonl CATEGORY...
TOOLS.jsonl gets, for every case, the tools BFCL's OpenAI handler sends the model:
{"id", "tools"}, for the test to compare with the imported catalogs.
Each OUT.jsonl line: {"category", "id", "rule", "calls": [{"name", "arguments"}] | null,
"content": str | null, "bfcl": true | false | null (null: BFCL's checker raised), "error"}.
"""

import copy
import json
import sys

from bfcl_eval.constants.enums import Language, ModelStyle, ReturnFormat
from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
from bfcl_eval.eval_checker.eval_runner import (
    _evaluate_single_ast_entry,
    _evaluate_single_relevance_entry,
)
from bfcl_eval.model_handler.utils import convert_to_tool
from bfcl_eval.model_handler.api_inference.openai_completion import (
    OpenAICompletionsHandler,
)
from bfcl_eval.utils import is_java, is_js, load_dataset_entry, load_ground_truth_entry

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


def python_render(name, param, value, style=None):
    return value


def canonical(answer, render=python_render, style=None):
    """One call per answer: each parameter's first allowed value; omittable-only ones left out."""
    calls = []
    for a in answer:
        name, params = next(iter(a.items()))
        args = {}
        for p, allowed in params.items():
            v = first_value(allowed)
            if v is not None or None in allowed:
                args[p] = render(name, p, v, style) if v is not None else v
        calls.append((name.replace(".", "_"), args))
    return calls


# Java and JavaScript categories: BFCL shows the model every parameter as a string of source
# code, so a reply renders each value as code of the parameter's declared type. `style` picks
# one of the other ways a model writes the same value (or a wrong one) for a rule of its own.

def first_nested(v):
    """A nested possible-answer dict holds a list of allowed values per key: the first of each
    (keys with only "" allowed, that is omittable, left out)."""
    if not isinstance(v, dict):
        return v
    out = {}
    for k, allowed in v.items():
        x = first_value(allowed) if isinstance(allowed, list) else allowed
        if x is not None:
            out[k] = first_nested(x)
    return out


JAVA_ARRAY_TYPES = {"integer": "int", "long": "long", "double": "double", "float": "float",
                    "boolean": "boolean", "char": "char", "String": "String", "any": "Object"}


def java_element(x, item_type, style):
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, str):
        return f"'{x}'" if item_type == "char" else json.dumps(x, ensure_ascii=False)
    if item_type == "long" and style != "java_plain_numbers":
        return f"{x}L"
    if item_type == "float" and style != "java_plain_numbers":
        return f"{x}f"
    return str(x)


# Digits past CPython's int() limit (4300): BFCL's converters match them as an integer and
# then raise, so BFCL gives no verdict at all.
HUGE = "9" * 4301


def java_value(v, t, item_type, style):
    if style == "native_json_values":
        return v
    if style == "huge_integer" and t in ("integer", "long", "short", "byte"):
        return HUGE + ("L" if t == "long" else "")
    if isinstance(v, str):
        return v  # a variable name or an expression, sent as it is
    if t == "boolean":
        return "true" if v else "false"
    if t in ("long", "float") and not isinstance(v, (list, dict)):
        return java_element(v, t, style)
    if t == "ArrayList":
        elements = [java_element(x, item_type, style) for x in v]
        if style == "java_arraylist_add_form":
            return "new ArrayList<>() {{ " + " ".join(f"add({e});" for e in elements) + " }}"
        if style == "list_literal":
            return "[" + ", ".join(elements) + "]"
        if not elements:
            return "new ArrayList<>()"
        return "new ArrayList<>(Arrays.asList(" + ", ".join(elements) + "))"
    if t == "Array":
        elements = [java_element(x, item_type, style) for x in v]
        if style == "list_literal":
            return "[" + ", ".join(elements) + "]"
        return f"new {JAVA_ARRAY_TYPES.get(item_type, item_type)}[]{{" + ", ".join(elements) + "}"
    if t == "HashMap":
        entries = first_nested(v) if isinstance(v, dict) else {}
        puts = " ".join(f'put("{k}", {java_element(x, None, style)});' for k, x in entries.items())
        if style == "list_literal":
            return json.dumps(entries)
        return "new HashMap<String, Object>() {{ " + puts + " }}"
    return json.dumps(v) if isinstance(v, (list, dict)) else str(v)


def js_element(x, style):
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, str):
        return f"'{x}'" if style == "js_single_quotes" else json.dumps(x, ensure_ascii=False)
    if isinstance(x, list):
        return "[" + ", ".join(js_element(e, style) for e in x) + "]"
    if isinstance(x, dict):
        return js_dict(x, style)
    return str(x)


def js_dict(d, style):
    key = (lambda k: json.dumps(k)) if style == "js_quoted_keys" else (lambda k: k)
    return "{" + ", ".join(f"{key(k)}: {js_element(x, style)}" for k, x in d.items()) + "}"


def js_value(v, t, item_type, style):
    if style == "native_json_values":
        return v
    if style == "huge_integer" and t in ("integer", "Bigint"):
        return HUGE + ("n" if t == "Bigint" else "")
    if isinstance(v, str):
        if t == "String" and style == "js_quoted_string":
            return json.dumps(v, ensure_ascii=False)
        return v
    if t == "Boolean":
        return "true" if v else "false"
    if t == "float":
        return str(int(v)) if style == "js_float_as_int" and v == int(v) else str(float(v))
    if t == "Bigint":
        return f"{v}n"
    if t == "array":
        inner = ", ".join(js_element(x, style) for x in v)
        return f"new Array({inner})" if style == "js_new_array" else f"[{inner}]"
    if t == "dict":
        return js_dict(first_nested(v), style) if isinstance(v, dict) else json.dumps(v)
    return json.dumps(v) if isinstance(v, (list, dict)) else str(v)


def code_render(functions, language):
    docs = {f["name"]: f["parameters"]["properties"] for f in functions}
    value = java_value if language == Language.JAVA else js_value

    def render(name, param, v, style=None):
        doc = docs.get(name, {}).get(param, {})
        return value(v, doc.get("type"), doc.get("items", {}).get("type"), style)

    return render


JAVA_STYLES = ["huge_integer", "native_json_values", "java_plain_numbers", "java_arraylist_add_form", "list_literal"]
JS_STYLES = ["huge_integer", "native_json_values", "js_single_quotes", "js_quoted_keys", "js_quoted_string",
             "js_float_as_int", "js_new_array"]


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


def ast_corpus(answer, render=python_render, styles=()):
    """(rule, calls or None, content) for an AST case."""
    base = canonical(answer, render)
    out = [("first_allowed_values", base, None)]
    for style in styles:
        calls = canonical(answer, render, style)
        if json.dumps(calls) != json.dumps(base):
            out.append((f"style:{style}", calls, None))
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
                    calls[i][1][p] = render(name, p, v) if v is not None else v
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
    out_path, tools_path, categories = sys.argv[1], sys.argv[2], sys.argv[3:]
    h = handler()
    with open(out_path, "w") as out, open(tools_path, "w") as tools_out:
        for category in categories:
            # What the model sees: the docs with BFCL's language hints, as the handler converts
            # them (a case BFCL's own conversion raises on is left out: it never runs in BFCL).
            for entry in load_dataset_entry(category, include_prereq=False, include_language_specific_hint=True):
                try:
                    tools = convert_to_tool(entry["function"], GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
                except Exception:
                    continue
                tools_out.write(json.dumps({"id": entry["id"], "tools": tools}) + "\n")
            entries = load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False)
            relevance = "relevance" in category
            # As the eval runner picks them (`is_java`, `is_js`).
            if is_java(category):
                language, return_format, styles = Language.JAVA, ReturnFormat.JAVA, JAVA_STYLES
            elif is_js(category):
                language, return_format, styles = Language.JAVASCRIPT, ReturnFormat.JAVASCRIPT, JS_STYLES
            else:
                language, return_format, styles = Language.PYTHON, ReturnFormat.PYTHON, ()
            truths = {} if relevance else {g["id"]: g["ground_truth"] for g in load_ground_truth_entry(category)}
            for entry in entries:
                if relevance:
                    corpus = relevance_corpus(entry["function"])
                else:
                    render = python_render
                    if language != Language.PYTHON:
                        render = code_render(entry["function"], language)
                    corpus = ast_corpus(truths[entry["id"]], render, styles)
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
                                category, language, return_format,
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
