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

/// Where a writer's recovery keeps the bytes it cut from the end of WAL file `wal_id` at
/// `offset`, when they were not all zeros: a write torn by a crash, or damage to the last
/// record, which nothing can tell apart. Kept until a person has looked (`verify` reports it).
pub(crate) fn torn_tail_name(wal_id: u64, offset: u64) -> String {
    format!("{}.torn-{offset}", wal_name(wal_id))
}

/// What a file name in the database directory is, if mhdb made it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    Manifest(u64),
    Wal(u64),
    Segment(u64),
    Deletions(u64),
    CurrentTmp,
    /// Bytes cut from the end of a WAL file: (WAL file id, offset they were cut at).
    TornTail(u64, u64),
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
    if let Some((wal, offset)) = name.split_once(".log.torn-")
        && let Some(FileKind::Wal(id)) = classify(&format!("{wal}.log"))
        && let Ok(offset) = offset.parse::<u64>()
        && name == torn_tail_name(id, offset)
    {
        return Some(FileKind::TornTail(id, offset));
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
