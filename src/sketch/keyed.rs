//! Keyed hashing: a secret key turns the public shingle hash into a pseudo-random function.
//!
//! With a public seed anyone can compute which shingles become minima (or which bits a SimHash
//! gets) and edit a copy until it shares no band key with its original. With a secret key the
//! shingle hash is SipHash-1-3 under a key derived from it, so those choices cannot be
//! predicted. Only the shingle hash changes: every later step (bins, permutations,
//! densification, band keys, SimHash bits) is a public function of shingle hashes that are now
//! secret. The key itself is never stored; a database records its [`KeyFingerprint`] so that
//! opening with the wrong key, or none, is refused. `format/hashing.md` §12 is the spec.

use std::fmt;
use std::path::Path;

use sha2::{Digest, Sha256};
use siphasher::sip::SipHasher13;

use super::spec::SPEC_VERSION;
use crate::{Error, Result};

/// Bytes of a secret key.
pub const KEY_LEN: usize = 32;

/// The environment variable naming a key file, for callers that take the key from the
/// environment ([`SecretKey::from_env`]).
pub const KEY_FILE_ENV: &str = "MHDB_KEY_FILE";

/// Domain-separation label of the key fingerprint (spec §12.2).
const FINGERPRINT_LABEL: &[u8] = b"mhdb-key-fingerprint-1";

/// A 32-byte secret key. Its `Debug` shows the fingerprint, never the key.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretKey {
    bytes: [u8; KEY_LEN],
}

impl SecretKey {
    /// Wraps 32 secret bytes (e.g. from a key store).
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        SecretKey { bytes }
    }

    /// Reads a key file: exactly 32 raw bytes, or exactly 64 hexadecimal digits optionally
    /// followed by one line end (what `openssl rand -hex 32 > FILE` writes).
    pub fn from_file(path: &Path) -> Result<Self> {
        let contents = std::fs::read(path).map_err(Error::io_on(path, "read key file"))?;
        Self::parse(&contents)
            .map_err(|reason| Error::invalid("key file", format!("{}: {reason}", path.display())))
    }

    /// The key from the file named by the `MHDB_KEY_FILE` environment variable; `None` when
    /// the variable is unset or empty.
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var_os(KEY_FILE_ENV) {
            Some(path) if !path.is_empty() => Self::from_file(Path::new(&path)).map(Some),
            _ => Ok(None),
        }
    }

    fn parse(contents: &[u8]) -> std::result::Result<Self, String> {
        if let Ok(bytes) = <[u8; KEY_LEN]>::try_from(contents) {
            return Ok(SecretKey { bytes });
        }
        let text = contents
            .strip_suffix(b"\r\n")
            .or_else(|| contents.strip_suffix(b"\n"))
            .unwrap_or(contents);
        if text.len() != 2 * KEY_LEN {
            return Err(format!(
                "holds {} bytes; a key file is exactly {KEY_LEN} raw bytes or {} hexadecimal \
                 digits (with an optional line end)",
                contents.len(),
                2 * KEY_LEN
            ));
        }
        let mut bytes = [0u8; KEY_LEN];
        for (i, (byte, pair)) in bytes.iter_mut().zip(text.chunks_exact(2)).enumerate() {
            let digit = |c: u8| (c as char).to_digit(16);
            match (digit(pair[0]), digit(pair[1])) {
                (Some(hi), Some(lo)) => *byte = (hi * 16 + lo) as u8,
                _ => {
                    return Err(format!(
                        "character {} or {} is not a hexadecimal digit",
                        2 * i + 1,
                        2 * i + 2
                    ));
                }
            }
        }
        Ok(SecretKey { bytes })
    }

    /// What a database stores in place of the key (spec §12.2).
    pub fn fingerprint(&self) -> KeyFingerprint {
        let mut h = Sha256::new();
        h.update(FINGERPRINT_LABEL);
        h.update([0u8]);
        h.update(self.bytes);
        KeyFingerprint(h.finalize().into())
    }

    /// The keyed shingle hash for signatures named `name` (`oph`, `kperm`, `simhash`) under
    /// user seed `seed` (spec §12.3).
    pub fn shingle_hash(&self, name: &str, seed: u64) -> ShingleHash {
        ShingleHash::Keyed(self.sip_key(name, seed, "shingle"))
    }

    /// The key of the stored set values of a keyed index whose signatures are named `name`
    /// under user seed `seed` (spec §14). It is derived as the shingle key is, under another
    /// label, so that stored values together with the texts they came from tell nothing about
    /// the shingle hashes signatures are made of.
    pub fn set_key(&self, name: &str, seed: u64) -> SipKey {
        self.sip_key(name, seed, "set")
    }

    /// The key words `(k0, k1)` of the exact hash (spec §17) of an index whose signatures are
    /// named `name` under user seed `seed`: derived as the shingle key is, under the label
    /// `exact`, so that exact hashes say nothing about shingle hashes or stored set values.
    pub(crate) fn exact_key(&self, name: &str, seed: u64) -> (u64, u64) {
        self.subkey(name, seed, "exact")
    }

    /// The SipHash key made of the first 16 bytes of [`SecretKey::derive`].
    fn sip_key(&self, name: &str, seed: u64, purpose: &str) -> SipKey {
        let (k0, k1) = self.subkey(name, seed, purpose);
        SipKey::new(k0, k1)
    }

    /// `(k0, k1)`: the first 16 bytes of [`SecretKey::derive`] as two LE u64 words.
    fn subkey(&self, name: &str, seed: u64, purpose: &str) -> (u64, u64) {
        let sub = self.derive(name, seed, purpose);
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&sub[at..at + 8]);
            u64::from_le_bytes(w)
        };
        (word(0), word(8))
    }

    /// `SHA-256("mhdb-spec-<V>/<name>/<purpose>" || 0x00 || LE64(seed) || key)`.
    fn derive(&self, name: &str, seed: u64, purpose: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(format!("mhdb-spec-{SPEC_VERSION}/{name}/{purpose}").as_bytes());
        h.update([0u8]);
        h.update(seed.to_le_bytes());
        h.update(self.bytes);
        h.finalize().into()
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey(fingerprint {})", self.fingerprint().short())
    }
}

