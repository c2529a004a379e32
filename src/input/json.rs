//! A JSON line's id and text (or token list), and the rules for a key given in JSON. Every error is a whole
//! message naming the line: `corpus.jsonl:17: missing field "text"`.

use std::fmt;

use serde_json::Value;

use super::keep::keep_from_json;
use super::within_key_limit;
use crate::sketch::OwnedToken;
use crate::storage::segment::KeepValue;

/// Where a line is, as messages name it: `corpus.jsonl:17`.
#[derive(Clone, Copy, Debug)]
pub struct At<'a> {
    /// The input's name (its path, or `<stdin>`).
    pub name: &'a str,
    /// The line number, from 1.
    pub line: usize,
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name, self.line)
    }
}

/// The UTF-8 encoding of U+FEFF, the byte-order mark.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// One parsed JSON Lines record. Its errors are whole messages naming the line.
pub struct JsonLine<'a> {
    value: Value,
    at: At<'a>,
}

impl<'a> JsonLine<'a> {
    /// Checks that the line is UTF-8 and parses its JSON value.
    pub fn parse(bytes: &[u8], at: At<'a>) -> Result<Self, String> {
        // A byte-order mark that some editors put at the start of a UTF-8 file is not part of
        // the first record (JSON cannot start with it).
        let bytes = match bytes.strip_prefix(UTF8_BOM) {
            Some(rest) if at.line == 1 => rest,
            _ => bytes,
        };
        let text = std::str::from_utf8(bytes)
            .map_err(|e| format!("{at}: not UTF-8 (byte {} of the line)", e.valid_up_to()))?;
        let value = serde_json::from_str(text).map_err(|e| {
            // serde_json places the error in the text it was given, always line 1 here: only
            // its column says more than the file's own line number.
            let position = format!(" at line {} column {}", e.line(), e.column());
            let what = e.to_string();
            let what = what.strip_suffix(&position).unwrap_or(&what);
            format!("{at}: invalid JSON at column {}: {what}", e.column())
        })?;
        Ok(JsonLine { value, at })
    }

    /// The id in `field` (a name, or a path: `meta.url`) as a database key: a string, or
    /// `{"hex": …}` for any bytes. Missing, a number or any other value is an error.
    pub fn key(&self, field: &str) -> Result<Vec<u8>, String> {
        self.object()?;
        match lookup(&self.value, field) {
            Some(v) => key_from_json(v).map_err(|e| format!("{}: field {field:?} {e}", self.at)),
            None => Err(format!("{}: missing field {field:?}", self.at)),
        }
    }

    /// Errors unless the line holds a JSON object: an array or a scalar has no fields, and
    /// saying "missing field" of it would send the reader looking for a typo.
    fn object(&self) -> Result<(), String> {
        let kind = match &self.value {
            Value::Object(_) => return Ok(()),
            Value::Array(_) => "an array",
            Value::String(_) => "a string",
            Value::Number(_) => "a number",
            Value::Bool(_) => "a boolean",
            Value::Null => "null",
        };
        Err(format!(
            "{}: the line holds {kind}, not a JSON object with the fields asked for",
            self.at
        ))
    }

    /// The keep value in `field` (a name or a path): none when it is missing or null.
    pub fn keep_value(&self, field: &str) -> Result<Option<KeepValue>, String> {
        self.object()?;
        match lookup(&self.value, field) {
            None => Ok(None),
            Some(v) => keep_from_json(v).map_err(|e| format!("{}: field {field:?} {e}", self.at)),
        }
    }

    /// Whether the line has `field` (a name or a path), whatever its value.
    pub fn has(&self, field: &str) -> bool {
        lookup(&self.value, field).is_some()
    }

    /// The id in the top-level `field` exactly as given, any JSON value; null when missing.
    pub fn id_as_given(&self, field: &str) -> Value {
        self.value.get(field).cloned().unwrap_or(Value::Null)
    }

    /// Takes the text out of `field` (a name or a path), which must hold a string. Read the id
    /// first: the id and the text may be one field.
    pub fn take_text(&mut self, field: &str) -> Result<String, String> {
        self.object()?;
        match lookup_mut(&mut self.value, field) {
            Some(Value::String(s)) => Ok(std::mem::take(s)),
            Some(_) => Err(format!("{}: field {field:?} must be a string", self.at)),
            None => Err(format!("{}: missing field {field:?}", self.at)),
        }
    }
}

impl JsonLine<'_> {
    /// Takes the token list out of `field` (a name or a path), which must hold an array of
    /// strings and integers in the signed 64-bit range. Read the id first.
    pub fn take_tokens(&mut self, field: &str) -> Result<Vec<OwnedToken>, String> {
        self.object()?;
        let at = self.at;
        let elements = match lookup_mut(&mut self.value, field) {
            Some(Value::Array(elements)) => std::mem::take(elements),
            Some(_) => {
                return Err(format!(
                    "{at}: field {field:?} must be an array of tokens (strings or integers)"
                ));
            }
            None => return Err(format!("{at}: missing field {field:?}")),
        };
        tokens_from_json(elements).map_err(|why| format!("{at}: field {field:?} {why}"))
    }
}

/// A token list given as JSON array elements. `Err`: the element refused and why, for the
/// caller to prefix with the field and line.
pub fn tokens_from_json(elements: Vec<Value>) -> Result<Vec<OwnedToken>, String> {
    elements
        .into_iter()
        .enumerate()
        .map(|(i, element)| token_from_json(element).map_err(|why| format!("element {i} {why}")))
        .collect()
}

