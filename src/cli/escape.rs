//! How the tool writes keys, which are arbitrary bytes, and reads them back.
//!
//! **Text** (`keys`, `dedup --format drop`, text-mode `query` and `get`, and what `get`,
//! `delete` and `delete -` read): one key per line, with these escapes, so that a key never
//! breaks a line and every line reads back as exactly the key written:
//!
//! | key bytes | written |
//! | --- | --- |
//! | `\` | `\\` |
//! | line feed, carriage return, tab, NUL | `\n`, `\r`, `\t`, `\0` |
//! | other ASCII control bytes (0x01–0x1F, 0x7F) | `\xHH` (two lowercase hex digits) |
//! | bytes that are not part of valid UTF-8 | `\xHH` |
//! | everything else (printable ASCII, space, valid UTF-8) | unchanged |
//!
//! A key without any of those bytes is written as it is. The empty key is an empty line.
//! Reading takes each line as one key: the `\n` ending it is dropped, with a `\r` just before
//! it (a key's own carriage return is always written `\r`); `\xHH` accepts either case; a
//! backslash followed by anything else is an error.
//!
//! **JSON**: a key is a JSON string when it is valid UTF-8 (JSON's own escapes carry newlines
//! and NUL exactly), and otherwise an object `{"hex": "<every byte as two lowercase hex
//! digits>"}`. Inputs accept both forms wherever a key is read (`add`, `delete --jsonl`); a
//! number is refused, so that `1`, `1.0`, `1e0` and `"1"` can never quietly become one key.

use std::borrow::Cow;
use std::fmt::Write as _;

use mhdb::input::within_key_limit;
use serde_json::Value;

/// `key` as one line of text (without the line's `\n`), escaped as the module describes.
pub fn key_text(key: &[u8]) -> Cow<'_, str> {
    let needs = |c: char| c == '\\' || c.is_ascii_control();
    match std::str::from_utf8(key) {
        Ok(s) if !s.contains(needs) => Cow::Borrowed(s),
        _ => {
            let mut out = String::with_capacity(key.len() + 8);
            for chunk in key.utf8_chunks() {
                for c in chunk.valid().chars() {
                    match c {
                        '\\' => out.push_str("\\\\"),
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        '\t' => out.push_str("\\t"),
                        '\0' => out.push_str("\\0"),
                        c if c.is_ascii_control() => {
                            let _ = write!(out, "\\x{:02x}", c as u32);
                        }
                        c => out.push(c),
                    }
                }
                for b in chunk.invalid() {
                    let _ = write!(out, "\\x{b:02x}");
                }
            }
            Cow::Owned(out)
        }
    }
}

/// Reads back one line written by [`key_text`] (without its line ending). `Err`: what is wrong
/// and at which byte (1-based), for the caller to prefix with where the line came from.
pub fn parse_key_text(line: &[u8]) -> Result<Vec<u8>, String> {
    let mut key = Vec::with_capacity(line.len());
    let mut i = 0;
    while let Some(&b) = line.get(i) {
        i += 1;
        if b != b'\\' {
            key.push(b);
            continue;
        }
        let escape_at = i;
        let Some(&e) = line.get(i) else {
            return Err(format!(
                "a lone backslash ends the key (byte {escape_at}); write a backslash as \\\\"
            ));
        };
        i += 1;
        let byte = match e {
            b'\\' => b'\\',
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'0' => 0,
            b'x' => {
                let hex = line.get(i..i + 2).and_then(|h| {
                    let h = std::str::from_utf8(h).ok()?;
                    u8::from_str_radix(h, 16)
                        .ok()
                        .filter(|_| !h.starts_with('+'))
                });
                let Some(v) = hex else {
                    return Err(format!(
                        "\\x at byte {escape_at} must be followed by two hex digits"
                    ));
                };
                i += 2;
                v
            }
            other => {
                return Err(format!(
                    "unknown escape \\{} at byte {escape_at} (known: \\\\ \\n \\r \\t \\0 \\xHH)",
                    char::from(other).escape_default()
                ));
            }
        };
        key.push(byte);
    }
    within_key_limit(key).map_err(|e| format!("the key {e}"))
}

/// Drops the line ending of a line as read (`\n`, or `\r\n`).
pub fn strip_line_end(mut line: &[u8]) -> &[u8] {
    if let Some(rest) = line.strip_suffix(b"\n") {
        line = rest.strip_suffix(b"\r").unwrap_or(rest);
    }
    line
}