/// A SHA-256 hash of a domain-separated key: stored by a keyed database, all zero for an
/// unkeyed one. It identifies the key without revealing it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyFingerprint(pub [u8; 32]);

impl Default for KeyFingerprint {
    /// [`KeyFingerprint::UNKEYED`].
    fn default() -> Self {
        Self::UNKEYED
    }
}

impl KeyFingerprint {
    /// The fingerprint an unkeyed database stores.
    pub const UNKEYED: KeyFingerprint = KeyFingerprint([0; 32]);

    /// The fingerprint of `key`, or [`KeyFingerprint::UNKEYED`] for none.
    pub fn of(key: Option<&SecretKey>) -> Self {
        key.map_or(Self::UNKEYED, SecretKey::fingerprint)
    }

    /// True for [`KeyFingerprint::UNKEYED`].
    pub fn is_unkeyed(&self) -> bool {
        *self == Self::UNKEYED
    }

    /// Checks that `given` is the key a database with fingerprint `self` was created with:
    /// no key for an unkeyed database, the same key for a keyed one. The error says which
    /// case failed, and names the fingerprints (never a key).
    pub fn check(&self, given: Option<&SecretKey>) -> Result<()> {
        let given_fp = KeyFingerprint::of(given);
        if given_fp == *self {
            return Ok(());
        }
        let describe = |fp: &KeyFingerprint| {
            if fp.is_unkeyed() {
                "no key".to_string()
            } else {
                format!("the key with fingerprint {}", fp.short())
            }
        };
        let requested = match given {
            None => format!(
                "no key (the index is keyed: name its key file in {KEY_FILE_ENV}, or pass \
                 the key itself from the library or Python)"
            ),
            Some(_) if self.is_unkeyed() => {
                format!(
                    "{} (the index is unkeyed: open it without a key)",
                    describe(&given_fp)
                )
            }
            Some(_) => format!("{} (a different key)", describe(&given_fp)),
        };
        Err(Error::ParameterMismatch {
            name: "key",
            stored: describe(self),
            requested,
        })
    }

    /// The first 8 bytes in hex: enough to tell keys apart in a message.
    pub fn short(&self) -> String {
        self.0[..8].iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Display for KeyFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for KeyFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyFingerprint({self})")
    }
}

/// How shingle bytes become 64-bit shingle hashes: the public seeded XXH3 of spec §3, or the
/// keyed SipHash-1-3 of spec §12.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShingleHash {
    /// `XXH3_64bits_withSeed(shingle, seed)`.
    Xxh3(u64),
    /// SipHash-1-3 under a key derived from a [`SecretKey`].
    Keyed(SipKey),
}

impl From<u64> for ShingleHash {
    fn from(seed: u64) -> Self {
        ShingleHash::Xxh3(seed)
    }
}

impl ShingleHash {
    /// True for the keyed hash.
    pub fn is_keyed(&self) -> bool {
        matches!(self, ShingleHash::Keyed(_))
    }
}

/// A SipHash-1-3 key derived from a [`SecretKey`]; as secret as the key, so `Debug` hides it.
#[derive(Clone, Copy)]
pub struct SipKey {
    /// The four state words after keying, the same for every message.
    initial: [u64; 4],
    long: SipHasher13,
}

