//! The names of the files in a database directory (`format/README.md`), and what a name found
//! there is.

pub(crate) const LOCK: &str = "LOCK";
pub(crate) const CURRENT: &str = "CURRENT";
pub(crate) const CURRENT_TMP: &str = "CURRENT.tmp";
pub(crate) const SIGLOG: &str = "signatures.log";

pub(crate) fn manifest_name(generation: u64) -> String {
    format!("MANIFEST-{generation:016x}")
}
pub(crate) fn wal_name(id: u64) -> String {
    format!("wal-{id:016x}.log")
}
pub(crate) fn segment_name(id: u64) -> String {
    format!("seg-{id:016x}.seg")
}
pub(crate) fn deletions_name(id: u64) -> String {
    format!("del-{id:016x}.del")
}

/// What a file name in the database directory is, if mhdb made it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    Manifest(u64),
    Wal(u64),
    Segment(u64),
    Deletions(u64),
    CurrentTmp,
}

pub(crate) fn classify(name: &str) -> Option<FileKind> {
    let hex = |s: &str| {
        (s.len() == 16)
            .then(|| u64::from_str_radix(s, 16).ok())
            .flatten()
    };
    if name == CURRENT_TMP {
        return Some(FileKind::CurrentTmp);
    }
    if let Some(rest) = name.strip_prefix("MANIFEST-") {
        return hex(rest).map(FileKind::Manifest);
    }
    if let Some(rest) = name
        .strip_prefix("wal-")
        .and_then(|r| r.strip_suffix(".log"))
    {
        return hex(rest).map(FileKind::Wal);
    }
    if let Some(rest) = name
        .strip_prefix("seg-")
        .and_then(|r| r.strip_suffix(".seg"))
    {
        return hex(rest).map(FileKind::Segment);
    }
    if let Some(rest) = name
        .strip_prefix("del-")
        .and_then(|r| r.strip_suffix(".del"))
    {
        return hex(rest).map(FileKind::Deletions);
    }
    None
}