/// `key` as a JSON value: a string when it is UTF-8, else `{"hex": "…"}`.
pub fn key_json(key: &[u8]) -> Value {
    match std::str::from_utf8(key) {
        Ok(s) => Value::String(s.to_string()),
        Err(_) => {
            let mut hex = String::with_capacity(key.len() * 2);
            for b in key {
                let _ = write!(hex, "{b:02x}");
            }
            serde_json::json!({ "hex": hex })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mhdb::db::MAX_KEY_LEN;
    use mhdb::input::key_from_json;

    #[test]
    fn ordinary_keys_are_unchanged() {
        for k in [
            "doc-17",
            "https://example.com/a?b=c d",
            "naïve café 東京",
            "-",
            " ",
            "",
        ] {
            assert!(matches!(key_text(k.as_bytes()), Cow::Borrowed(s) if s == k));
        }
    }

    #[test]
    fn escapes_are_as_documented() {
        let cases: [(&[u8], &str); 8] = [
            (b"a\\b", "a\\\\b"),
            (b"two\nlines", "two\\nlines"),
            (b"cr\rtab\t", "cr\\rtab\\t"),
            (b"nul\0", "nul\\0"),
            (b"\x1b[31m\x7f", "\\x1b[31m\\x7f"),
            (b"bad\xff\xfeutf8", "bad\\xff\\xfeutf8"),
            ("é\u{0}".as_bytes(), "é\\0"),
            (b"\xe6\x9d", "\\xe6\\x9d"),
        ];
        for (key, text) in cases {
            assert_eq!(key_text(key), text);
            assert_eq!(parse_key_text(text.as_bytes()).unwrap(), key);
        }
    }

    #[test]
    fn every_byte_string_round_trips() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..5000 {
            let len = (next() % 12) as usize;
            // Mostly the interesting bytes: backslash, controls, ASCII letters, high bytes.
            let alphabet = b"\\\n\r\t\0ax\x7f\xc3\xa9\xff\x80 ";
            let key: Vec<u8> = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let text = key_text(&key);
            assert!(!text.contains(['\n', '\r']), "{text:?}");
            assert_eq!(parse_key_text(text.as_bytes()).unwrap(), key, "{text:?}");
            assert_eq!(key_from_json(&key_json(&key)).unwrap(), key);
        }
    }

    #[test]
    fn bad_escapes_are_named() {
        let err = |s: &[u8]| parse_key_text(s).unwrap_err();
        assert_eq!(
            err(b"ab\\"),
            "a lone backslash ends the key (byte 3); write a backslash as \\\\"
        );
        assert!(err(b"a\\q").starts_with("unknown escape \\q at byte 2"));
        assert!(err(b"\\x4").contains("two hex digits"));
        assert!(err(b"\\x+f").contains("two hex digits"));
        assert_eq!(parse_key_text(b"\\x4A\\x4a").unwrap(), b"JJ");
        // Raw bytes other than the backslash are taken as they are.
        assert_eq!(parse_key_text(b"a\tb\xff").unwrap(), b"a\tb\xff");
    }

    #[test]
    fn line_ends_are_dropped_once() {
        assert_eq!(strip_line_end(b"k\n"), b"k");
        assert_eq!(strip_line_end(b"k\r\n"), b"k");
        assert_eq!(strip_line_end(b"k"), b"k");
        assert_eq!(strip_line_end(b"\n"), b"");
        assert_eq!(strip_line_end(b"k\r"), b"k\r");
    }

    #[test]
    fn json_keys() {
        assert_eq!(key_json(b"a\nb\0"), serde_json::json!("a\nb\u{0}"));
        assert_eq!(key_json(b"\xffA"), serde_json::json!({"hex": "ff41"}));
        assert_eq!(
            key_from_json(&serde_json::json!({"hex": "FF41"})).unwrap(),
            b"\xffA"
        );
        assert_eq!(
            key_from_json(&serde_json::json!(17)).unwrap_err(),
            "must be a string, got a number (keys are text: quote the id, \"17\" rather than 17)"
        );
        assert!(
            key_from_json(&serde_json::json!({"hex": "f"}))
                .unwrap_err()
                .contains("even number")
        );
        assert!(
            key_from_json(&serde_json::json!({"hex": "ff", "x": 1}))
                .unwrap_err()
                .starts_with("must be a string or")
        );
        assert!(
            key_from_json(&serde_json::json!(null))
                .unwrap_err()
                .ends_with("got null")
        );
        let long = "k".repeat(MAX_KEY_LEN + 1);
        assert_eq!(
            key_from_json(&serde_json::json!(long)).unwrap_err(),
            format!(
                "is {} bytes long, at most {MAX_KEY_LEN} allowed",
                MAX_KEY_LEN + 1
            )
        );
        assert!(key_from_json(&serde_json::json!(&long[1..])).is_ok());
        assert!(
            parse_key_text(long.as_bytes())
                .unwrap_err()
                .starts_with("the key is")
        );
    }
}
