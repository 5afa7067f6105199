//! Canonical JSON: one text per value (sorted keys, normalized numbers) for fingerprints and
//! request hashes, and the equality argument matching uses. Pure; imports nothing of the crate.

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// Why [`from_str_unique_keys`] refused a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StrictJsonError {
    /// Not JSON: serde_json's message.
    Syntax(String),
    /// An object names this key twice: its path (`inputSchema.properties.unit`).
    DuplicateKey(String),
}

/// Parses `text` as one JSON value, refusing an object that names a key twice (which
/// `serde_json` reads silently, keeping the last: a reviewer would read one value and the
/// program another).
pub(crate) fn from_str_unique_keys(text: &str) -> Result<Value, StrictJsonError> {
    use serde::de::DeserializeSeed as _;
    let duplicate = std::cell::RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let read = Unique {
        path: String::new(),
        duplicate: &duplicate,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match (read, duplicate.into_inner()) {
        (_, Some(path)) => Err(StrictJsonError::DuplicateKey(path)),
        (Ok(v), None) => Ok(v),
        (Err(e), None) => Err(StrictJsonError::Syntax(e.to_string())),
    }
}

/// A value being read at `path`, whose objects may name each key once; the first key named
/// twice is put in `duplicate`.
struct Unique<'a> {
    path: String,
    duplicate: &'a std::cell::RefCell<Option<String>>,
}

impl<'a> Unique<'a> {
    fn at(&self, step: &str) -> Unique<'a> {
        let path = if self.path.is_empty() {
            step.to_owned()
        } else if step.starts_with('[') {
            format!("{}{step}", self.path)
        } else {
            format!("{}.{step}", self.path)
        };
        Unique {
            path,
            duplicate: self.duplicate,
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Unique<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Unique<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.at(&format!("[{}]", items.len())))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                let path = self.at(&key).path;
                *self.duplicate.borrow_mut() = Some(path.clone());
                return Err(serde::de::Error::custom(format!(
                    "key `{path}` appears twice"
                )));
            }
            let value = map.next_value_seed(self.at(&key))?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// Integral floats within ±2^53 print as integers in canonical JSON.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_992.0;

/// Canonical JSON text: object keys sorted, no whitespace, numbers normalized so that 1 and 1.0
/// print the same (integral floats within ±2^53 print as integers; other floats via
/// serde_json's shortest repr). Used for fingerprints and equality.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&canonical_number(n)),
        Value::String(s) => write_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(key, out);
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
    }
}

fn write_json_string(s: &str, out: &mut String) {
    // Serializing a string cannot fail; the fallback only keeps this free of `unwrap`.
    match serde_json::to_string(s) {
        Ok(text) => out.push_str(&text),
        Err(_) => {
            let _ = write!(out, "{s:?}");
        }
    }
}

fn canonical_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    match n.as_f64() {
        Some(f) if f.is_finite() && f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER => {
            // Exact: |f| <= 2^53 fits an i64 without loss. `as` maps -0.0 to 0.
            (f as i64).to_string()
        }
        Some(f) => Number::from_f64(f).map_or_else(|| n.to_string(), |m| m.to_string()),
        None => n.to_string(),
    }
}

/// Canonical equality: key order irrelevant, 1 == 1.0, arrays ordered, no extra or missing
/// keys.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => canonical_number(x) == canonical_number(y),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => false,
    }
}

/// The value at a dotted path (`lines.0.sku`: numeric segments index arrays) inside `v`.
pub fn value_at_path<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .filter(|seg| !seg.is_empty())
        .try_fold(v, |cur, seg| match cur {
            Value::Object(map) => map.get(seg),
            Value::Array(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

/// `sha256:` and the lower-case hex digest of `text`: the form every fingerprint takes.
pub fn sha256_of(text: &str) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex(&sha2::Sha256::digest(text.as_bytes())))
}

/// `12345678` → `12,345,678`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `text` cut to `max` bytes at a character boundary, saying how much was cut.
pub fn cut_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… ({} more bytes cut)",
        &text[..end],
        thousands((text.len() - end) as u64)
    )
}