impl SipKey {
    fn new(k0: u64, k1: u64) -> Self {
        SipKey {
            initial: [
                k0 ^ 0x736F_6D65_7073_6575,
                k1 ^ 0x646F_7261_6E64_6F6D,
                k0 ^ 0x6C79_6765_6E65_7261,
                k1 ^ 0x7465_6462_7974_6573,
            ],
            long: SipHasher13::new_with_keys(k0, k1),
        }
    }

    /// SipHash-1-3 of `bytes` under this key.
    #[inline]
    pub fn hash(&self, bytes: &[u8]) -> u64 {
        if bytes.len() < 8 {
            self.hash_short(bytes)
        } else {
            self.long.hash(bytes)
        }
    }

    /// SipHash-1-3 of fewer than 8 bytes: one message word (the bytes, length in the top
    /// byte), one compression round, three finalization rounds. Char 5-grams of ASCII text
    /// all take this path, inlined into the shingle loop (the crate's general path costs about
    /// twice as much there); equal to the crate's result (checked by a test).
    #[inline(always)]
    fn hash_short(&self, bytes: &[u8]) -> u64 {
        let len = bytes.len();
        let read32 = |at: usize| -> u64 {
            let mut b = [0u8; 4];
            if let Some(src) = bytes.get(at..at + 4) {
                b.copy_from_slice(src);
            }
            u64::from(u32::from_le_bytes(b))
        };
        let message = if len >= 4 {
            // Two overlapping reads; the overlapping bytes are equal, so OR joins them.
            read32(0) | (read32(len - 4) << (8 * (len - 4)))
        } else {
            bytes
                .iter()
                .enumerate()
                .fold(0u64, |m, (i, &b)| m | (u64::from(b) << (8 * i)))
        };
        let m = message | ((len as u64) << 56);
        let mut v = self.initial;
        v[3] ^= m;
        sip_round(&mut v);
        v[0] ^= m;
        v[2] ^= 0xFF;
        sip_round(&mut v);
        sip_round(&mut v);
        sip_round(&mut v);
        v[0] ^ v[1] ^ v[2] ^ v[3]
    }
}

/// One SipRound on the state (v0, v1, v2, v3).
#[inline(always)]
fn sip_round(v: &mut [u64; 4]) {
    let [mut v0, mut v1, mut v2, mut v3] = *v;
    v0 = v0.wrapping_add(v1);
    v1 = v1.rotate_left(13) ^ v0;
    v0 = v0.rotate_left(32);
    v2 = v2.wrapping_add(v3);
    v3 = v3.rotate_left(16) ^ v2;
    v0 = v0.wrapping_add(v3);
    v3 = v3.rotate_left(21) ^ v0;
    v2 = v2.wrapping_add(v1);
    v1 = v1.rotate_left(17) ^ v2;
    v2 = v2.rotate_left(32);
    *v = [v0, v1, v2, v3];
}

impl PartialEq for SipKey {
    fn eq(&self, other: &Self) -> bool {
        self.long.keys() == other.long.keys()
    }
}

impl Eq for SipKey {}