/// A token given in JSON: a string, or an integer in the signed 64-bit range. `Err`: why it
/// is not one, for the caller to prefix with the field, element and line.
fn token_from_json(value: Value) -> Result<OwnedToken, String> {
    let what = match value {
        Value::String(s) => return Ok(OwnedToken::Str(s)),
        Value::Number(n) => match n.as_i64() {
            Some(v) => return Ok(OwnedToken::Int(v)),
            None if n.is_u64() => "is an integer above 2^63 - 1",
            None => "is a number but not an integer",
        },
        Value::Null => "is null",
        Value::Array(_) => "is an array (token lists are flat)",
        Value::Bool(_) => "is a boolean",
        Value::Object(_) => "is an object",
    };
    Err(format!("{what}; tokens are strings or integers"))
}

/// The value of `field` in `value`: the member named exactly `field` if there is one, else,
/// for a name with dots, the path through nested objects (`meta.url`).
fn lookup<'v>(value: &'v Value, field: &str) -> Option<&'v Value> {
    if let Some(v) = value.get(field) {
        return Some(v);
    }
    if !field.contains('.') {
        return None;
    }
    field.split('.').try_fold(value, |v, part| v.get(part))
}

/// [`lookup`], mutable.
fn lookup_mut<'v>(value: &'v mut Value, field: &str) -> Option<&'v mut Value> {
    if value.get(field).is_some() || !field.contains('.') {
        return value.get_mut(field);
    }
    field.split('.').try_fold(value, |v, part| v.get_mut(part))
}

/// A key given in JSON: a string, or `{"hex": "…"}`. `Err`: why it is not one, for the caller
/// to prefix with the field and line.
pub fn key_from_json(value: &Value) -> Result<Vec<u8>, String> {
    match value {
        Value::String(s) => within_key_limit(s.as_bytes().to_vec()),
        Value::Object(o) if o.len() == 1 && o.contains_key("hex") => {
            let given = o.get("hex").map_or(Value::Null, Clone::clone);
            let Some(hex) = o.get("hex").and_then(Value::as_str) else {
                return Err(format!(
                    "\"hex\" must be a string of hex digits, got {given}"
                ));
            };
            let digits = hex.as_bytes();
            if let Some(at) = digits.iter().position(|c| !c.is_ascii_hexdigit()) {
                return Err(format!(
                    "\"hex\" must hold only hex digits (0-9, a-f), got {given}: character {} \
                     is not one",
                    at + 1
                ));
            }
            if !digits.len().is_multiple_of(2) {
                return Err(format!(
                    "\"hex\" must hold an even number of hex digits (two per byte), got {given}"
                ));
            }
            within_key_limit(
                digits
                    .chunks(2)
                    .map(|p| {
                        let nibble = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                        nibble(p[0]) << 4 | nibble(p[1])
                    })
                    .collect(),
            )
        }
        // Not echoed: serde_json would print `1e3` as `1000.0`, which is not what was written.
        Value::Number(_) => Err(
            "must be a string, got a number (keys are text: quote the id, \"17\" rather than 17)"
                .to_string(),
        ),
        other => Err(format!(
            "must be a string or {{\"hex\": \"…\"}}, got {}",
            serde_json::to_string(other).unwrap_or_default()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(json: &str) -> JsonLine<'static> {
        let at = At {
            name: "in.jsonl",
            line: 3,
        };
        JsonLine::parse(json.as_bytes(), at).unwrap()
    }

    #[test]
    fn paths_reach_into_objects_after_exact_names() {
        let mut l = line(r#"{"meta": {"url": "u", "n": {"t": "deep"}}, "a.b": "literal"}"#);
        assert_eq!(l.key("meta.url").unwrap(), b"u");
        assert_eq!(l.key("a.b").unwrap(), b"literal");
        assert_eq!(l.take_text("meta.n.t").unwrap(), "deep");
        assert_eq!(
            l.key("meta.nope").unwrap_err(),
            "in.jsonl:3: missing field \"meta.nope\""
        );
        assert_eq!(
            l.take_text("meta").unwrap_err(),
            "in.jsonl:3: field \"meta\" must be a string"
        );
        // An exact name wins over a path.
        let mut l = line(r#"{"m.u": "exact", "m": {"u": "path"}}"#);
        assert_eq!(l.take_text("m.u").unwrap(), "exact");
    }

    #[test]
    fn token_lists_hold_strings_and_integers_only() {
        let mut l = line(r#"{"t": ["a", 1, -2, "1"]}"#);
        let want = [
            OwnedToken::Str("a".into()),
            OwnedToken::Int(1),
            OwnedToken::Int(-2),
            OwnedToken::Str("1".into()),
        ];
        assert_eq!(l.take_tokens("t").unwrap(), want);
        for (json, why) in [
            (r#"{"t": "a b"}"#, "field \"t\" must be an array"),
            (
                r#"{"t": [1.5]}"#,
                "element 0 is a number but not an integer",
            ),
            (r#"{"t": ["a", ["b"]]}"#, "element 1 is an array"),
            (r#"{"t": [null]}"#, "element 0 is null"),
            (
                r#"{"t": [18446744073709551615]}"#,
                "element 0 is an integer above",
            ),
        ] {
            let err = line(json).take_tokens("t").unwrap_err();
            assert!(err.starts_with("in.jsonl:3: "), "{err}");
            assert!(err.contains(why), "{json}: {err}");
        }
    }
}
