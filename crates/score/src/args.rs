//! Argument matching: the produced arguments against a fixture's expected ones, walked
//! path by path, each path judged by its matcher (exact, canonical, numeric tolerance,
//! regex, any) or by canonical equality.

use super::{
    ArgMatcher, BTreeMap, BTreeSet, ExpectedCall, MAX_VALUE_CHARS, Value, json_equal, short, show,
    truncate, type_name,
};

/// First mismatch as (dotted path, reason), or Ok.
///
/// The expected arguments are compared with `actual` canonically (no extra or missing keys),
/// except at paths with a matcher in `expected.matchers`, which are judged by the matcher. A
/// matcher path absent from the expected arguments still applies to `actual`. With
/// `expected.args == None` only the tool name is checked, so this returns Ok.
pub(crate) fn match_args(expected: &ExpectedCall, actual: &Value) -> Result<(), (String, String)> {
    let Some(want) = &expected.args else {
        return Ok(());
    };
    if !actual.is_object() {
        return Err((
            String::new(),
            format!("expected an object of arguments, got {}", type_name(actual)),
        ));
    }
    compare("", Some(want), Some(actual), &expected.matchers)
}

pub(super) fn compare(
    path: &str,
    want: Option<&Value>,
    got: Option<&Value>,
    matchers: &BTreeMap<String, ArgMatcher>,
) -> Result<(), (String, String)> {
    if let Some(matcher) = matchers.get(path) {
        return apply_matcher(path, matcher, want, got);
    }
    let below = has_matcher_below(path, matchers);
    match (want, got) {
        (None, None) => {
            if below {
                // Matchers below a path absent on both sides: `any` accepts, others miss.
                for seg in matcher_children(path, matchers) {
                    compare(&join(path, &seg), None, None, matchers)?;
                }
            }
            Ok(())
        }
        (Some(w), None) => Err((path.to_owned(), format!("missing (expected {})", show(w)))),
        (None, Some(g)) => {
            if below && (g.is_object() || g.is_array()) {
                descend(path, None, g, matchers)
            } else {
                Err((
                    path.to_owned(),
                    format!("unexpected argument (got {})", show(g)),
                ))
            }
        }
        (Some(w), Some(g)) => match (w, g) {
            (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_)) => {
                descend(path, Some(w), g, matchers)
            }
            _ if json_equal(w, g) => Ok(()),
            _ => Err((
                path.to_owned(),
                format!("expected {}, got {}", show(w), show(g)),
            )),
        },
    }
}

/// Compares the children of a container. `want`, when present, is the same kind as `got`.
pub(super) fn descend(
    path: &str,
    want: Option<&Value>,
    got: &Value,
    matchers: &BTreeMap<String, ArgMatcher>,
) -> Result<(), (String, String)> {
    match got {
        Value::Object(g) => {
            let w = want.and_then(Value::as_object);
            let mut keys: BTreeSet<String> = g.keys().cloned().collect();
            if let Some(w) = w {
                keys.extend(w.keys().cloned());
            }
            keys.extend(matcher_children(path, matchers));
            for key in keys {
                compare(
                    &join(path, &key),
                    w.and_then(|w| w.get(&key)),
                    g.get(&key),
                    matchers,
                )?;
            }
            Ok(())
        }
        Value::Array(g) => {
            let w = want.and_then(Value::as_array);
            let want_len = w.map_or(0, Vec::len);
            let mut indices: BTreeSet<usize> = (0..want_len.max(g.len())).collect();
            indices.extend(
                matcher_children(path, matchers)
                    .iter()
                    .filter_map(|s| s.parse::<usize>().ok()),
            );
            if !has_matcher_below(path, matchers) && w.is_some() && want_len != g.len() {
                // Without matchers inside, a length difference is the clearest explanation
                // (with matchers, an `any` on a trailing item may excuse it: compare items).
                return Err((
                    path.to_owned(),
                    format!(
                        "expected {want_len} item{}, got {}",
                        if want_len == 1 { "" } else { "s" },
                        g.len()
                    ),
                ));
            }
            for i in indices {
                let seg = i.to_string();
                compare(
                    &join(path, &seg),
                    w.and_then(|w| w.get(i)),
                    g.get(i),
                    matchers,
                )?;
            }
            Ok(())
        }
        _ => Err((
            path.to_owned(),
            format!("unexpected argument (got {})", show(got)),
        )),
    }
}