/// Bytes of `value` as compact JSON, counted without building the text (a size bound checked
/// on a value that may be large should not allocate a copy of it).
pub fn compact_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing into a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Lower-case hex of a byte slice.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_named_twice_is_refused_with_its_path() {
        assert_eq!(
            from_str_unique_keys(r#"{"a": {"b": [1, {"c": 1, "c": 2}]}}"#),
            Err(StrictJsonError::DuplicateKey("a.b[1].c".to_owned()))
        );
        assert_eq!(
            from_str_unique_keys(r#"{"a": 1, "b": [true, null, "x", 1.5]}"#),
            Ok(serde_json::json!({"a": 1, "b": [true, null, "x", 1.5]}))
        );
        assert!(matches!(
            from_str_unique_keys("{} x"),
            Err(StrictJsonError::Syntax(_))
        ));
    }
    use serde_json::json;

    #[test]
    fn cut_text_keeps_short_text_and_cuts_at_a_character_boundary_saying_how_much() {
        assert_eq!(cut_text("short", 10), "short");
        assert_eq!(cut_text(&"é".repeat(3), 3), "é… (4 more bytes cut)");
    }

    // -- canonical JSON ------------------------------------------------------------------------

    #[test]
    fn canonical_json_sorts_keys_recursively_and_has_no_whitespace() {
        let v = json!({"b": 1, "a": [{"z": null, "y": true}, "x\"y"], "c": {"e": 1, "d": 2}});
        assert_eq!(
            canonical_json(&v),
            r#"{"a":[{"y":true,"z":null},"x\"y"],"b":1,"c":{"d":2,"e":1}}"#
        );
    }

    #[test]
    fn canonical_json_normalizes_numbers() {
        assert_eq!(canonical_json(&json!(1.0)), "1");
        assert_eq!(canonical_json(&json!(-3.0)), "-3");
        assert_eq!(canonical_json(&json!(-0.0)), "0");
        assert_eq!(canonical_json(&json!(2.5)), "2.5");
        assert_eq!(canonical_json(&json!(0.1)), "0.1");
        assert_eq!(
            canonical_json(&json!(9007199254740992.0)),
            "9007199254740992"
        );
        assert_eq!(canonical_json(&json!(u64::MAX)), u64::MAX.to_string());
        // Beyond 2^53 an integral float keeps serde_json's float form.
        assert_ne!(canonical_json(&json!(1e20)), "100000000000000000000");
        assert_eq!(
            canonical_json(&json!({"q": [1.0, 2]})),
            canonical_json(&json!({"q": [1, 2.0]}))
        );
    }

    #[test]
    fn json_equal_is_canonical() {
        assert!(json_equal(
            &json!({"a": 1, "b": [1.0, {"c": 2}]}),
            &json!({"b": [1, {"c": 2.0}], "a": 1.0})
        ));
        assert!(
            !json_equal(&json!([1, 2]), &json!([2, 1])),
            "arrays are ordered"
        );
        assert!(
            !json_equal(&json!({"a": 1}), &json!({"a": 1, "b": null})),
            "extra key"
        );
        assert!(
            !json_equal(&json!({"a": 1, "b": 2}), &json!({"a": 1})),
            "missing key"
        );
        assert!(
            !json_equal(&json!({"a": 1}), &json!({"b": 1})),
            "different key"
        );
        assert!(!json_equal(&json!(2), &json!("2")));
        assert!(!json_equal(&json!(1), &json!(1.5)));
        assert!(!json_equal(&json!(null), &json!(false)));
    }

    /// Arbitrary JSON: the number forms canonicalisation must agree on (integers, integral
    /// floats, -0.0, fractions, large values), strings with escapes, nested arrays and objects.
    fn arb_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-1000i64..1000).prop_map(|i| json!(i)),
            prop::sample::select(vec![
                0.0,
                -0.0,
                1.0,
                2.5,
                -3.0,
                0.1,
                1e20,
                9007199254740992.0
            ])
            .prop_map(|f| json!(f)),
            "[a-z\\\"\u{e9} ]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-c]{1,2}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn canonical_text_is_a_fixed_point(v in arb_json()) {
            let text = canonical_json(&v);
            let back: Value = serde_json::from_str(&text).unwrap();
            proptest::prop_assert_eq!(canonical_json(&back), text);
            proptest::prop_assert!(json_equal(&v, &back));
        }

        #[test]
        fn equality_is_an_equivalence_that_agrees_with_canonical_text(
            a in arb_json(),
            b in arb_json(),
        ) {
            proptest::prop_assert!(json_equal(&a, &a));
            proptest::prop_assert_eq!(json_equal(&a, &b), json_equal(&b, &a));
            proptest::prop_assert_eq!(json_equal(&a, &b), canonical_json(&a) == canonical_json(&b));
        }
    }
}
