//! The databases a reading command names: one, as it always opened, or several (given one by
//! one, or as glob patterns the shell left unexpanded) opened as shards answering as one
//! index ([`Shards`]).

use std::path::{Path, PathBuf};

use std::sync::Arc;

use mhdb::db::{Db, Options, ReadIndex, Shards};
use mhdb::sketch::SecretKey;
use mhdb::storage::vfs::StdFs;

use super::output::{CliError, CliResult, message};

/// What a command reads: one database, or shards answering as one index, read alike through
/// [`ReadIndex`] (which of the two is decided here, once).
pub struct Databases(Box<dyn ReadIndex>);

impl Databases {
    /// Opens the databases `args` name ([`database_args`]) read-only: one as it always
    /// opened, several as [`Shards`].
    pub fn open(args: &[PathBuf]) -> CliResult<Databases> {
        Self::open_keyed(args, None)
    }

    /// [`Databases::open`] with a keyed index's key (`None`: the library reads the key file
    /// `MHDB_KEY_FILE` names, if any).
    pub fn open_keyed(args: &[PathBuf], key: Option<SecretKey>) -> CliResult<Databases> {
        let source = Self::open_quietly_keyed(args, key)?;
        for db in source.dbs() {
            super::output::report_recovery(db);
        }
        Ok(source)
    }

    /// [`Databases::open`] without the warnings about torn WAL tails (`verify` reports them).
    pub fn open_quietly(args: &[PathBuf]) -> CliResult<Databases> {
        Self::open_quietly_keyed(args, None)
    }

    fn open_quietly_keyed(args: &[PathBuf], key: Option<SecretKey>) -> CliResult<Databases> {
        let mut paths = database_args(args)?;
        let opts = Options {
            key,
            ..Options::default()
        };
        let index: Box<dyn ReadIndex> = if paths.len() == 1 {
            Box::new(Db::open_with_vfs(
                Arc::new(StdFs),
                paths.remove(0),
                opts,
                true,
            )?)
        } else {
            Box::new(Shards::open_many_with_options(&paths, &opts)?)
        };
        Ok(Databases(index))
    }

    /// The database whose parameters answer (a shard set's first).
    pub fn first(&self) -> &Db {
        &self.0.dbs()[0]
    }

    /// The index, for a caller that keeps it (`mhdb serve`).
    pub fn into_index(self) -> Box<dyn ReadIndex> {
        self.0
    }
}

impl std::ops::Deref for Databases {
    type Target = dyn ReadIndex;

    fn deref(&self) -> &Self::Target {
        self.0.as_ref()
    }
}

/// The databases the command line names: each argument as given, or, when no file has that
/// name and it holds a wildcard (`*`, `?`, `[…]`) that the shell left unexpanded (quoted, or
/// a shell that does not expand), the paths it matches, sorted by name. A pattern that
/// matches nothing is an error naming it.
pub fn database_args(args: &[PathBuf]) -> CliResult<Vec<PathBuf>> {
    let mut out = Vec::with_capacity(args.len());
    for arg in args {
        let text = arg.to_string_lossy();
        if arg.exists() || !text.contains(['*', '?', '[']) {
            out.push(arg.clone());
            continue;
        }
        let mut matched = glob(&text);
        if matched.is_empty() {
            return Err(CliError::other(format!("no database matches {text}")));
        }
        matched.sort();
        out.extend(matched);
    }
    Ok(out)
}

/// The directories `pattern` matches (databases are directories), one component at a time; a component with a wildcard lists
/// its directory (names starting with `.` only when the component does too, as shells do).
fn glob(pattern: &str) -> Vec<PathBuf> {
    let absolute = pattern.starts_with('/');
    let mut found = vec![if absolute {
        PathBuf::from("/")
    } else {
        PathBuf::new()
    }];
    for part in pattern.split('/').filter(|p| !p.is_empty()) {
        if !part.contains(['*', '?', '[']) {
            found = found.into_iter().map(|dir| dir.join(part)).collect();
            continue;
        }
        let pattern: Vec<char> = part.chars().collect();
        let mut next = Vec::new();
        for dir in &found {
            let listed = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir.as_path()
            };
            let Ok(entries) = std::fs::read_dir(listed) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') && !part.starts_with('.') {
                    continue;
                }
                let name_chars: Vec<char> = name.chars().collect();
                if wildcard_match(&pattern, &name_chars) {
                    next.push(dir.join(&name));
                }
            }
        }
        found = next;
    }
    found.retain(|p| p.is_dir());
    found
}

/// Whether `name` matches `pattern`: `*` any run of characters, `?` one character, `[…]` one
/// character of a set (ranges `a-z`, negated by a leading `!` or `^`); anything else itself.
fn wildcard_match(pattern: &[char], name: &[char]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some(('*', rest)) => (0..=name.len()).any(|skip| wildcard_match(rest, &name[skip..])),
        Some(('?', rest)) => !name.is_empty() && wildcard_match(rest, &name[1..]),
        Some(('[', rest)) => match (name.split_first(), rest.iter().position(|&c| c == ']')) {
            (Some((&c, tail)), Some(end)) if end > 0 => {
                set_matches(&rest[..end], c) && wildcard_match(&rest[end + 1..], tail)
            }
            // No closing bracket: `[` is itself.
            (Some((&c, tail)), _) => c == '[' && wildcard_match(rest, tail),
            (None, _) => false,
        },
        Some((&p, rest)) => name.first() == Some(&p) && wildcard_match(rest, &name[1..]),
    }
}

/// Whether `c` is in the bracket set `set` (its text between `[` and `]`).
fn set_matches(set: &[char], c: char) -> bool {
    let (negated, set) = match set.split_first() {
        Some(('!' | '^', rest)) if !rest.is_empty() => (true, rest),
        _ => (false, set),
    };
    let mut i = 0;
    let mut found = false;
    while i < set.len() {
        if i + 2 < set.len() && set[i + 1] == '-' {
            found |= set[i] <= c && c <= set[i + 2];
            i += 3;
        } else {
            found |= set[i] == c;
            i += 1;
        }
    }
    found != negated
}

/// Before a command makes a database (create, and the destination of export, merge and
/// upgrade): says on stderr when its identity comes from `MHDB_TEST_IDENTITY`, which makes
/// every database so made share one; a malformed value is refused before anything is written.
pub fn note_test_identity() -> CliResult {
    let (id, source) = mhdb::db::identity_for_new_database(None)?;
    if source == mhdb::db::IdentitySource::Environment {
        message(format_args!(
            "identity {id} from {} (for tests; every database made so shares it)",
            mhdb::db::TEST_IDENTITY_ENV
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::wildcard_match;

    fn matches(pattern: &str, name: &str) -> bool {
        let p: Vec<char> = pattern.chars().collect();
        let n: Vec<char> = name.chars().collect();
        wildcard_match(&p, &n)
    }

    #[test]
    fn wildcards_match_as_a_shell_matches_names() {
        assert!(matches("shard-*", "shard-"));
        assert!(matches("shard-*", "shard-017"));
        assert!(!matches("shard-*", "shards"));
        assert!(matches("*-1?", "part-12"));
        assert!(!matches("*-1?", "part-1"));
        assert!(matches("s[0-3]", "s2") && !matches("s[0-3]", "s4"));
        assert!(matches("s[!0-3]", "s4") && !matches("s[^0-3]", "s1"));
        assert!(matches("s[ab-]", "s-") && matches("s[ab-]", "sb"));
        assert!(matches("a[b", "a[b"), "an unclosed bracket is itself");
        assert!(matches("*.*", "naïve.db") && !matches("*.*", "naive"));
    }
}