impl fmt::Debug for SipKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SipKey(<secret>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_raw_and_hex() {
        let raw: Vec<u8> = (0u8..32).collect();
        let key = SecretKey::parse(&raw).unwrap();
        let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(SecretKey::parse(hex.as_bytes()).unwrap(), key);
        assert_eq!(
            SecretKey::parse(format!("{hex}\n").as_bytes()).unwrap(),
            key
        );
        assert_eq!(
            SecretKey::parse(hex.to_uppercase().as_bytes()).unwrap(),
            key
        );
        assert_eq!(
            SecretKey::parse(format!("{hex}\r\n").as_bytes()).unwrap(),
            key
        );
        let err = SecretKey::parse(&raw[..31]).unwrap_err();
        assert!(err.contains("holds 31 bytes"), "{err}");
        let mut bad = hex.clone().into_bytes();
        bad[10] = b'g';
        let err = SecretKey::parse(&bad).unwrap_err();
        assert!(err.contains("character 11 or 12"), "{err}");
        assert!(SecretKey::parse(format!("{hex}\n\n").as_bytes()).is_err());
    }

    #[test]
    fn debug_never_shows_the_key() {
        let key = SecretKey::from_bytes([0xAB; 32]);
        let shown = format!("{key:?} {:?}", key.shingle_hash("oph", 0));
        assert!(!shown.contains("abab"), "{shown}");
        assert!(shown.contains(&key.fingerprint().short()), "{shown}");
    }

    #[test]
    fn fingerprint_check_names_the_case() {
        let a = SecretKey::from_bytes([1; 32]);
        let b = SecretKey::from_bytes([2; 32]);
        let fa = a.fingerprint();
        assert!(!fa.is_unkeyed());
        assert_ne!(fa, b.fingerprint());
        fa.check(Some(&a)).unwrap();
        KeyFingerprint::UNKEYED.check(None).unwrap();
        let msg = |r: Result<()>| r.unwrap_err().to_string();
        assert!(msg(fa.check(None)).contains("the index is keyed"));
        assert!(msg(fa.check(Some(&b))).contains("a different key"));
        assert!(msg(KeyFingerprint::UNKEYED.check(Some(&a))).contains("the index is unkeyed"));
    }

    #[test]
    fn short_siphash_equals_the_crate() {
        let mut x = 0x0F1E_2D3C_4B5A_6978u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..5_000 {
            let (k0, k1) = (next(), next());
            let key = SipKey::new(k0, k1);
            let crate_hasher = SipHasher13::new_with_keys(k0, k1);
            let mut bytes = [0u8; 16];
            bytes[..8].copy_from_slice(&next().to_le_bytes());
            bytes[8..].copy_from_slice(&next().to_le_bytes());
            for len in 0..=16 {
                let input = &bytes[..len];
                assert_eq!(key.hash(input), crate_hasher.hash(input), "len {len}");
            }
        }
    }

    /// The keyed path hashes exactly the windows the seeded path hashes.
    #[test]
    fn keyed_windows_are_the_seeded_windows() {
        use super::super::shingle::ShingleConfig;
        use xxhash_rust::xxh3::xxh3_64_with_seed;
        let texts = [
            "",
            "a",
            "abcd",
            "abcde",
            "Hello, World  of shingles!",
            "héllo wörld ünïcode",
            "日本語のテキストです",
            "one two",
            "one two three four five",
        ];
        for cfg in [1, 4, 5, 9]
            .map(ShingleConfig::chars)
            .into_iter()
            .chain([1, 3].map(ShingleConfig::words))
        {
            for text in texts {
                let mut norm = String::new();
                cfg.normalize_into(text, &mut norm);
                let (mut seeded, mut windows) = (Vec::new(), Vec::new());
                cfg.for_each_shingle_hash(&norm, 99, |h| seeded.push(h));
                cfg.for_each_shingle(&norm, |s| windows.push(xxh3_64_with_seed(s, 99)));
                assert_eq!(seeded, windows, "{:?} {text:?}", cfg.kind);
            }
        }
    }

    #[test]
    fn keyed_minhash_signatures() {
        use super::super::{MinHasher, Scheme, SketchParams};
        let key = SecretKey::from_bytes([3; 32]);
        let text = "keyed signatures are unpredictable without the key";
        for scheme in [Scheme::Oph, Scheme::KPerm] {
            let params = SketchParams {
                scheme,
                ..SketchParams::default()
            };
            let plain = MinHasher::new(params).unwrap();
            let keyed = MinHasher::new_keyed(params, &key).unwrap();
            assert!(plain.key_fingerprint().is_unkeyed());
            assert_eq!(keyed.key_fingerprint(), key.fingerprint());
            assert_ne!(keyed.sketch_text(text), plain.sketch_text(text));
            assert_eq!(
                keyed.sketch_text(text),
                keyed.sketch_hashes(&keyed.shingle_hashes(text))
            );
            let again = MinHasher::with_key(params, Some(&key)).unwrap();
            assert_eq!(again.sketch_text(text), keyed.sketch_text(text));
            let other = MinHasher::new_keyed(params, &SecretKey::from_bytes([4; 32])).unwrap();
            assert_ne!(other.sketch_text(text), keyed.sketch_text(text));
        }
    }

    #[test]
    fn subkeys_depend_on_name_seed_and_key() {
        let a = SecretKey::from_bytes([1; 32]);
        let b = SecretKey::from_bytes([2; 32]);
        let hash = |k: &SecretKey, name, seed| match k.shingle_hash(name, seed) {
            ShingleHash::Keyed(sip) => sip.hash(b"hello, world"),
            ShingleHash::Xxh3(_) => unreachable!(),
        };
        let base = hash(&a, "oph", 0);
        assert_ne!(base, hash(&b, "oph", 0));
        assert_ne!(base, hash(&a, "kperm", 0));
        assert_ne!(base, hash(&a, "oph", 1));
        assert_eq!(base, hash(&a, "oph", 0));
        // The set key is another key: the label separates it from the shingle key.
        assert_ne!(base, a.set_key("oph", 0).hash(b"hello, world"));
    }
}