/// Judges one value (absent = `None`) with a fixture matcher: the same semantics everywhere a
/// matcher appears (fixture arguments, scripted rules, scenario state).
pub fn check_matcher(
    path: &str,
    matcher: &ArgMatcher,
    want: Option<&Value>,
    got: Option<&Value>,
) -> Result<(), (String, String)> {
    apply_matcher(path, matcher, want, got)
}

pub(super) fn apply_matcher(
    path: &str,
    matcher: &ArgMatcher,
    want: Option<&Value>,
    got: Option<&Value>,
) -> Result<(), (String, String)> {
    let fail = |reason: String| Err((path.to_owned(), reason));
    if let ArgMatcher::Any = matcher {
        return Ok(());
    }
    let Some(got) = got else {
        return fail(match want {
            Some(w) => format!("missing (expected {})", show(w)),
            None => "missing".to_owned(),
        });
    };
    match matcher {
        ArgMatcher::Any => Ok(()),
        ArgMatcher::CaseInsensitive => match (want, got) {
            (Some(Value::String(w)), Value::String(g)) if w.to_lowercase() == g.to_lowercase() => {
                Ok(())
            }
            (Some(Value::String(_)), _) | (None, _) => {
                let w = want.map_or_else(|| "(no expected value)".to_owned(), show);
                fail(format!("expected {w} (ignoring case), got {}", show(got)))
            }
            // A non-string expectation cannot differ in case: plain equality.
            (Some(w), g) if json_equal(w, g) => Ok(()),
            (Some(w), g) => fail(format!("expected {}, got {}", show(w), show(g))),
        },
        ArgMatcher::Regex(re) => {
            // The regex is stored anchored as ^(?:...)$; show the user's pattern.
            let pattern = re.as_str();
            let shown = pattern
                .strip_prefix("^(?:")
                .and_then(|p| p.strip_suffix(")$"))
                .unwrap_or(pattern);
            match got {
                Value::String(s) if re.is_match(s) => Ok(()),
                _ => fail(format!(
                    "expected a string matching /{}/, got {}",
                    truncate(shown, MAX_VALUE_CHARS),
                    show(got)
                )),
            }
        }
        ArgMatcher::OneOf(options) => {
            if options.iter().any(|o| json_equal(o, got)) {
                Ok(())
            } else {
                fail(format!(
                    "expected one of {}, got {}",
                    show(&Value::Array(options.clone())),
                    show(got)
                ))
            }
        }
        ArgMatcher::Approx(tolerance) => {
            let w = want.and_then(Value::as_f64);
            match (w, got.as_f64()) {
                (Some(w), Some(g)) if (g - w).abs() <= *tolerance => Ok(()),
                (Some(w), _) => fail(format!(
                    "expected {} ± {tolerance}, got {}",
                    show(&Value::from(w)),
                    show(got)
                )),
                (None, _) => fail(format!(
                    "approx matcher has no expected number, got {}",
                    show(got)
                )),
            }
        }
    }
}

pub(super) fn has_matcher_below(path: &str, matchers: &BTreeMap<String, ArgMatcher>) -> bool {
    if path.is_empty() {
        return matchers.keys().any(|k| !k.is_empty());
    }
    let prefix = format!("{path}.");
    matchers.keys().any(|k| k.starts_with(&prefix))
}

/// The next path segment of every matcher strictly below `path`.
pub(super) fn matcher_children(
    path: &str,
    matchers: &BTreeMap<String, ArgMatcher>,
) -> BTreeSet<String> {
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}.")
    };
    matchers
        .keys()
        .filter(|k| !k.is_empty())
        .filter_map(|k| k.strip_prefix(prefix.as_str()))
        .filter_map(|rest| rest.split('.').next())
        .filter(|seg| !seg.is_empty())
        .map(str::to_owned)
        .collect()
}

pub(super) fn join(path: &str, seg: &str) -> String {
    if path.is_empty() {
        seg.to_owned()
    } else {
        format!("{path}.{seg}")
    }
}

// ---------------------------------------------------------------------------------------------
// Detail helpers
// ---------------------------------------------------------------------------------------------

pub(super) fn args_path(path: &str) -> String {
    if path.is_empty() {
        "args".to_owned()
    } else {
        format!("args.{}", short(path))
    }
}
